import t, { type Test } from 'tap'
import { encodeErrorResult, encodeFunctionData, formatUnits, getAddress, parseAbi, zeroAddress, type Address, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { serializeAsSigned } from '../../core/chain/l1DataFee.ts'
import { ChainUnavailableError } from '../../core/chain/guardedTransport.ts'
import type { Delegate, BatchTerms } from '../../core/relay/delegate.ts'
import { AUTHORIZATION_PHASE_GAS, EXPECTED_AUTHORIZATION_PHASE_GAS, quoteCall } from '../../core/relay/quote.ts'
import { EXPECTED_SETTLEMENT_GAS } from '../../core/relay/runnerCharge.ts'
import type { RunnerCharge } from '../../core/relay/runnerCall.ts'
import { estimateCharge, expectedCharge, QUOTED_REFUND_GAS, runnerCharge } from '../../core/relay/runnerCharge.ts'
import { ToolError } from '../../core/tool/tool.ts'
import { ethCall, networkConfig } from './fakeChain.ts'
import { a, errorString, intrinsicDataGas, KEPT, methods, relayContext, revert, runnerFunctions, runnerNode, type RunnerNodeOptions } from './fakeRunnerNode.ts'
import { fakeDelegate } from '../fixtures/fakeDelegate.ts'

// quoteCall (core/relay/quote.ts) against a node the test answers. The gas limit is counted here
// from the Runner's spending as SPEC describes it (intrinsic gas, the transfer's 110,000, the copy,
// the stipend and its 1/64, the 25,000 settlement, × 1.05), the calldata encoded from Runner.sol's
// signature; max fee 1.2 × 1 gwei + 0.001 gwei; the default 20 % margin, rounded up.

const config = networkConfig()
const runner = getAddress(config.runner.contract)
const payee = getAddress(config.payee)
const weth = getAddress(config.weth)
const usdc = getAddress(config.tokens[0]!.address)
const operator = a(0x0e0e)
const target = a(0xc0de)
const MAX_FEE = 1_201_000_000n
const FEES = { maxFeePerGas: MAX_FEE, maxPriorityFeePerGas: 1_000_000n }

/** The placeholder transfer the quote prices: payee to payee, 1 unit, r = s = 0x7f…, v 27 (65 bytes). */
function placeholderData(call: { to: Address; data: Hex }, callGas: bigint, token: Address, charge: RunnerCharge = KEPT): Hex {
  const seven = `0x${'7f'.repeat(32)}` as Hex
  return encodeFunctionData({
    abi: runnerFunctions,
    functionName: 'relayWithAuthorization',
    args: [call.to, call.data, callGas, token, payee, 1n, { from: payee, value: 1n, validAfter: 0n, validBefore: 99_999_999_999n, nonce: `0x${'ff'.repeat(32)}`, signature: `${seven}${seven.slice(2)}1b` }, charge],
  })
}

/** The gas limit for the Runner's calldata `data` copying `copied` with stipend `callGas`, by hand. */
function gasLimitOf(data: Hex, copied: Hex, callGas: bigint, refundGas = 0n): bigint {
  const words = BigInt(Math.ceil((copied.length - 2) / 64))
  const calldata = intrinsicDataGas(data)
  const least = 21_000n + calldata + 110_000n + 3n * words + (words * words) / 512n + callGas + callGas / 63n + 25_000n + refundGas + refundGas / 63n
  const floor = 21_000n + (calldata * 10n) / 4n
  return ((least > floor ? least : floor) * 10_500n) / 10_000n
}

const ceil = (a: bigint, b: bigint) => (a + b - 1n) / b

async function refusal(t: Test, promise: Promise<unknown>, message: string) {
  const error = await promise.then(
    () => undefined,
    (error: unknown) => error,
  )
  t.type(error, ToolError, 'a refusal')
  t.equal((error as Error | undefined)?.message, message)
}

function quoting(options: RunnerNodeOptions = {}, readers?: Delegate[]) {
  const node = runnerNode(options)
  return { node, context: relayContext(node, operator, readers).context }
}

t.test('a payee that refunds (this Runner\'s vault): the limit reserves the refund, the charge is priced ahead as the Runner will', async (t) => {
  const call = { to: target, data: '0xabcd' as Hex }
  const { node, context } = quoting({ estimateOther: () => 21_000n + 32n + 160_000n, payeeRunner: runner })
  const quote = await quoteCall(context, { call, token: 'WETH' })
  const data = placeholderData(call, 180_000n, weth, estimateCharge(QUOTED_REFUND_GAS, 500))
  const gas = gasLimitOf(data, call.data, 180_000n, QUOTED_REFUND_GAS)
  const amount = ceil(gas * MAX_FEE * 12_000n, 10_000n)
  t.equal(quote.gas, gas.toString(), 'the refund\'s cap and its 1/63 reserved in the limit; the charge\'s figures counted at their dearest')
  t.equal(quote.amountBaseUnits, amount.toString(), 'the most the payment must allow: unchanged in kind')
  const placeholder = {
    token: weth,
    authorization: { from: payee, to: payee, value: '1', validAfter: '0', validBefore: '99999999999', nonce: `0x${'ff'.repeat(32)}` },
    signature: `0x${'7f'.repeat(64)}1b`,
  } as const
  const charge = runnerCharge({
    relay: { form: 'authorization', call, payment: placeholder, payee },
    callGas: 180_000n,
    authorizationGas: 0n,
    l1FeeWei: 0n,
    weiPerBaseUnit: { numerator: 1n, denominator: 1n },
    markupBps: 500,
    refundGas: QUOTED_REFUND_GAS,
  })
  // 1 wei per base unit: the charge is the gas expected (the call's 160,000 measured, the transfer's and the settlement's
  // usual gas, the refund's cap) × (the latest base fee + the tip), + 5 %, rounded up.
  const expectedGas = 21_000n + intrinsicDataGas(data) + EXPECTED_AUTHORIZATION_PHASE_GAS + 160_000n + EXPECTED_SETTLEMENT_GAS + QUOTED_REFUND_GAS
  const expected = expectedCharge(charge, expectedGas, (((MAX_FEE - 1_000_000n) * 10n) / 12n) + 1_000_000n, amount)
  t.equal(quote.expectedChargeBaseUnits, expected.toString())
  t.ok(expected * 100n < amount * 70n, `expected ${expected} of at most ${amount}: the max fee's room, the margin, the headroom and the reserves come back`)
  t.equal(node.seen.filter((request) => request.method === 'eth_call' && JSON.stringify(request.params).includes('0x7a8ca615')).length, 1, 'the payee asked runner() once')
  await quoteCall(context, { call, token: 'WETH' })
  t.equal(node.seen.filter((request) => request.method === 'eth_call' && JSON.stringify(request.params).includes('0x7a8ca615')).length, 1, 'and not again: kept for the chain')
})

t.test('the transfer phase is priced at 110,000 gas', async (t) => {
  t.equal(AUTHORIZATION_PHASE_GAS, 110_000n)
})

t.test('a signed-transfer quote: the call measured from the Runner at latest, the worst case, the margin', async (t) => {
  const call = { to: target, data: '0xabcd' as Hex }
  // the node estimates 21,000 + 32 (calldata) + 160,000: the call used 160,000; its stipend is 180,000
  const { node, context } = quoting({ estimateOther: () => 21_000n + 32n + 160_000n })
  const before = Math.floor(Date.now() / 1000)
  const quote = await quoteCall(context, { call, token: 'WETH' })
  const after = Math.floor(Date.now() / 1000)
  const data = placeholderData(call, 180_000n, weth)
  const gas = gasLimitOf(data, call.data, 180_000n)
  const cost = gas * MAX_FEE
  const amount = ceil(cost * 12_000n, 10_000n)
  t.ok(quote.validUntil >= before + 120 && quote.validUntil <= after + 120, 'valid for relay.quoteTtlSec')
  t.strictSame(quote, {
    token: weth,
    symbol: 'WETH',
    amount: formatUnits(amount, 18),
    amountBaseUnits: amount.toString(),
    payee,
    validUntil: quote.validUntil,
    gas: gas.toString(),
    feePerGasWei: MAX_FEE.toString(),
    costWei: cost.toString(),
    expectedChargeBaseUnits: amount.toString(), // the payee, an account, keeps the whole payment
  })
  // the call estimated from the Runner contract, at the latest block, with nothing else
  const estimate = node.seen.find((request) => request.method === 'eth_estimateGas')!
  const [transaction, tag] = estimate.params as [Record<string, unknown>, unknown]
  t.equal(getAddress(transaction.from as string), runner)
  t.equal(getAddress(transaction.to as string), target)
  t.equal(transaction.data, '0xabcd')
  t.equal(tag, 'latest')
  t.notOk('authorizationList' in transaction)
  t.notOk('gas' in transaction)
  const asked = methods(node.seen)
  t.equal(asked.filter((method) => method === 'eth_getBlockByNumber').length, 1, 'the block read once, for the fees and the cap')
  t.equal(node.seen.find((request) => request.method === 'eth_getBlockByNumber')!.params[0], 'latest')
  t.ok(asked.includes('eth_chainId'))
  t.strictSame(node.runnerRequests, [], 'the Runner is not simulated before the transfer is signed')
})

t.test('the call’s measured gas: the estimate less the intrinsic 21,000 and its calldata, never below 0', async (t) => {
  const call = { to: target, data: '0x00ff' as Hex } // 4 + 16 = 20
  for (const [estimate, stipend] of [
    [21_020n + 1_600n, 1_600n + 100n + 10_000n],
    [21_020n + 17n, 17n + 1n + 10_000n],
    [21_020n + 1n, 1n + 10_000n],
    [21_020n, 10_000n],
    [21_000n, 10_000n], // below: 0, not −20
  ] as const) {
    const quote = await quoteCall(quoting({ estimateOther: () => estimate }).context, { call, token: 'WETH' })
    t.equal(quote.gas, gasLimitOf(placeholderData(call, stipend, weth), call.data, stipend).toString(), `estimate ${estimate} → stipend ${stipend}`)
  }
})

t.test('no call (to the zero address): not estimated, no stipend', async (t) => {
  const call = { to: zeroAddress, data: '0x' as Hex }
  const { node, context } = quoting()
  const quote = await quoteCall(context, { call, token: 'WETH' })
  t.equal(quote.gas, gasLimitOf(placeholderData(call, 0n, weth), '0x', 0n).toString())
  t.notOk(methods(node.seen).includes('eth_estimateGas'))
})

t.test('a call that fails from the Runner is refused with its reason; a node error passes as it is', async (t) => {
  const call = { to: target, data: '0xabcd' as Hex }
  await refusal(
    t,
    quoteCall(quoting({ estimateOther: () => revert(errorString('ERC20: transfer amount exceeds balance')) }).context, { call, token: 'WETH' }),
    `cannot quote: the call fails in simulation from Bruno's Runner contract (${runner}): the call reverted: ERC20: transfer amount exceeds balance. ` +
      `The call runs with Bruno's Runner contract (${runner}) as msg.sender, so only calls that act by signature belong there: ` +
      "a transfer of the account's own tokens is transfer_authorization's call (the account signs it, no ETH); " +
      'anything else the account does itself (an approve, a swap of its tokens) goes in a Calibur batch (calibur_batch)',
  )
  const error = await quoteCall(
    quoting({
      estimateOther: () => {
        throw Object.assign(new Error('header not found'), { code: -32000 })
      },
    }).context,
    { call, token: 'WETH' },
  ).then(() => new Error('accepted'), (error: unknown) => error as Error)
  t.notOk(error instanceof ToolError)
  t.match(error.message, /header not found/)
})

t.test('a quote over what one transaction may carry is refused; at the limit it is given', async (t) => {
  const call = { to: target, data: '0xabcd' as Hex }
  const stipend = 180_000n
  const gas = gasLimitOf(placeholderData(call, stipend, weth), call.data, stipend)
  const estimateOther = () => 21_032n + 160_000n
  t.equal((await quoteCall(quoting({ estimateOther, blockGasLimit: gas }).context, { call, token: 'WETH' })).gas, gas.toString())
  await refusal(t, quoteCall(quoting({ estimateOther, blockGasLimit: gas - 1n }).context, { call, token: 'WETH' }), `cannot quote: the call needs ${gas} gas, over the ${gas - 1n} one transaction may carry on local`)
  // 2²⁴ whatever the block: a stipend of 16,000,000 needs more
  await refusal(
    t,
    quoteCall(quoting({ estimateOther: () => 21_032n + 15_000_000n, blockGasLimit: 60_000_000n }).context, { call, token: 'WETH' }),
    `cannot quote: the call needs ${gasLimitOf(placeholderData(call, 15_947_500n, weth), call.data, 15_947_500n)} gas, over the 16777216 one transaction may carry on local`,
  )
})

t.test('an authorization list is estimated with, and priced into the L1 data fee on OP-stack', async (t) => {
  // The account the call runs on signs its own authorization.
  const account = privateKeyToAccount('0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a')
  const call = { to: account.address, data: '0xabcd' as Hex }
  const { r, s, yParity } = await account.signAuthorization({ contractAddress: a(0xca1), chainId: 31337, nonce: 2 })
  const authorizationList = [{ chainId: 31337, address: a(0xca1), nonce: 2, r, s, yParity: yParity as 0 | 1 }]
  const { node, context } = quoting({ config: networkConfig({ l1DataFee: 'op-stack' }), estimateOther: () => 21_032n + 160_000n, l1Fee: 4_000n, eoaNonce: 2 })
  const quote = await quoteCall(context, { call, token: 'WETH', authorizationList })
  const data = placeholderData(call, 180_000n, weth)
  const gas = gasLimitOf(data, call.data, 180_000n)
  const cost = gas * MAX_FEE + 5_000n
  t.equal(quote.costWei, cost.toString(), 'the L1 fee with its 25 % headroom')
  t.equal(quote.amountBaseUnits, ceil(cost * 12_000n, 10_000n).toString())
  t.strictSame(node.oracleAsked, [
    serializeAsSigned(31337, { to: runner, data, gas, nonce: 0, ...FEES, authorizationList: [{ address: a(0xca1), chainId: 31337, nonce: 2, r, s, yParity: yParity! }] }),
  ])
  const estimate = node.seen.find((request) => request.method === 'eth_estimateGas')!
  t.match((estimate.params[0] as { authorizationList: unknown }).authorizationList, [{ address: a(0xca1).toLowerCase(), chainId: '0x7a69', nonce: '0x2', r, s, yParity: `0x${yParity}` }])
})

t.test('priced in USDC: the pool price, six decimals', async (t) => {
  const poolAbi = parseAbi([
    'function slot0() view returns (uint160 sqrtPriceX96, int24 tick, uint16 observationIndex, uint16 observationCardinality, uint16 observationCardinalityNext, uint8 feeProtocol, bool unlocked)',
    'function observe(uint32[] secondsAgos) view returns (int56[] tickCumulatives, uint160[] secondsPerLiquidityCumulativeX128s)',
  ])
  const Q96 = 1n << 96n
  // WETH (0x42…) is token0: selling USDC (token1) the price is 2¹⁹² / sqrtP² = 2²⁸ wei per base unit
  // at sqrtP = 2⁹⁶ / 2¹⁴; the 10-minute average at tick −200,000 is dearer (1.0001^200000 ≈ 4.9e8): the spot counts.
  const pools = ethCall({
    '0xd0b53D9277642d899DF5C87A3966A349A798F224': {
      abi: poolAbi,
      answer: (functionName) => (functionName === 'slot0' ? [Q96 >> 14n, 0, 0, 1, 1, 0, true] : [[0n, -200_000n * 150n, -200_000n * 300n, -200_000n * 450n, -200_000n * 600n], [0n, 0n, 0n, 0n, 0n]]),
    },
  })
  const call = { to: target, data: '0xabcd' as Hex }
  const quote = await quoteCall(quoting({ estimateOther: () => 21_032n + 160_000n, otherCall: pools }).context, { call, token: 'usdc' })
  const gas = gasLimitOf(placeholderData(call, 180_000n, usdc), call.data, 180_000n)
  const amount = ceil(ceil(gas * MAX_FEE * 12_000n, 10_000n), 1n << 28n)
  t.equal(quote.token, usdc)
  t.equal(quote.symbol, 'USDC')
  t.equal(quote.amountBaseUnits, amount.toString())
  t.equal(quote.amount, formatUnits(amount, 6))
  t.equal(quote.costWei, (gas * MAX_FEE).toString())
})

t.test('a delegate batch: the exact runner transaction simulated with its own payment', async (t) => {
  const account = a(0xacc)
  const data = '0xc3c16ee4beef' as Hex
  const paymentBatch = '0xc3c16ee4f00d' as Hex
  const terms = (paymentData: Hex): BatchTerms => ({
    account,
    delegate: a(0xde1e),
    target: account,
    paymentData,
    paymentGas: 150_000n,
    token: weth,
    payee,
    amount: 4_242n,
    deadline: 0n,
    identity: 'batch:1',
    ownCalls: { from: account, to: account, data: '0x' },
  })
  const given: (Hex | undefined)[] = []
  const reader: Delegate = fakeDelegate({
    errors: { abi: [], describe: () => undefined },
    read: (_network, call, payment) => {
      given.push(payment)
      if (!call.data.startsWith('0xc3c16ee4')) return undefined
      if (payment === undefined) throw new ToolError('the payment has no `batch`')
      return terms(payment)
    },
  })
  const { node, context } = quoting({ config: networkConfig({ l1DataFee: 'op-stack' }), relay: () => ({ callSucceeded: true, callGasUsed: 16_000n }), estimate: () => 100_000n, l1Fee: 800n }, [reader])
  const quote = await quoteCall(context, { call: { to: account, data }, token: 'WETH', payment: 'batch', paymentBatch })
  t.strictSame(given, [paymentBatch], 'the reader is given the request\'s payment batch')
  const cost = 105_000n * MAX_FEE + 1_000n
  t.equal(quote.gas, '105000')
  t.equal(quote.feePerGasWei, MAX_FEE.toString())
  t.equal(quote.costWei, cost.toString())
  t.equal(quote.amountBaseUnits, ceil(cost * 12_000n, 10_000n).toString())
  // simulated with the batch's own payment (4,242) by its payment batch, capped at its paymentGas, at nonce 0 for the L1 fee
  const exact = node.runnerRequests.at(-1)!
  t.equal(exact.data, encodeFunctionData({ abi: runnerFunctions, functionName: 'relayBatch', args: [account, a(0xde1e), { target: account, payment: paymentBatch, paymentGas: 150_000n, data }, 27_000n, weth, payee, 4_242n, KEPT] }))
  t.equal(node.oracleAsked.length, 1)
  t.equal(node.oracleAsked[0], serializeAsSigned(31337, { to: runner, data: exact.data, gas: 105_000n, nonce: 0, ...FEES }))
  t.notOk(methods(node.seen).includes('eth_estimateGas') && node.seen.some((request) => request.method === 'eth_estimateGas' && getAddress((request.params[0] as { to: string }).to) !== runner), 'the call alone is not estimated')

  // its refusals say "cannot quote"
  const failing = quoting({ relay: () => ({ callSucceeded: false, callGasUsed: 1n, reason: errorString('nope') }) }, [reader])
  await refusal(
    t,
    quoteCall(failing.context, { call: { to: account, data }, token: 'WETH', payment: 'batch', paymentBatch }),
    'cannot quote: the call fails in simulation even with 15000000 gas: the call reverted: nope. Nothing was sent. A call that fails on chain still pays, so Bruno only sends calls that succeed in simulation',
  )
  // no payment batch: the reader is asked without one, and its refusal is the quote's; nothing is simulated
  const unpaid = quoting({}, [reader])
  given.length = 0
  await refusal(t, quoteCall(unpaid.context, { call: { to: account, data }, token: 'WETH', payment: 'batch' }), 'the payment has no `batch`')
  t.strictSame(given, [undefined])
  t.equal(unpaid.node.runnerRequests.length, 0)
})

t.test('a node on another chain is refused', async (t) => {
  const error = await quoteCall(quoting({ chainId: 1, estimateOther: () => 50_000n }).context, { call: { to: target, data: '0x' }, token: 'WETH' }).catch((error: unknown) => error)
  t.type(error, ChainUnavailableError)
})


t.test('a delegate’s error met by a signed-transfer quote is said in its group’s words', async (t) => {
  const abi = parseAbi(['error TooLittle(uint256 got)'])
  const reader: Delegate = fakeDelegate({
    errors: { abi, describe: (name, args) => (name === 'TooLittle' ? `too little: ${String(args[0])}` : undefined) },
    read: () => undefined,
  })
  await refusal(
    t,
    quoteCall(quoting({ estimateOther: () => revert(encodeErrorResult({ abi, errorName: 'TooLittle', args: [5n] })) }, [reader]).context, { call: { to: target, data: '0xabcd' }, token: 'WETH' }),
    `cannot quote: the call fails in simulation from Bruno's Runner contract (${runner}): too little: 5. The call runs with Bruno's Runner contract (${runner}) as msg.sender, so only calls that act by signature belong there: ` +
      "a transfer of the account's own tokens is transfer_authorization's call (the account signs it, no ETH); " +
      'anything else the account does itself (an approve, a swap of its tokens) goes in a Calibur batch (calibur_batch)',
  )
})

t.test('a signed-transfer quote in a token that takes no signed transfers is refused, naming the forms that can pay (issue 29, point 3)', async (t) => {
  const call = { to: target, data: '0xabcd' as Hex }
  const { node, context } = quoting({ estimateOther: () => 21_000n + 32n + 160_000n, signedTransfers: false })
  await refusal(
    t,
    quoteCall(context, { call, token: 'WETH' }),
    `WETH cannot pay by signed transfer on local: ${weth} has no EIP-3009 transferWithAuthorization. ` +
      'Pay it with payment "batch" (a delegated account\'s payment batch transfers WETH: calibur_batch), or by signed transfer in USDC (payment_authorization)',
  )
  const asked = node.seen.find((request) => request.method === 'eth_call' && (request.params[0] as { to: string }).to.toLowerCase() === weth.toLowerCase())
  t.ok(asked, 'the token asked for its authorizationState')
})
