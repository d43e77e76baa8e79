import type { TSchema } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import t, { type Test } from 'tap'
import { PUBLISHED_AS } from '../../core/tool/schemas.ts'
import {
  AccountView,
  AuthorizationList,
  CallPayment,
  Payment,
  Quote,
  QuoteRequest,
  RelayCall,
  RelayOutcome,
  SignedAuthorization,
  SignedTransferPayment,
  Stage,
  SubmissionView,
  SubmitRequest,
  TransferAuthorizationMessage,
  yParityOf,
} from '../../core/relay/schemas.ts'

// The relay's shapes (core/relay/schemas.ts): what each accepts and refuses, checked the way the
// registry checks a tool's input (TypeCompiler), and the texts they publish as JSON Schema. Each
// refusal differs from an accepted input in one constraint only.

const checks = new Map<TSchema, ReturnType<typeof TypeCompiler.Compile>>()
const valid = (schema: TSchema, value: unknown) => {
  if (!checks.has(schema)) checks.set(schema, TypeCompiler.Compile(schema))
  return checks.get(schema)!.Check(value)
}
const accepts = (t: Test, schema: TSchema, value: unknown, what: string) => t.equal(valid(schema, value), true, `accepts ${what}`)
const refuses = (t: Test, schema: TSchema, value: unknown, what: string) => t.equal(valid(schema, value), false, `refuses ${what}`)
const without = (value: Record<string, unknown>, key: string) => Object.fromEntries(Object.entries(value).filter(([name]) => name !== key))
/** Every listed field is required, every other one optional, and nothing else is let in. */
function pinFields(t: Test, schema: TSchema, full: Record<string, unknown>, required: string[]) {
  accepts(t, schema, full, 'every field')
  for (const key of Object.keys(full)) {
    const dropped = without(full, key)
    if (required.includes(key)) refuses(t, schema, dropped, `no ${key}`)
    else accepts(t, schema, dropped, `no ${key} (optional)`)
  }
  refuses(t, schema, { ...full, extra: 1 }, 'an extra property')
}

const address = `0x${'12'.repeat(20)}`
const hash = `0x${'ab'.repeat(32)}`
const hex = (length: number) => `0x${'c'.repeat(length)}`
const authorization = (fields: Record<string, unknown>) => ({ chainId: 1, address, nonce: 0, r: hash, s: hash, ...fields })
const message = { from: address, to: address, value: '150000', validAfter: '0', validBefore: '1900000000', nonce: hash }
const transfer = { token: address, authorization: message, signature: hex(130) }
const batchPayment = { token: address, amountBaseUnits: '150000', batch: `0xc3c16ee4${'0a'.repeat(64)}` }

t.test('RelayCall: to and data, value only "0" or absent, nothing else', async (t) => {
  pinFields(t, RelayCall, { to: address, data: '0xabcd', value: '0' }, ['to', 'data'])
  for (const value of ['1', '', '00', 0]) refuses(t, RelayCall, { to: address, data: '0xabcd', value }, `value ${JSON.stringify(value)}`)
  t.equal(RelayCall.additionalProperties, false)
  t.equal(RelayCall.description, "the call Bruno's Runner makes")
})

t.test('SignedAuthorization: yParity alone, v alone, or both when they agree', async (t) => {
  for (const yParity of [0, 1]) accepts(t, SignedAuthorization, authorization({ yParity }), `yParity ${yParity}`)
  for (const yParity of [2, '0', '1', -1]) refuses(t, SignedAuthorization, authorization({ yParity }), `yParity ${JSON.stringify(yParity)}`)
  refuses(t, SignedAuthorization, authorization({}), 'neither v nor yParity')
  refuses(t, SignedAuthorization, {}, 'an empty object')
  const parity0 = [0, 27, '0', '27', '0x0', '0x00', '0x1b', '0x1B', '0x01b', '0x001B']
  const parity1 = [1, 28, '1', '28', '0x1', '0x01', '0x001', '0x1c', '0x1C', '0x01c', '0x001c']
  for (const v of parity0) {
    accepts(t, SignedAuthorization, authorization({ v }), `v ${JSON.stringify(v)} alone`)
    accepts(t, SignedAuthorization, authorization({ yParity: 0, v }), `yParity 0 with v ${JSON.stringify(v)}`)
    refuses(t, SignedAuthorization, authorization({ yParity: 1, v }), `yParity 1 with v ${JSON.stringify(v)}`)
  }
  for (const v of parity1) {
    accepts(t, SignedAuthorization, authorization({ v }), `v ${JSON.stringify(v)} alone`)
    accepts(t, SignedAuthorization, authorization({ yParity: 1, v }), `yParity 1 with v ${JSON.stringify(v)}`)
    refuses(t, SignedAuthorization, authorization({ yParity: 0, v }), `yParity 0 with v ${JSON.stringify(v)}`)
  }
  const neither = [2, 26, 29, -1, '2', '26', '29', '0x2', '0x1a', '0x1d', '0x', '', '027', '001', '1b', '0X1b', ' 1', '1 ', 'x', '0x1g']
  for (const v of neither) {
    for (const yParity of [undefined, 0, 1]) {
      refuses(t, SignedAuthorization, authorization(yParity === undefined ? { v } : { yParity, v }), `v ${JSON.stringify(v)}${yParity === undefined ? '' : ` with yParity ${yParity}`}`)
    }
  }
})

t.test('SignedAuthorization: its other fields, closed in every form', async (t) => {
  for (const form of [{ yParity: 0 }, { yParity: 1, v: 28 }, { v: '0x1b' }]) {
    const label = JSON.stringify(form)
    accepts(t, SignedAuthorization, authorization({ ...form, chainId: 0, nonce: 0 }), `${label}: chainId and nonce 0`)
    refuses(t, SignedAuthorization, authorization({ ...form, chainId: -1 }), `${label}: a negative chainId`)
    refuses(t, SignedAuthorization, authorization({ ...form, nonce: -1 }), `${label}: a negative nonce`)
    refuses(t, SignedAuthorization, authorization({ ...form, nonce: 1.5 }), `${label}: a fractional nonce`)
    refuses(t, SignedAuthorization, authorization({ ...form, extra: 1 }), `${label}: an extra property`)
    for (const key of ['chainId', 'address', 'nonce', 'r', 's']) refuses(t, SignedAuthorization, without(authorization(form), key), `${label}: no ${key}`)
    for (const key of ['r', 's']) {
      accepts(t, SignedAuthorization, authorization({ ...form, [key]: `0x${'aB'.repeat(32)}` }), `${label}: ${key} of 64 mixed-case hex`)
      refuses(t, SignedAuthorization, authorization({ ...form, [key]: hex(63) }), `${label}: ${key} of 63 hex`)
      refuses(t, SignedAuthorization, authorization({ ...form, [key]: hex(65) }), `${label}: ${key} of 65 hex`)
      refuses(t, SignedAuthorization, authorization({ ...form, [key]: `0x${'g'.repeat(64)}` }), `${label}: ${key} not hex`)
    }
  }
  for (const branch of SignedAuthorization.anyOf) t.equal(branch.additionalProperties, false)
})

t.test('yParityOf: from yParity, or else from v in any form', async (t) => {
  const of = (fields: Record<string, unknown>) => yParityOf(authorization(fields) as SignedAuthorization)
  t.equal(of({ yParity: 0 }), 0)
  t.equal(of({ yParity: 1 }), 1)
  t.equal(of({ yParity: 1, v: 28 }), 1)
  t.equal(of({ yParity: 0, v: '0x1b' }), 0)
  t.equal(of({ yParity: undefined, v: '28' }), 1, 'an undefined yParity falls back to v')
  t.equal(of({ yParity: undefined, v: 27 }), 0)
  for (const v of [0, 27, '0', '27', '0x0', '0x00', '0x1b', '0x1B', '0x001B']) t.equal(of({ v }), 0, `v ${JSON.stringify(v)}`)
  for (const v of [1, 28, '1', '28', '0x1', '0x01', '0x1c', '0x1C', '0x001c']) t.equal(of({ v }), 1, `v ${JSON.stringify(v)}`)
})

t.test('AuthorizationList: 1 to 4, each a signed authorization, its integers exact in JSON', async (t) => {
  const one = authorization({ yParity: 0 })
  refuses(t, AuthorizationList, [], 'none: the node would refuse an empty list (issue 50, point 4)')
  refuses(t, AuthorizationList, [{ ...one, nonce: 2 ** 53 }], 'a nonce past 2⁵³ − 1')
  refuses(t, AuthorizationList, [{ ...one, chainId: 1e308 }], 'a chain id past 2⁵³ − 1')
  accepts(t, AuthorizationList, [{ ...one, nonce: Number.MAX_SAFE_INTEGER }], 'a nonce of 2⁵³ − 1')
  accepts(t, AuthorizationList, [one, one, one, one], '4')
  refuses(t, AuthorizationList, [one, one, one, one, one], '5')
  refuses(t, AuthorizationList, [authorization({ yParity: 0, v: 28 })], 'one whose v and yParity disagree')
  t.equal(AuthorizationList.maxItems, 4)
  t.equal(AuthorizationList.description, 'signed EIP-7702 authorizations, sent in the same transaction')
})

t.test('CallPayment and SignedTransferPayment, each one form of Payment', async (t) => {
  pinFields(t, CallPayment, batchPayment, ['token', 'amountBaseUnits', 'batch'])
  refuses(t, CallPayment, { ...batchPayment, amountBaseUnits: '1.5' }, 'whole units as base units')
  accepts(t, CallPayment, { ...batchPayment, batch: '0xC3C16EE4' }, 'a batch in upper case')
  for (const batch of ['c3c16ee4', '0xc3c16ee', '0xzz', '']) refuses(t, CallPayment, { ...batchPayment, batch }, `a batch ${JSON.stringify(batch)}, not hex bytes`)
  refuses(t, CallPayment, { ...batchPayment, batch: `0x${'00'.repeat(131_073)}` }, 'a batch past the calldata bound')
  t.equal(CallPayment.properties.batch.description, 'the signed payment-only batch')
  t.equal(CallPayment.additionalProperties, false)
  t.equal(CallPayment.title, 'a batch payment')
  t.equal(CallPayment.description, "a delegate execute tool's payment")

  pinFields(t, TransferAuthorizationMessage, message, ['from', 'to', 'value', 'validAfter', 'validBefore', 'nonce'])
  refuses(t, TransferAuthorizationMessage, { ...message, nonce: hex(63) }, 'a 63-hex nonce')
  t.equal(TransferAuthorizationMessage.additionalProperties, false)

  pinFields(t, SignedTransferPayment, transfer, ['token', 'authorization', 'signature'])
  refuses(t, SignedTransferPayment, { ...transfer, authorization: { ...message, extra: 1 } }, 'an authorization with an extra property')
  refuses(t, SignedTransferPayment, { ...transfer, authorization: without(message, 'validBefore') }, 'an authorization without validBefore')
  accepts(t, SignedTransferPayment, { ...transfer, signature: `0x${'aF'.repeat(65)}` }, 'a mixed-case signature')
  // 65 bytes from an account's key, up to 4,096 from a smart wallet (ERC-1271, ERC-6492): whole bytes only
  for (const length of [0, 128, 129, 131, 8194]) refuses(t, SignedTransferPayment, { ...transfer, signature: hex(length) }, `a signature of ${length} hex`)
  for (const length of [132, 448, 8192]) accepts(t, SignedTransferPayment, { ...transfer, signature: hex(length) }, `a wallet's signature of ${length / 2} bytes`)
  refuses(t, SignedTransferPayment, { ...transfer, signature: `0x${'z'.repeat(130)}` }, 'a signature not hex')
  t.equal(SignedTransferPayment.additionalProperties, false)
  t.equal(SignedTransferPayment.title, 'a signed transfer')
  t.equal(SignedTransferPayment.description, "payment_authorization's payment, signed")
  t.equal(SignedTransferPayment.properties.signature.description, "the wallet's signature, as it returned it")
  const published = (SignedTransferPayment.properties.authorization as unknown as Record<string, { description?: string }>)[PUBLISHED_AS]
  t.equal(published?.description, "payment_authorization's payment.authorization, unchanged")

  accepts(t, Payment, batchPayment, 'a batch payment')
  accepts(t, Payment, transfer, 'a signed transfer')
  refuses(t, Payment, { ...batchPayment, signature: hex(130) }, 'a batch payment with a signature')
  refuses(t, Payment, without(batchPayment, 'batch'), 'a batch payment without its payment batch')
  refuses(t, Payment, { ...transfer, batch: batchPayment.batch }, 'a signed transfer with a payment batch')
  refuses(t, Payment, { token: address }, 'a token alone')
  refuses(t, Payment, {}, 'an empty object')
})

t.test('QuoteRequest: a call, a token of 1 to 42 characters, payment authorization or batch', async (t) => {
  const request = { call: { to: address, data: '0x' }, authorizationList: [authorization({ v: 27 })], token: 'USDC', payment: 'batch', paymentBatch: batchPayment.batch }
  pinFields(t, QuoteRequest, request, ['call', 'token'])
  for (const paymentBatch of ['c3c16ee4', '0xc3c16ee', '0xzz']) refuses(t, QuoteRequest, { ...request, paymentBatch }, `a paymentBatch ${JSON.stringify(paymentBatch)}`)
  accepts(t, QuoteRequest, { ...request, payment: 'authorization' }, 'payment "authorization"')
  for (const payment of ['', 'transfer', 'Batch']) refuses(t, QuoteRequest, { ...request, payment }, `payment ${JSON.stringify(payment)}`)
  accepts(t, QuoteRequest, { ...request, token: 'U' }, 'a 1-character token')
  accepts(t, QuoteRequest, { ...request, token: address }, 'a token address (42 characters)')
  refuses(t, QuoteRequest, { ...request, token: '' }, 'an empty token')
  refuses(t, QuoteRequest, { ...request, token: `${address}0` }, 'a 43-character token')
  refuses(t, QuoteRequest, { ...request, call: { ...request.call, value: '1' } }, 'a call with value')
  refuses(t, QuoteRequest, { ...request, authorizationList: Array(5).fill(authorization({ v: 27 })) }, '5 authorizations')
  t.equal(QuoteRequest.additionalProperties, false)
  t.equal(QuoteRequest.properties.token.description, 'the token to pay in')
  t.equal(QuoteRequest.properties.payment.description, 'default "authorization"')
  t.equal(QuoteRequest.properties.paymentBatch.description, 'with "batch": a delegate execute tool\'s payment.batch')
})

t.test('Quote: every field required, closed', async (t) => {
  const quote = {
    token: address,
    symbol: 'USDC',
    amount: '0.15',
    amountBaseUnits: '150000',
    payee: address,
    validUntil: 1_900_000_000,
    gas: '90000',
    feePerGasWei: '1000000000',
    costWei: '90000000000000',
    expectedChargeBaseUnits: '100000',
  }
  pinFields(t, Quote, quote, Object.keys(quote))
  refuses(t, Quote, { ...quote, amount: '150000.' }, 'an amount that is not whole units')
  refuses(t, Quote, { ...quote, validUntil: -1 }, 'a negative validUntil')
  t.equal(Quote.additionalProperties, false)
  t.equal(Quote.properties.amount.description, 'whole token units')
})

t.test('SubmitRequest: a call and a payment, a deadline in unix seconds', async (t) => {
  const request = { call: { to: address, data: '0x', value: '0' }, authorizationList: [authorization({ yParity: 1 })], payment: transfer, deadline: 1_900_000_000 }
  pinFields(t, SubmitRequest, request, ['call', 'payment'])
  accepts(t, SubmitRequest, { ...request, payment: batchPayment }, 'a batch payment')
  refuses(t, SubmitRequest, { ...request, payment: without(batchPayment, 'batch') }, 'a batch payment without its payment batch')
  refuses(t, SubmitRequest, { ...request, payment: { ...transfer, signature: hex(128) } }, 'a short signature')
  refuses(t, SubmitRequest, { ...request, deadline: -1 }, 'a negative deadline')
  refuses(t, SubmitRequest, { ...request, deadline: '1900000000' }, 'a deadline as a string')
  t.equal(SubmitRequest.additionalProperties, false)
  t.equal(SubmitRequest.properties.deadline.description, 'unix seconds (default: now + submission ttl)')
})

t.test('Stage: the five stages and nothing else', async (t) => {
  for (const stage of ['waiting', 'sending', 'confirming', 'done', 'failed']) accepts(t, Stage, stage, stage)
  for (const stage of ['', 'pending', 'Done', 'included']) refuses(t, Stage, stage, JSON.stringify(stage))
})

t.test('SubmissionView and RelayOutcome: their required fields, closed at every level', async (t) => {
  const outcome = { paidBaseUnits: '150000', callSucceeded: false, callReason: 'the call reverted' }
  pinFields(t, RelayOutcome, outcome, ['paidBaseUnits', 'callSucceeded'])
  refuses(t, RelayOutcome, { ...outcome, callSucceeded: 'false' }, 'callSucceeded as a string')
  t.equal(RelayOutcome.additionalProperties, false)

  const transaction = { hash, nonce: 7, blockNumber: '12', gasUsed: '90000', feeWei: '180000000000000' }
  const view = { id: 'sub_1', chain: 'local', stage: 'done', createdAt: 1_000, updatedAt: 1_001, deadline: 1_600, transaction, reason: 'why', outcome }
  pinFields(t, SubmissionView, view, ['id', 'chain', 'stage', 'createdAt', 'updatedAt', 'deadline'])
  refuses(t, SubmissionView, { ...view, stage: 'pending' }, 'an unknown stage')
  refuses(t, SubmissionView, { ...view, createdAt: 1.5 }, 'a fractional createdAt')
  refuses(t, SubmissionView, { ...view, outcome: { ...outcome, extra: 1 } }, 'an outcome with an extra property')
  const withTransaction = (value: Record<string, unknown>) => ({ ...view, transaction: value })
  for (const key of ['hash', 'nonce']) refuses(t, SubmissionView, withTransaction(without(transaction, key)), `a transaction without ${key}`)
  for (const key of ['blockNumber', 'gasUsed', 'feeWei']) accepts(t, SubmissionView, withTransaction(without(transaction, key)), `a transaction without ${key}`)
  refuses(t, SubmissionView, withTransaction({ ...transaction, extra: 1 }), 'a transaction with an extra property')
  refuses(t, SubmissionView, withTransaction({ ...transaction, hash: hex(63) }), 'a 63-hex transaction hash')
  refuses(t, SubmissionView, withTransaction({ ...transaction, hash: hex(65) }), 'a 65-hex transaction hash')
  t.equal(SubmissionView.additionalProperties, false)
  t.equal(SubmissionView.properties.transaction.additionalProperties, false)
  t.equal(SubmissionView.properties.createdAt.description, 'unix ms')
  t.equal(SubmissionView.properties.updatedAt.description, 'unix ms')
  t.equal(SubmissionView.properties.deadline.description, 'unix seconds')
})

t.test('AccountView: its required fields, closed, its tokens closed too', async (t) => {
  const token = { symbol: 'USDC', address, balance: '12.5', balanceBaseUnits: '12500000' }
  const view = {
    address,
    delegated: true,
    delegate: address,
    delegateName: 'Calibur',
    delegateNonce: '0',
    nonce: 3,
    ethBalance: '1.5',
    ethBalanceWei: '1500000000000000000',
    tokens: [token],
  }
  pinFields(t, AccountView, view, ['address', 'delegated', 'nonce', 'ethBalance', 'ethBalanceWei', 'tokens'])
  accepts(t, AccountView, { ...view, tokens: [] }, 'no tokens')
  for (const key of Object.keys(token)) refuses(t, AccountView, { ...view, tokens: [without(token, key)] }, `a token without ${key}`)
  refuses(t, AccountView, { ...view, tokens: [{ ...token, extra: 1 }] }, 'a token with an extra property')
  refuses(t, AccountView, { ...view, delegateNonce: 0 }, 'delegateNonce as a number')
  refuses(t, AccountView, { ...view, isCalibur: true }, 'a field it no longer has')
  t.equal(AccountView.additionalProperties, false)
  t.equal(AccountView.properties.tokens.items.additionalProperties, false)
  t.equal(AccountView.properties.delegateNonce.description, 'its next batch nonce')
  t.equal(AccountView.properties.nonce.description, 'EOA nonce')
  t.equal(AccountView.properties.ethBalance.description, 'whole ETH')
  t.equal(AccountView.properties.tokens.items.properties.balance.description, 'whole token units')
})
