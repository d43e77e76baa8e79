import { Type, type Static, type TObject, type TSchema } from '@sinclair/typebox'

/**
 * Shapes every group shares. One schema per shape: it validates and it is what we publish. The
 * primitives carry no description (they are in every schema): the served instructions' preamble
 * names their formats once.
 */

export const Address = Type.String({ pattern: '^0x[0-9a-fA-F]{40}$' })

export const HexData = Type.String({ pattern: '^0x([0-9a-fA-F]{2})*$', maxLength: 262_146 })

/**
 * A shared schema with a field's own description. Typed as the schema: a spread's own type names
 * TypeBox's symbol keys, which a declaration file cannot.
 *
 * @example
 * described(BaseUnits, 'what the runner paid for gas')
 */
export const described = <T extends TSchema>(schema: T, description: string): T => ({ ...schema, description })

/** The keyword under which a schema carries the form `tools/list` publishes in its place (core/registry.ts). */
export const PUBLISHED_AS = 'x-published-as'

/** The same, for a result's field (`sameShapeAs`): inputs and outputs are published apart. */
export const PUBLISHED_AS_OUTPUT = 'x-published-as-output'

/**
 * An argument a tool takes back unchanged from another tool's result (typed data, returned with
 * its signature): validated in full, but published as an open object naming where it comes from,
 * since that tool's `outputSchema` already describes it: `tools/list` carries the shape once.
 *
 * @example
 * passedBack(CaliburTypedDataSchema, "calibur_batch's typedData") // published: { type: 'object', required: […], description: "calibur_batch's typedData, unchanged" }
 */
export function passedBack<T extends TObject>(schema: T, from: string): T {
  return { ...schema, [PUBLISHED_AS]: { type: 'object', required: schema.required, description: `${from}, unchanged` } }
}

/**
 * A result's field with the shape of another of its fields (two typed data to sign): validated in
 * full, but published as an open object naming that field, so `tools/list` carries the shape once.
 *
 * @example
 * sameShapeAs(CaliburTypedDataSchema, 'typedData', 'the payment-only batch') // published: { type: 'object', required: […], description: 'the payment-only batch, in the shape of typedData' }
 */
export function sameShapeAs<T extends TObject>(schema: T, field: string, description: string): T {
  return { ...schema, [PUBLISHED_AS_OUTPUT]: { type: 'object', required: schema.required, description: `${description}, in the shape of ${field}` } }
}

/**
 * Typed data a tool returns for a wallet to sign unchanged: validated in full, but published as an
 * open object named by `description` — the wallet reads its fields, not the agent, and the group's
 * instructions say its shape — so `tools/list` does not carry EIP-712's nesting for every tool that
 * returns some (issue 49, point 4).
 *
 * @example
 * signedUnchanged(CaliburTypedDataSchema, 'the calls batch, EIP-712: sign both unchanged') // published: { type: 'object', required: […], description: 'the calls batch, …' }
 */
export function signedUnchanged<T extends TObject>(schema: T, description: string): T {
  return { ...schema, description, [PUBLISHED_AS_OUTPUT]: { type: 'object', required: schema.required, description } }
}

// A non-negative integer as a decimal string: JSON numbers lose precision past 2^53.
const decimalInteger = (options: { description?: string } = {}) => Type.String({ pattern: '^[0-9]{1,78}$', ...options })

/**
 * An amount in base units (a token's smallest unit; wei for ETH). A field of it is named for its
 * unit, `…BaseUnits` or `…Wei` (SPEC §5, Units): a plain `amount` is always whole units.
 */
export const BaseUnits = decimalInteger()

/** A quantity of gas, decimal. */
export const GasUnits = decimalInteger()

/** A block number, decimal. */
export const BlockNumber = decimalInteger()

/** A nonce signed as a uint256 (a delegate's batch nonce), decimal. */
export const Nonce = decimalInteger()

/** A time signed as a uint256 (a typed-data deadline, EIP-3009's validAfter and validBefore), decimal. */
export const UnixSecondsDecimal = decimalInteger({ description: 'unix seconds' })

/** A time as a JSON integer. */
export const UnixSeconds = Type.Integer({ minimum: 0, description: 'unix seconds' })

/** A token amount in whole units as people write it (`"12.5"` USDC): what every `amount` an agent types is. */
export const TokenAmount = Type.String({ pattern: '^[0-9]{1,40}(\\.[0-9]{1,36})?$', description: 'whole token units, e.g. "12.5"' })

/** A token named by its configured symbol (any case) or by address: the preamble says so once, for every `token`. */
export const TokenArgument = Type.String({ minLength: 1, maxLength: 42 })

/** One call an account makes: the shape every helper returns and a delegate group's batch tool takes. */
export const Call = Type.Object(
  {
    to: Address,
    value: BaseUnits,
    data: HexData,
  },
  { additionalProperties: false },
)

export const Calls = Type.Array(Call)

export type Call = Static<typeof Call>

/** A token as a tool resolved it, so a model can read which token its call touches. */
export const TokenInfo = Type.Object(
  {
    address: Address,
    symbol: Type.Optional(Type.String()),
    decimals: Type.Integer({ minimum: 0, maximum: 255 }),
  },
  { additionalProperties: false },
)

/**
 * An allowance an account's calls need: what a swap helper returns and a delegate group's batch tool takes. In
 * base units, since it is copied from one tool's result into another's arguments, not typed.
 */
export const Approval = Type.Object(
  {
    token: Address,
    spender: Address,
    amountBaseUnits: BaseUnits,
  },
  { additionalProperties: false },
)

export const Approvals = Type.Array(Approval)

/** An allowance as a delegate group's batch tool takes it: an `Approval` whose token may be named by its configured symbol too. */
export const ApprovalRequest = Type.Object(
  {
    token: TokenArgument,
    spender: Address,
    amountBaseUnits: BaseUnits,
  },
  { additionalProperties: false },
)

export type TokenInfo = Static<typeof TokenInfo>
export type Approval = Static<typeof Approval>
