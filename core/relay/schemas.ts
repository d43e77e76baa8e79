import { Type, type Static } from '@sinclair/typebox'
import { Address, BaseUnits, BlockNumber, described, GasUnits, HexData, passedBack, PUBLISHED_AS, PUBLISHED_AS_OUTPUT, TokenAmount, TokenArgument, UnixSeconds, UnixSecondsDecimal } from '../tool/schemas.ts'

/**
 * The relay's shapes, shared by REST, JSON-RPC and MCP: each transport validates with these and
 * publishes these. One schema per shape.
 */

const Hash32 = Type.String({ pattern: '^0x[0-9a-fA-F]{64}$' })

/** The call the runner makes: always value 0 (the runner never spends its own ETH as call value). */
export const RelayCall = Type.Object(
  {
    to: Address,
    data: HexData,
    value: Type.Optional(Type.Literal('0')),
  },
  { additionalProperties: false, description: 'the call Bruno\'s Runner makes' },
)

/**
 * An authorization's `v` as a caller may send it: viem's `signAuthorization` returns `v` as a
 * bigint (27n/28n) beside `yParity`, which reaches JSON as a number or a string (decimal or hex).
 * Only 27/28 and 0/1 are accepted; each names a y parity.
 */
const vOf = (parity: 0 | 1) => {
  const legacy = 27 + parity
  return Type.Union([
    Type.Literal(parity),
    Type.Literal(legacy),
    Type.String({ pattern: `^(${parity}|${legacy}|${parity === 0 ? '0x0+' : '0x0*1'}|0x0*1[${parity === 0 ? 'bB' : 'cC'}])$` }),
  ])
}
const V0 = vOf(0)
const V1 = vOf(1)

// JSON numbers are exact only up to 2⁵³ − 1: a chain id or an EOA nonce above it is no real one.
const authorizationFields = {
  chainId: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }),
  address: Address,
  nonce: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }),
  r: Hash32,
  s: Hash32,
}
const authorizationOptions = { additionalProperties: false } as const

/**
 * A signed EIP-7702 authorization, as wallets and viem produce it: `yParity` (0 or 1), `v` (27/28
 * or 0/1, a number or a decimal or hex string: viem's bigint `v` once serialized), or both when
 * they agree. A `v` and a `yParity` that disagree match no branch and are refused.
 */
export const SignedAuthorization = Type.Union(
  [
    Type.Object({ ...authorizationFields, yParity: Type.Literal(0), v: Type.Optional(V0) }, authorizationOptions),
    Type.Object({ ...authorizationFields, yParity: Type.Literal(1), v: Type.Optional(V1) }, authorizationOptions),
    Type.Object({ ...authorizationFields, v: Type.Union([V0, V1]) }, authorizationOptions),
  ],
)

/**
 * An authorization's y parity, from `yParity` or else from `v`.
 *
 * @example
 * yParityOf({ chainId: 1, address, nonce: 0, r, s, v: '28' }) // 1
 */
export function yParityOf(authorization: SignedAuthorization): 0 | 1 {
  if ('yParity' in authorization && authorization.yParity !== undefined) return authorization.yParity
  const v = Number(authorization.v)
  return v === 1 || v === 28 ? 1 : 0
}

export const AuthorizationList = Type.Array(SignedAuthorization, {
  minItems: 1,
  maxItems: 4,
  description: 'signed EIP-7702 authorizations, sent in the same transaction',
})

/**
 * A delegate tool's `authorizationList` (an argument, or its result's): validated as
 * `AuthorizationList` in full, published as an array whose items are described once, by `quote`'s
 * and `submit`'s own, so that `tools/list` carries the authorization's shape once.
 *
 * @example
 * authorizationListAs("the account's, to Calibur, if not yet delegated", 1)
 */
export function authorizationListAs(description: string, maxItems = 4): typeof AuthorizationList {
  const published = { type: 'array', minItems: 1, maxItems, description: `${description}; each item as submit's authorizationList` }
  return { ...AuthorizationList, maxItems, description, [PUBLISHED_AS]: published, [PUBLISHED_AS_OUTPUT]: published }
}

/**
 * A delegate's signed payment-only batch pays: `batch`, calldata to the account (`call.to`) that
 * transfers `amountBaseUnits` of `token` to the payee and nothing else. The Runner runs it in a call
 * of its own before the account's batch of its own calls (`call`), so nothing those calls do can
 * undo it. Copied from the result of the delegate group's execute tool.
 */
export const CallPayment = Type.Object(
  {
    // A configured symbol or an address, as every `token` (the preamble says so once); submit keeps the address.
    token: TokenArgument,
    amountBaseUnits: BaseUnits,
    batch: described(HexData, 'the signed payment-only batch'),
  },
  {
    additionalProperties: false,
    title: 'a batch payment',
    description: 'a delegate execute tool\'s payment',
  },
)

/** EIP-3009's TransferWithAuthorization message, under its own names (`value` in base units). */
export const TransferAuthorizationMessage = Type.Object(
  {
    from: Address,
    to: Address,
    value: BaseUnits,
    validAfter: UnixSecondsDecimal,
    validBefore: UnixSecondsDecimal,
    nonce: Hash32,
  },
  { additionalProperties: false },
)

/** The most bytes a payment's signature may have: a smart wallet's (a passkey's WebAuthn signature is ≈ 800), with an ERC-6492 wrapper around it. */
export const MAX_PAYMENT_SIGNATURE_BYTES = 4_096

/**
 * The payer's signature of a signed transfer: 65 bytes (r ‖ s ‖ v) from an account's own key, or a
 * smart wallet's ERC-1271 signature, ERC-6492-wrapped while the wallet is not deployed. What else
 * makes a 65-byte one valid (v 27/28 or 0/1, r and s in range) submit says in words (readSignature);
 * a wallet's the token checks, in the simulation.
 */
export const PaymentSignature = Type.String({
  pattern: `^0x(?:[0-9a-fA-F]{2}){65,${MAX_PAYMENT_SIGNATURE_BYTES}}$`,
  description: 'the wallet\'s signature, as it returned it',
})

/**
 * A signed EIP-3009 transferWithAuthorization to the payee, made by the runner before the call:
 * payment_authorization's `payment`, and the wallet's signature of its typed data.
 */
export const SignedTransferPayment = Type.Object(
  {
    // A configured symbol or an address, as every `token` (the preamble says so once); submit keeps the address.
    token: TokenArgument,
    authorization: passedBack(TransferAuthorizationMessage, 'payment_authorization\'s payment.authorization'),
    signature: PaymentSignature,
  },
  { additionalProperties: false, title: 'a signed transfer', description: 'payment_authorization\'s payment, signed' },
)

export const Payment = Type.Union([CallPayment, SignedTransferPayment])

export const QuoteRequest = Type.Object(
  {
    call: RelayCall,
    authorizationList: Type.Optional(authorizationListAs('as submit takes them')),
    token: Type.String({ minLength: 1, maxLength: 42, description: 'the token to pay in' }),
    payment: Type.Optional(
      Type.Union([Type.Literal('authorization'), Type.Literal('batch')], { description: 'default "authorization"' }),
    ),
    paymentBatch: Type.Optional(described(HexData, 'with "batch": a delegate execute tool\'s payment.batch')),
    payerDeployment: Type.Optional(
      Type.Object(
        { factory: Address, factoryData: HexData },
        { additionalProperties: false, description: 'a paying smart wallet not deployed yet: its ERC-6492 factory and calldata (their gas is priced in)' },
      ),
    ),
  },
  { additionalProperties: false },
)

export const Quote = Type.Object(
  {
    token: Address,
    symbol: Type.String(),
    amount: described(TokenAmount, 'whole token units'),
    amountBaseUnits: BaseUnits,
    payee: Address,
    validUntil: UnixSeconds,
    gas: GasUnits,
    feePerGasWei: BaseUnits,
    costWei: BaseUnits,
    expectedChargeBaseUnits: BaseUnits,
  },
  { additionalProperties: false },
)

export const SubmitRequest = Type.Object(
  {
    call: RelayCall,
    authorizationList: Type.Optional(AuthorizationList),
    payment: Payment,
    deadline: Type.Optional(described(UnixSeconds, 'unix seconds (default: now + submission ttl)')),
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
    paidBaseUnits: BaseUnits,
    chargedBaseUnits: Type.Optional(BaseUnits),
    refundedBaseUnits: Type.Optional(BaseUnits),
    callSucceeded: Type.Boolean(),
    callReason: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
)

export const SubmissionView = Type.Object(
  {
    id: Type.String(),
    chain: Type.String(),
    stage: Stage,
    createdAt: Type.Integer({ description: 'unix ms' }),
    updatedAt: Type.Integer({ description: 'unix ms' }),
    deadline: UnixSeconds,
    transaction: Type.Optional(
      Type.Object(
        {
          hash: Hash32,
          nonce: Type.Integer(),
          blockNumber: Type.Optional(BlockNumber),
          gasUsed: Type.Optional(GasUnits),
          feeWei: Type.Optional(BaseUnits),
        },
        { additionalProperties: false },
      ),
    ),
    reason: Type.Optional(Type.String()),
    outcome: Type.Optional(RelayOutcome),
  },
  { additionalProperties: false },
)

export const AccountView = Type.Object(
  {
    address: Address,
    delegated: Type.Boolean(),
    delegate: Type.Optional(Address),
    delegateName: Type.Optional(Type.String()),
    delegateNonce: Type.Optional(Type.String({ description: 'its next batch nonce' })),
    delegateNotReady: Type.Optional(Type.String({ description: 'the step the delegate still needs' })),
    nonce: Type.Integer({ description: 'EOA nonce' }),
    ethBalance: described(TokenAmount, 'whole ETH'),
    ethBalanceWei: BaseUnits,
    tokens: Type.Array(
      Type.Object(
        { symbol: Type.String(), address: Address, balance: described(TokenAmount, 'whole token units'), balanceBaseUnits: BaseUnits },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
)

/**
 * What a delegate group's execute tool returns (calibur_execute, metamask_execute): the signed
 * batch as the call and payment `submit` takes, ready to pass on.
 */
export const ExecutedBatch = Type.Object(
  {
    call: RelayCall,
    payment: CallPayment,
    authorizationList: Type.Optional(authorizationListAs('for submit')),
    account: Address,
    paymentFormatted: Type.String({ description: 'whole token units and symbol' }),
    next: Type.String(),
  },
  { additionalProperties: false },
)

/** How a delegate group's batch tool measured and priced the batch it prepared (its output's `gas`). */
/** A batch tool's payment: what it is expected to be charged at current fees (`expectedBatchCharge`). */
export const ExpectedCharge = described(BaseUnits, 'at current fees; the rest comes back')

export const BatchGasEstimate = Type.Object(
  {
    estimated: described(GasUnits, 'the runner transaction\'s'),
    ownerPath: described(GasUnits, 'measured'),
    feePerGasWei: BaseUnits,
    marginBps: Type.Integer(),
  },
  { additionalProperties: false },
)

export type RelayCall = Static<typeof RelayCall>
export type SignedAuthorization = Static<typeof SignedAuthorization>
export type CallPayment = Static<typeof CallPayment>
export type TransferAuthorizationMessage = Static<typeof TransferAuthorizationMessage>
export type SignedTransferPayment = Static<typeof SignedTransferPayment>
export type Payment = Static<typeof Payment>
export type QuoteRequest = Static<typeof QuoteRequest>
export type Quote = Static<typeof Quote>
export type SubmitRequest = Static<typeof SubmitRequest>
export type Stage = Static<typeof Stage>
export type SubmissionView = Static<typeof SubmissionView>
export type RelayOutcome = Static<typeof RelayOutcome>
export type AccountView = Static<typeof AccountView>
