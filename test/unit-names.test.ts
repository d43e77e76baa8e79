import t from 'tap'
import { startDevnetBruno } from './fixtures/devnetBruno.ts'
import { modernHeaders, modernMeta, postRaw } from './fixtures/mcpHttp.ts'

// Issue 15: one unit convention (SPEC §5, Units). Every tool's input and output schema, as
// `tools/list` serves it, is walked field by field:
// - an amount-like field (its name holds amount, value, fee, price, balance, cost, paid, wei or
//   base units) in base units is named for its unit: `…BaseUnits` or `…Wei` (or a Uniswap `…X96`
//   fixed-point number);
// - any other amount-like field is in whole units, and says so: its description says "whole", or
//   its pattern admits a fraction ("12.5");
// - a field named `amount` is always whole units;
// - amounts are decimal strings: an integer field is never described as base units or wei.
// Names fixed by a standard are exempt: a call's fields ({to, value, data}, `value` in wei, and a
// builder's transactionRequest fields: the transaction's own names) and the fields of what a
// wallet signs (`typedData`, EIP-3009's `authorization`, EIP-7702's `authorizationList`).

type Schema = Record<string, any>

const AMOUNT_LIKE = /amount|value|fee|price|balance|cost|paid|wei|baseunits/i
const NAMED_FOR_BASE_UNITS = /baseunits|wei/i
const FIXED_POINT = /X96$/
const SIGNED_AS_IS = new Set(['typedData', 'authorization', 'authorizationList'])

const branches = (schema: Schema): Schema[] => (Array.isArray(schema.anyOf) ? schema.anyOf.flatMap(branches) : [schema])
const typesOf = (schema: Schema): string[] => branches(schema).flatMap((branch) => (Array.isArray(branch.type) ? branch.type : [branch.type]))
const descriptions = (schema: Schema): string => branches(schema).map((branch) => branch.description ?? '').concat(schema.description ?? '').join(' ')
const saysWhole = (schema: Schema) => /whole/i.test(descriptions(schema)) || branches(schema).some((branch) => typeof branch.pattern === 'string' && branch.pattern.includes('\\.'))
const saysBaseUnits = (schema: Schema) => /base units|\bwei\b/i.test(descriptions(schema)) && !/whole/i.test(descriptions(schema))
const integerOnly = (schema: Schema) => branches(schema).some((branch) => branch.pattern === '^[0-9]{1,78}$')

/** Every way a field breaks the rule, as `path: why`. */
export function unitViolations(schema: Schema, path: string): string[] {
  const found: string[] = []
  const visit = (node: Schema, at: string) => {
    for (const branch of branches(node)) {
      if (branch.items) visit(branch.items, `${at}[]`)
      const properties: Record<string, Schema> = branch.properties ?? {}
      const isCall = 'to' in properties && 'data' in properties
      for (const [name, field] of Object.entries(properties)) {
        const where = `${at}.${name}`
        if (SIGNED_AS_IS.has(name) || isCall) continue
        visit(field, where)
        const types = typesOf(field)
        if (types.includes('object') || types.includes('array')) continue
        if (!types.includes('string')) {
          if (saysBaseUnits(field)) found.push(`${where}: an amount in base units as a JSON number (amounts are decimal strings)`)
          continue
        }
        const amountLike = AMOUNT_LIKE.test(name) || saysBaseUnits(field)
        if (!amountLike) continue
        if (NAMED_FOR_BASE_UNITS.test(name)) {
          if (saysWhole(field)) found.push(`${where}: named for base units but described as whole units`)
        } else if (FIXED_POINT.test(name)) {
          continue
        } else if (!saysWhole(field) || saysBaseUnits(field) || integerOnly(field)) {
          found.push(`${where}: ${name === 'amount' ? 'an `amount` that is not whole units' : 'in base units (or unstated) but not named for its unit (…BaseUnits, …Wei)'}`)
        }
      }
    }
  }
  visit(schema, path)
  return found
}

t.test('the rule catches what it names', async (t) => {
  const object = (properties: Schema) => ({ type: 'object', properties })
  const baseUnits = { type: 'string', pattern: '^[0-9]{1,78}$' }
  const whole = { type: 'string', pattern: '^[0-9]{1,40}(\\.[0-9]{1,36})?$', description: 'whole token units, e.g. "12.5"' }
  t.same(unitViolations(object({ amount: baseUnits }), 'x'), ['x.amount: an `amount` that is not whole units'])
  t.same(unitViolations(object({ amount: { type: 'string' } }), 'x'), ['x.amount: an `amount` that is not whole units'], 'an output amount must say it is whole')
  t.same(unitViolations(object({ fee: { type: 'string', description: 'wei the runner paid' } }), 'x'), ['x.fee: in base units (or unstated) but not named for its unit (…BaseUnits, …Wei)'])
  t.same(unitViolations(object({ approvals: { type: 'array', items: object({ amount: baseUnits }) } }), 'x'), ['x.approvals[].amount: an `amount` that is not whole units'])
  t.same(unitViolations(object({ paid: { type: 'integer', description: 'base units the payee received' } }), 'x'), ['x.paid: an amount in base units as a JSON number (amounts are decimal strings)'])
  t.same(unitViolations(object({ amountBaseUnits: whole }), 'x'), ['x.amountBaseUnits: named for base units but described as whole units'])
  t.same(unitViolations(object({ amount: whole, amountBaseUnits: baseUnits, feeWei: baseUnits, calls: { type: 'array', items: object({ to: {}, value: baseUnits, data: {}, gasPrice: baseUnits }) } }), 'x'), [])
})

t.test('every tool of a real tools/list names its amounts for their unit', async (t) => {
  const bruno = await startDevnetBruno(t, { groups: ['bruno', 'calibur', '3009', 'erc20', 'uniswap'] })
  const reply = await postRaw(bruno.mcpUrl, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: modernMeta() } }, modernHeaders('tools/list'))
  const tools = reply.json.result.tools as { name: string; inputSchema: Schema; outputSchema: Schema }[]
  t.equal(tools.length, 14, 'every group\'s tools are walked')
  let amounts = 0
  for (const tool of tools) {
    for (const [kind, schema] of [['input', tool.inputSchema], ['output', tool.outputSchema]] as const) {
      t.same(unitViolations(schema, `${tool.name} ${kind}`), [], `${tool.name} ${kind}: every amount named for its unit`)
      amounts += JSON.stringify(schema).match(/"amount[A-Za-z]*"/g)?.length ?? 0
    }
  }
  t.ok(amounts >= 20, `the walk met the amounts (${amounts} amount fields)`)
})
