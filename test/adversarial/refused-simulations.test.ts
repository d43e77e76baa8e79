import t from 'tap'
import { encodeFunctionData, erc20Abi, type Hex } from 'viem'
import { generatePrivateKey } from 'viem/accounts'
import { startDevnetBruno } from '../fixtures/devnetBruno.ts'
import { RawMcpClient } from '../fixtures/mcpHttp.ts'
import { waitFor } from '../fixtures/waitFor.ts'
import { adversaryChain, compileAdversary, fundedPayer, transferPayment } from './adversary.ts'

// Issue 27, point 5: every submit simulates the caller's call at relay.maxCallGas before anything is stored, and a
// refused one cost its client nothing: 60 refused 12M-gas submits at once made a legitimate submission take 3.9-5.4 s
// (185 ms idle). Now each client may have relay.admission.simulations.atOnce quotes or submits simulated at once (the
// next is refused at once), and once its refused ones ran refusedGasPerMinute gas (a refusal before any measure
// counts maxCallGas) it is refused before simulating until that gas is a minute old. Clients are told apart by
// X-Forwarded-For (server.trustProxy: 1, one proxy in front), as behind a load balancer; every request also carries
// entries of the client's own forging before the proxy's, which must not split one client into many (issue 28, point 3).

// The devnet lifts the bound (one developer on loopback): the defaults a deployment gets are set back here.
const bruno = await startDevnetBruno(t, {
  groups: ['bruno'],
  pollMs: 100,
  configure: (config) => {
    const [network] = config.networks
    const admission = { ...network!.relay.admission, simulations: { atOnce: 4, refusedGasPerMinute: 60_000_000 } }
    return { ...config, server: { ...config.server, trustProxy: 1 }, networks: [{ ...network!, relay: { ...network!.relay, admission } }] }
  },
})
const { deployment } = bruno
const chain = adversaryChain(bruno)
const mcp = new RawMcpClient(`${bruno.mcpUrl}/bruno`)
const { maxCallGas, admission } = bruno.config.networks[0]!.relay
const { atOnce, refusedGasPerMinute } = admission.simulations
// The most refusals that can be under way or counted before the budget closes: atOnce running, and fewer than
// refusedGasPerMinute / maxCallGas counted when the last of them entered.
const MOST_SIMULATED = atOnce + Math.ceil(refusedGasPerMinute / maxCallGas) - 1
const gasSink = await chain.deploy(compileAdversary().GasSink)
const key = generatePrivateKey()
const payer = await fundedPayer(bruno, chain, key, 1_000_000_000n)
// A call that burns every unit it is given, then fails: refused at submit, after the node ran it at maxCallGas.
const bomb = { to: gasSink, data: '0xdeadbeef' as Hex }

let forgeries = 0
async function post(path: string, body: unknown, client: string): Promise<{ status: number; json: any }> {
  // What the client forged, then what the proxy appends: the address it saw.
  const forged = `10.${forgeries % 256}.${(forgeries++ >> 8) % 256}.1`
  const response = await fetch(`${bruno.server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-for': `${forged}, ${client}` }, body: JSON.stringify(body) })
  return { status: response.status, json: await response.json() }
}

const simulations = () => bruno.proxy.forwarded.get('eth_call') + bruno.proxy.forwarded.get('eth_estimateGas')
const AT_ONCE = /^refused: the client 203\.0\.113\.66 has \d+ quotes or submits being simulated, the most it may have at once: wait for their answers$/
const BUDGET = new RegExp(
  `^refused: the client 203\\.0\\.113\\.66's refused quotes and submits ran (\\d+) gas on the node in the last 60 s, the most this relay simulates for refusals: ` +
    'try again after (\\S+Z), with a call that succeeds and a payment that covers it$',
)

t.test(`60 heavy submits at once from one client: at most ${MOST_SIMULATED} simulated, the rest refused before the node runs them`, async (t) => {
  const payments = await Promise.all(Array.from({ length: 60 }, () => transferPayment(bruno, key, 1_000_000n)))
  bruno.proxy.reset()
  const answers = await Promise.all(payments.map((payment) => post('/local/v1/submit', { call: bomb, payment }, '203.0.113.66')))
  t.ok(answers.every(({ status }) => status === 422), 'all 60 refused (422)')
  const messages = answers.map(({ json }) => json.error.message as string)
  const simulated = messages.filter((message) => !AT_ONCE.test(message) && !BUDGET.test(message))
  t.ok(simulated.length >= 1 && simulated.length <= MOST_SIMULATED, `${simulated.length} simulated and refused for their call`)
  t.ok(simulated.every((message) => /call/.test(message)), `each for its call: ${simulated[0]}`)
  t.equal(messages.filter((message) => AT_ONCE.test(message)).length + messages.filter((message) => BUDGET.test(message)).length, 60 - simulated.length, 'the rest refused by the bound')
  const perSubmit = simulated.length === 0 ? 0 : simulations() / simulated.length
  t.comment(`node simulations: ${simulations()} for ${simulated.length} simulated submits (${perSubmit.toFixed(1)} each); without the bound, 60 × that`)

  const after = await post('/local/v1/submit', { call: bomb, payment: await transferPayment(bruno, key, 1_000_000n) }, '203.0.113.66')
  const budget = BUDGET.exec(after.json.error.message)
  t.ok(budget, `the next is refused by the spent budget: ${after.json.error.message}`)
  t.ok(BigInt(budget![1]!) >= BigInt(refusedGasPerMinute), 'at least refusedGasPerMinute counted')
  const until = Date.parse(budget![2]!)
  t.ok(until > Date.now() && until <= Date.now() + 60_000, 'until within the minute')
  const before = simulations()
  const quoted = await post('/local/v1/quote', { call: bomb, token: 'USDC' }, '203.0.113.66')
  t.match(quoted.json.error.message, BUDGET, 'a quote shares the bound')
  t.equal(simulations(), before, 'and reaches no node')

  // Each refusal counted under its reason. How many of the 60 overlapped (the at-once bound) and how many
  // met the spent budget depends on how the machine scheduled them; the counts must match the answers either way.
  const metrics = await (await fetch(`${bruno.server.url}/metrics`)).text()
  const counted = (reason: string) => Number(metrics.split('\n').find((candidate) => candidate.startsWith(`bruno_admission_refusals_total{chain="local",reason="${reason}"}`))?.split(' ').at(-1) ?? 0)
  const atOnce = messages.filter((message) => AT_ONCE.test(message)).length
  t.equal(counted('client_simulating'), atOnce, `/metrics counts client_simulating: the ${atOnce} refused while others ran`)
  t.equal(counted('client_refused_gas'), 60 - simulated.length - atOnce + 2, '/metrics counts client_refused_gas: the rest of the 60, the next submit and the quote')
})

t.test('another client meanwhile: quoted, accepted and done, its runner transaction paid', async (t) => {
  const call = { to: deployment.usdc, data: encodeFunctionData({ abi: erc20Abi, functionName: 'balanceOf', args: [payer.address] }) }
  const started = Date.now()
  const burst = Promise.all(Array.from({ length: 30 }, async () => post('/local/v1/submit', { call: bomb, payment: await transferPayment(bruno, key, 1_000_000n) }, '203.0.113.66')))
  const quote = await post('/local/v1/quote', { call, token: 'USDC' }, '198.51.100.7')
  t.equal(quote.status, 200)
  const submitted = await post('/local/v1/submit', { call, payment: await transferPayment(bruno, key, BigInt(quote.json.amountBaseUnits)) }, '198.51.100.7')
  t.equal(submitted.status, 202, 'accepted')
  t.comment(`the other client's quote and submit answered in ${Date.now() - started} ms beside a burst of 30 from the bounded one`)
  t.ok((await burst).every(({ status, json }) => status === 422 && BUDGET.test(json.error.message)), 'the bounded client\'s burst refused before simulating')
  const view = await waitFor(() => mcp.call('status', { id: submitted.json.id }), (view: any) => view.stage === 'done' || view.stage === 'failed', 'done', 15_000, 50)
  t.equal(view.stage, 'done')
})
