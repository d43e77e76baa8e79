import { Type } from '@sinclair/typebox'
import { Address, HexData } from '../../core/plugin.ts'

const Hash32 = Type.String({ pattern: '^0x[0-9a-fA-F]{64}$' })
const TypeField = Type.Object({ name: Type.String({ maxLength: 64 }), type: Type.String({ maxLength: 64 }) }, { additionalProperties: false })

/**
 * A payment-first `Delegation` as metamask_batch returns it and metamask_execute takes it back:
 * standard `{domain, types, primaryType, message}`, the salt a decimal string, so it passes through
 * JSON and a wallet's sign-typed-data tool unchanged.
 */
export const DelegationTypedDataSchema = Type.Object(
  {
    domain: Type.Object(
      { name: Type.Literal('DelegationManager'), version: Type.Literal('1'), chainId: Type.Integer({ minimum: 1 }), verifyingContract: Address },
      { additionalProperties: false },
    ),
    // Any names here: metamask_execute refuses types other than the DelegationManager's, naming them.
    types: Type.Record(Type.String(), Type.Array(TypeField, { maxItems: 8 }), { additionalProperties: false, maxProperties: 4 }),
    primaryType: Type.Literal('Delegation'),
    message: Type.Object(
      {
        delegate: Address,
        delegator: Address,
        authority: Hash32,
        caveats: Type.Array(Type.Object({ enforcer: Address, terms: HexData }, { additionalProperties: false }), { maxItems: 4 }),
        salt: Type.String({ pattern: '^[0-9]{1,78}$' }),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false, description: 'a MetaMask Delegation to Bruno\'s Runner, EIP-712: sign it unchanged' },
)
