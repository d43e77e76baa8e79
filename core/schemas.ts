import { Type, type Static } from '@sinclair/typebox'

/**
 * Shapes every group shares. One schema per shape: it validates and it is what we publish. The
 * primitives carry no description (they are in every schema): the served instructions' preamble
 * names their formats once.
 */

export const Address = Type.String({ pattern: '^0x[0-9a-fA-F]{40}$' })

export const HexData = Type.String({ pattern: '^0x([0-9a-fA-F]{2})*$', maxLength: 262_146 })

/** A non-negative integer in base units, as a decimal string (JSON numbers lose precision past 2^53). */
export const BaseUnits = Type.String({ pattern: '^[0-9]{1,78}$' })

/** A token amount in whole units as people write it (`"12.5"` USDC). */
export const TokenAmount = Type.String({ pattern: '^[0-9]{1,40}(\\.[0-9]{1,36})?$', description: 'whole token units, e.g. "12.5"' })

/** A token named by its configured symbol (any case) or by address. */
export const TokenArgument = Type.String({ minLength: 1, maxLength: 42, description: 'symbol (e.g. "USDC") or address' })

/** One call an account makes: the shape every helper returns and `calibur_batch` takes. */
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

/** An allowance an account's calls need: what a swap helper returns and `calibur_batch` takes. */
export const Approval = Type.Object(
  {
    token: Address,
    spender: Address,
    amount: BaseUnits,
  },
  { additionalProperties: false },
)

export const Approvals = Type.Array(Approval)

export type TokenInfo = Static<typeof TokenInfo>
export type Approval = Static<typeof Approval>
