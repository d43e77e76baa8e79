import { Type, type Static } from '@sinclair/typebox'

/** Shapes every group shares. One schema per shape: it validates and it is what we publish. */

export const Address = Type.String({ pattern: '^0x[0-9a-fA-F]{40}$', description: '0x-prefixed 20-byte address' })

export const HexData = Type.String({ pattern: '^0x([0-9a-fA-F]{2})*$', maxLength: 262_146, description: '0x-prefixed bytes' })

/** A non-negative integer in base units, as a decimal string (JSON numbers lose precision past 2^53). */
export const BaseUnits = Type.String({ pattern: '^[0-9]{1,78}$', description: 'integer amount in base units (wei, or the token\'s smallest unit), decimal string' })

/** A token amount in whole units as people write it (`"12.5"` USDC). */
export const TokenAmount = Type.String({ pattern: '^[0-9]{1,40}(\\.[0-9]{1,36})?$', description: 'amount in whole token units, e.g. "12.5"' })

/** A token named by its configured symbol (any case) or by address. */
export const TokenArgument = Type.String({ minLength: 1, maxLength: 42, description: 'a configured token symbol (e.g. "USDC") or a token address' })

/** One call an account makes: the shape every helper returns and `calibur_batch` takes. */
export const Call = Type.Object(
  {
    to: Address,
    value: BaseUnits,
    data: HexData,
  },
  { additionalProperties: false, description: 'a call the account makes: target, wei sent, calldata' },
)

export const Calls = Type.Array(Call, { description: 'calls for the account to make, in order' })

export type Call = Static<typeof Call>

/** A token as a tool resolved it, so a model can read which token its call touches. */
export const TokenInfo = Type.Object(
  {
    address: Address,
    symbol: Type.Optional(Type.String({ description: 'the configured symbol; absent for a token the config does not list' })),
    decimals: Type.Integer({ minimum: 0, maximum: 255, description: 'the token\'s decimals: from the config, else read from the token' }),
  },
  { additionalProperties: false, description: 'the token, resolved' },
)

/** An allowance an account's calls need: what a swap helper returns and `calibur_batch` takes. */
export const Approval = Type.Object(
  {
    token: Address,
    spender: Address,
    amount: BaseUnits,
  },
  { additionalProperties: false, description: 'the account must let `spender` move at least `amount` (base units) of `token` before the calls run' },
)

export const Approvals = Type.Array(Approval, { description: 'allowances the account must have granted, one per token and spender' })

export type TokenInfo = Static<typeof TokenInfo>
export type Approval = Static<typeof Approval>
