import { Type, type Static } from '@sinclair/typebox'
import { Address, BaseUnits, HexData } from '../schemas.ts'

/**
 * The relay's shapes, shared by REST, JSON-RPC and MCP: each transport validates with these and
 * publishes these. One schema per shape.
 */

const Hash32 = Type.String({ pattern: '^0x[0-9a-fA-F]{64}$', description: '0x-prefixed 32 bytes' })

/** The call the runner makes: always value 0 (the runner never spends its own ETH as call value). */
export const RelayCall = Type.Object(
  {
    to: Address,
    data: HexData,
    value: Type.Optional(Type.Literal('0', { description: 'must be "0" when given: the runner sends no ETH with a call' })),
  },
  { additionalProperties: false, description: 'the call Bruno\'s runner makes (for a Calibur batch: what calibur_execute returns)' },
)

/** A signed EIP-7702 authorization, as wallets and viem produce it. */
export const SignedAuthorization = Type.Object(
  {
    chainId: Type.Integer({ minimum: 0 }),
    address: Address,
    nonce: Type.Integer({ minimum: 0 }),
    r: Hash32,
    s: Hash32,
    yParity: Type.Union([Type.Literal(0), Type.Literal(1)]),
  },
  { additionalProperties: false, description: 'a signed EIP-7702 authorization: the account delegates to `address`' },
)

export const AuthorizationList = Type.Array(SignedAuthorization, {
  maxItems: 4,
  description: 'EIP-7702 authorizations sent with the call, in the same transaction (e.g. to delegate an account to Calibur first)',
})

/** A delegate's signed batch pays: its first call transfers `amount` of `token` to the payee, before the account's own calls. */
export const CallPayment = Type.Object(
  {
    token: Address,
    amount: BaseUnits,
  },
  {
    additionalProperties: false,
    description: 'the call is a delegate batch (calibur_execute\'s `call`) whose first call pays the payee `amount` of `token`; no other call may pay this way',
  },
)

/** A signed EIP-3009 transferWithAuthorization to the payee, made by the runner before the call. */
export const SignedTransferPayment = Type.Object(
  {
    token: Address,
    authorization: Type.Object(
      {
        from: Address,
        to: Address,
        value: BaseUnits,
        validAfter: BaseUnits,
        validBefore: BaseUnits,
        nonce: Hash32,
      },
      { additionalProperties: false, description: 'the TransferWithAuthorization message, as signed' },
    ),
    signature: Type.String({ pattern: '^0x[0-9a-fA-F]{130}$', description: '65-byte signature (r‖s‖v) of the typed data' }),
  },
  { additionalProperties: false, description: 'a signed EIP-3009 transfer of `token` to the payee (payment_authorization prepares it)' },
)

export const Payment = Type.Union([CallPayment, SignedTransferPayment])

export const QuoteRequest = Type.Object(
  {
    call: RelayCall,
    authorizationList: Type.Optional(AuthorizationList),
    token: Type.String({ minLength: 1, maxLength: 42, description: 'the token to pay in: a configured symbol or its address' }),
    payment: Type.Optional(
      Type.Union([Type.Literal('authorization'), Type.Literal('batch')], {
        description: 'how it will be paid: "authorization" (default), a signed EIP-3009 transfer then `call`; "batch", `call` is a signed delegate batch that pays first',
      }),
    ),
  },
  { additionalProperties: false },
)

export const Quote = Type.Object(
  {
    token: Address,
    symbol: Type.String(),
    amount: BaseUnits,
    amountFormatted: Type.String({ description: 'amount in whole token units' }),
    payee: Address,
    validUntil: Type.Integer({ description: 'unix seconds after which the price may no longer be accepted' }),
    gas: BaseUnits,
    feePerGas: BaseUnits,
    costWei: BaseUnits,
  },
  { additionalProperties: false },
)

export const SubmitRequest = Type.Object(
  {
    call: RelayCall,
    authorizationList: Type.Optional(AuthorizationList),
    payment: Payment,
    deadline: Type.Optional(Type.Integer({ minimum: 0, description: 'unix seconds: not sent after this (default: now + the configured submission ttl)' })),
  },
  { additionalProperties: false },
)

export const Stage = Type.Union([
  Type.Literal('waiting'),
  Type.Literal('sending'),
  Type.Literal('confirming'),
  Type.Literal('done'),
  Type.Literal('failed'),
])

/** What an included runner transaction did: the payment is taken first, whatever the call then does. */
export const RelayOutcome = Type.Object(
  {
    // Typed as BaseUnits: the spread's own type names TypeBox's symbol keys, which a declaration file cannot.
    paid: { ...BaseUnits, description: 'what the payee received, in the payment token\'s base units' } as typeof BaseUnits,
    callSucceeded: Type.Boolean({ description: 'false: the call failed on chain, and the payment was still taken' }),
    callReason: Type.Optional(Type.String({ description: 'why the call failed' })),
  },
  { additionalProperties: false, description: 'set once the transaction is included' },
)

export const SubmissionView = Type.Object(
  {
    id: Type.String(),
    chain: Type.String(),
    stage: Stage,
    createdAt: Type.Integer({ description: 'unix ms' }),
    updatedAt: Type.Integer({ description: 'unix ms of the last change of stage, transaction or reason' }),
    deadline: Type.Integer({ description: 'unix seconds' }),
    transaction: Type.Optional(
      Type.Object(
        {
          hash: Hash32,
          nonce: Type.Integer(),
          blockNumber: Type.Optional(BaseUnits),
          gasUsed: Type.Optional(BaseUnits),
          fee: Type.Optional(Type.String({ description: 'wei the runner paid' })),
        },
        { additionalProperties: false },
      ),
    ),
    reason: Type.Optional(Type.String({ description: 'why it failed, why it is still waiting, or why its call failed on chain' })),
    outcome: Type.Optional(RelayOutcome),
  },
  { additionalProperties: false },
)

export const AccountView = Type.Object(
  {
    address: Address,
    delegated: Type.Boolean(),
    delegate: Type.Optional(Address),
    isCalibur: Type.Boolean(),
    caliburNonce: Type.Optional(Type.String({ description: 'the signed-batch nonce to use next (key 0): decimal' })),
    nonce: Type.Integer({ description: 'the account\'s EOA transaction count' }),
    eth: BaseUnits,
    tokens: Type.Array(
      Type.Object({ symbol: Type.String(), address: Address, balance: BaseUnits, formatted: Type.String() }, { additionalProperties: false }),
    ),
  },
  { additionalProperties: false },
)

export type RelayCall = Static<typeof RelayCall>
export type SignedAuthorization = Static<typeof SignedAuthorization>
export type CallPayment = Static<typeof CallPayment>
export type SignedTransferPayment = Static<typeof SignedTransferPayment>
export type Payment = Static<typeof Payment>
export type QuoteRequest = Static<typeof QuoteRequest>
export type Quote = Static<typeof Quote>
export type SubmitRequest = Static<typeof SubmitRequest>
export type Stage = Static<typeof Stage>
export type SubmissionView = Static<typeof SubmissionView>
export type RelayOutcome = Static<typeof RelayOutcome>
export type AccountView = Static<typeof AccountView>
