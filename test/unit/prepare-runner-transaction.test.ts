import { setImmediate as yieldOnce } from 'node:timers/promises'
import t, { type Test } from 'tap'
import { encodeErrorResult, encodeFunctionData, getAddress, parseAbi, zeroAddress, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { serializeAsSigned } from '../../core/chain/l1DataFee.ts'
import type { Delegate } from '../../core/relay/delegate.ts'
import { ChainUnavailableError } from '../../core/chain/guardedTransport.ts'
import { BrunoFault } from '../../core/chain/faults.ts'
import type { RunnerCharge, RunnerRelay } from '../../core/relay/runnerCall.ts'
import { calldataGas, prepareRunnerTransaction } from '../../core/relay/runnerTransaction.ts'
import { ToolError } from '../../core/tool/tool.ts'
import { networkConfig } from './fakeChain.ts'
import { estimateCharge, REFUND_GAS_MARGIN, REFUND_PROBE_CHARGE, REFUND_PROBE_GAS } from '../../core/relay/runnerCharge.ts'
import { a, errorString, KEPT, methods, relayContext, relayWithAuthorizationData, revert, runnerErrors, runnerFunctions, runnerNode, SIGNATURE, type RunnerNodeOptions } from './fakeRunnerNode.ts'
import { fakeDelegate } from '../fixtures/fakeDelegate.ts'

// prepareRunnerTransaction (core/relay/runnerTransaction.ts) against a node the test answers: the
// probe, the stipend, the estimate, the raises, the refusals and faults, and the exact requests
// (block tags, gas, fee fields). Figures by hand: the chain-free config's defaults are a 15,000,000
// stipend cap (relay.maxCallGas), a 10,500 gasLimitBps; the node's base fee 1 gwei and tip
// 0.001 gwei give a max fee of 1.2 gwei + 0.001 gwei = 1,201,000,000 wei. Paid in WETH (1 wei per unit).

const config = networkConfig()
const weth = { address: getAddress(config.weth), symbol: 'WETH', decimals: 18 }
const runner = getAddress(config.runner.contract)
const payee = getAddress(config.payee)
const operator = a(0x0e0e)
const payer = a(0xfa7e)
const target = a(0xc0de)
const nonce = `0x${'ab'.repeat(32)}` as Hex
const MAX_FEE = 1_201_000_000n
const FEES = { maxFeePerGas: MAX_FEE, maxPriorityFeePerGas: 1_000_000n }

const payment = { token: weth.address, authorization: { from: payer, to: payee, value: '500', validAfter: '0', validBefore: '4000000000', nonce }, signature: SIGNATURE }
const relayOf = (call: { to: `0x${string}`; data: Hex }): RunnerRelay => ({ form: 'authorization', call, payment, payee })
const relay = relayOf({ to: target, data: '0xabcd' }) // call data: 2 non-zero bytes, 32 gas
/** An account that signs its own EIP-7702 authorization, and a call to it. */
const ACCOUNT = privateKeyToAccount('0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a')
const accountCall = { to: ACCOUNT.address, data: '0xabcd' as Hex }
const dataAt = (callGas: bigint, call = { to: target, data: '0xabcd' as Hex }, charge: RunnerCharge = KEPT) =>
  relayWithAuthorizationData(call, callGas, { token: weth.address, from: payer, value: 500n, validAfter: 0n, validBefore: 4_000_000_000n, nonce, signature: SIGNATURE }, payee, charge)
/** The probe's gas limit: the largest stipend, 500,000 of room, the call data's 32 gas, the refund's probe cap and its 1/63. */
const PROBE_GAS = 15_000_000n + 500_000n + 32n + REFUND_PROBE_GAS + REFUND_PROBE_GAS / 63n

const batch: RunnerRelay = {
  form: 'batch',
  account: a(0xacc),
  delegate: a(0xde1e),
  target: a(0xacc),
  paymentData: '0xc3c16ee40101',
  paymentGas: 150_000n,
  data: '0xc3c16ee400ff',
  token: weth.address,
  payee,
  amount: 777n,
}
const batchData = (callGas: bigint, charge: RunnerCharge = KEPT) =>
  encodeFunctionData({ abi: runnerFunctions, functionName: 'relayBatch', args: [a(0xacc), a(0xde1e), { target: a(0xacc), payment: '0xc3c16ee40101', paymentGas: 150_000n, data: '0xc3c16ee400ff' }, callGas, weth.address, payee, 777n, charge] })

function setup(options: RunnerNodeOptions = {}) {
  const node = runnerNode(options)
  const { context } = relayContext(node, operator)
  return { node, context }
}

async function refusal(t: Test, promise: Promise<unknown>, message: string) {
  const error = await promise.then(
    () => undefined,
    (error: unknown) => error,
  )
  t.type(error, ToolError, 'a refusal')
  t.equal((error as Error | undefined)?.message, message)
}

const SENDER =
  `. The call runs with Bruno's Runner contract (${runner}) as msg.sender, so only calls that act by signature belong there: ` +
  "a transfer of the account's own tokens is transfer_authorization's call (the account signs it, no ETH); " +
  'anything else the account does itself (an approve, a swap of its tokens) goes in a Calibur batch (calibur_batch)'
const TAIL = '. Nothing was sent. A call that fails on chain still pays, so Bruno only sends calls that succeed in simulation'

t.test('the probe, the stipend, the estimate at latest, the exact run, the coverage', async (t) => {
  const { node, context } = setup({ relay: () => ({ callSucceeded: true, callGasUsed: 160_000n }), estimate: () => 300_000n })
  const worst = 315_000n * MAX_FEE
  const prepared = await prepareRunnerTransaction(context, relay, undefined, { token: weth, amount: worst, nonce: 3 })
  t.strictSame(prepared, {
    to: runner,
    data: dataAt(180_000n),
    callGas: 180_000n, // 160,000 + 10,000 + 10,000
    gas: 315_000n, // 300,000 × 1.05
    fees: FEES,
    l1FeeWei: 0n,
    weiPerBaseUnit: { numerator: 1n, denominator: 1n },
    coverage: { covered: true, requiredAmount: worst, worstCaseWei: worst },
    charge: KEPT, // the probe's refund made nothing (the payee is no refunder): the payee keeps the payment
    callGasUsed: 160_000n, // the probe's measure of the call
  })
  const [probe, estimate, exact] = node.runnerRequests
  t.equal(node.runnerRequests.length, 3)
  // the probe: the largest stipend, the gas to give it (15,000,000 + 500,000 room + 32 calldata + the refund's
  // 100,000 and its 1/63), no fee fields (nothing charged: the whole payment refunded, the refund measured)
  t.match(probe, { method: 'eth_call', functionName: 'relayWithAuthorization', callGas: 15_000_000n, gas: 15_601_619n, from: operator, blockTag: 'latest' })
  t.equal(probe!.maxFeePerGas, undefined, 'the probe runs without fee fields')
  t.equal(probe!.authorizationList, undefined)
  t.equal(probe!.data, dataAt(15_000_000n, undefined, REFUND_PROBE_CHARGE))
  // the estimate of the exact transaction: its stipend, its fees, at the latest block
  t.match(estimate, { method: 'eth_estimateGas', callGas: 180_000n, from: operator, blockTag: 'latest', maxFeePerGas: MAX_FEE, maxPriorityFeePerGas: 1_000_000n })
  t.equal(estimate!.gas, undefined, 'the estimate carries no gas limit')
  // the exact run: the gas limit and fees that will be signed
  t.match(exact, { method: 'eth_call', callGas: 180_000n, gas: 315_000n, maxFeePerGas: MAX_FEE, maxPriorityFeePerGas: 1_000_000n, from: operator, blockTag: 'latest' })
  t.equal(exact!.data, prepared.data)
  // one block read, one tip read, the chain id; no balance
  const asked = methods(node.seen)
  t.equal(asked.filter((method) => method === 'eth_getBlockByNumber').length, 1)
  t.equal(node.seen.find((request) => request.method === 'eth_getBlockByNumber')!.params[0], 'latest')
  t.equal(asked.filter((method) => method === 'eth_maxPriorityFeePerGas').length, 1)
  t.ok(asked.includes('eth_chainId'))
  t.notOk(asked.includes('eth_getBalance'))
  t.notOk('authorizationList' in prepared)

  // one wei short of the worst case: not covered, and the required amount said
  const short = await prepareRunnerTransaction(setup({ relay: () => ({ callSucceeded: true, callGasUsed: 160_000n }), estimate: () => 300_000n }).context, relay, undefined, {
    token: weth,
    amount: worst - 1n,
    nonce: 3,
  })
  t.strictSame(short.coverage, { covered: false, requiredAmount: worst, worstCaseWei: worst })
})

t.test('a payee that refunds: the probe measures its refund, the estimate runs at the dearest charge, the exact run and the data carry the charge', async (t) => {
  // The probe's refund took 6,773 gas: its cap is 7,023; weth is priced at a wei per base unit (10^18 units per ether).
  const { node, context } = setup({ relay: ({ gas }) => ({ callSucceeded: true, callGasUsed: 160_000n, refundGasUsed: gas === PROBE_GAS ? 6_773n : 6_700n }), estimate: () => 300_000n })
  const prepared = await prepareRunnerTransaction(context, relay, undefined, { token: weth, amount: 10n ** 15n, nonce: 3 })
  const calldata = calldataGas(dataAt(180_000n, undefined, { ...prepared.charge, baseGas: 0xffffffn, floorGas: 0xffffffn }))
  t.strictSame(prepared.charge, {
    baseGas: 21_000n + calldata,
    floorGas: 21_000n + (10n * calldata) / 4n,
    l1FeeWei: 0n,
    unitsPerEther: 10n ** 18n,
    markupBps: 500n,
    refundGas: 6_773n + REFUND_GAS_MARGIN,
  })
  t.equal(prepared.data, dataAt(180_000n, undefined, prepared.charge))
  const [, estimate, exact] = node.runnerRequests
  t.equal(estimate!.data, dataAt(180_000n, undefined, estimateCharge(7_023n, 500)), 'the estimate: every figure of the charge at its dearest bytes, the refund cap real')
  t.equal(exact!.data, prepared.data, 'the exact run: the charge that is signed')

  // A send: the cap measured at submit is signed again, with no probe.
  const send = setup({ relay: () => ({ callSucceeded: true, callGasUsed: 1n, refundGasUsed: 6_700n }), estimate: () => 200_000n })
  const sent = await prepareRunnerTransaction(send.context, relay, undefined, { token: weth, amount: 10n ** 15n, nonce: 0, callGas: 250_000n, refundGas: 7_023n, fees: FEES })
  t.equal(sent.charge.refundGas, 7_023n)
  t.strictSame(
    send.node.runnerRequests.map((request) => request.method),
    ['eth_estimateGas', 'eth_call'],
  )
})

t.test('a refund worth less than its own gas is not made (issue 48): estimated again without it, the payee keeps the payment', async (t) => {
  // A token whose refund takes 70,000 gas (its cap 70,250): at 1 wei per base unit, a payment of the worst case
  // (315,000 gas at the max fee, 1.201 gwei) leaves 315,000 × (1.201 − 1.001) gwei back at the expected fee (the
  // latest base fee and the tip, 1.001 gwei) after the charge (300,000 gas + 5 %): 6.3 × 10^13 wei, less than its
  // refund's 70,250 gas at that fee (7.03 × 10^13).
  const refunding = { relay: () => ({ callSucceeded: true, callGasUsed: 160_000n, refundGasUsed: 70_000n }), estimate: () => 300_000n }
  const fees = FEES
  const worst = 315_000n * fees.maxFeePerGas
  const { node, context } = setup(refunding)
  const prepared = await prepareRunnerTransaction(context, relay, undefined, { token: weth, amount: worst, nonce: 0, fees })
  t.strictSame(prepared.charge, KEPT, 'KEEP_PAYMENT: no refund')
  t.equal(prepared.data, dataAt(180_000n, undefined, KEPT))
  t.strictSame(
    node.runnerRequests.map((request) => request.method),
    ['eth_call', 'eth_estimateGas', 'eth_estimateGas', 'eth_call'],
    'the probe, the estimate with the refund, the estimate without it, the exact run',
  )
  t.equal(node.runnerRequests[2]!.data, dataAt(180_000n, undefined, KEPT), 'estimated again at the charge that keeps the payment')
  // A payment that leaves a refund worth its gas is refunded; one that does not cover the worst case keeps its refund
  // charge (it is not sent: nothing to weigh).
  const rich = setup(refunding)
  const refunded = await prepareRunnerTransaction(rich.context, relay, undefined, { token: weth, amount: worst + 10n ** 13n, nonce: 0, fees })
  t.equal(refunded.charge.refundGas, 70_000n + REFUND_GAS_MARGIN, 'refunded')
  const short = setup(refunding)
  const uncovered = await prepareRunnerTransaction(short.context, relay, undefined, { token: weth, amount: worst - 1n, nonce: 0, fees })
  t.equal(uncovered.coverage.covered, false)
  t.equal(uncovered.charge.refundGas, 70_000n + REFUND_GAS_MARGIN, 'not covered: the refund is not weighed')
})

t.test('a stipend that fails at the exact run is raised by half, twice at most', async (t) => {
  // succeeds from 400,000 on: 180,000 → 270,000 → 405,000
  const passing = setup({ relay: ({ gas, callGas }) => (gas === PROBE_GAS ? { callSucceeded: true, callGasUsed: 160_000n } : { callSucceeded: callGas >= 400_000n, callGasUsed: callGas, reason: errorString('too little') }) })
  const prepared = await prepareRunnerTransaction(passing.context, relay, undefined, { token: weth, amount: 1n, nonce: 0 })
  t.equal(prepared.callGas, 405_000n)
  t.equal(prepared.data, dataAt(405_000n))
  t.strictSame(
    passing.node.runnerRequests.map((request) => [request.method, request.callGas]),
    [
      ['eth_call', 15_000_000n],
      ['eth_estimateGas', 180_000n],
      ['eth_call', 180_000n],
      ['eth_estimateGas', 270_000n],
      ['eth_call', 270_000n],
      ['eth_estimateGas', 405_000n],
      ['eth_call', 405_000n],
    ],
  )
  t.equal(prepared.coverage.covered, false)

  // never succeeds: refused after the third try, with the call's reason and the sender's note
  const failing = setup({ relay: ({ gas, callGas }) => (gas === PROBE_GAS ? { callSucceeded: true, callGasUsed: 160_000n } : { callSucceeded: false, callGasUsed: callGas, reason: errorString('too little') }) })
  await refusal(
    t,
    prepareRunnerTransaction(failing.context, relay, undefined, { token: weth, amount: 1n, nonce: 0 }),
    `refused: the call fails in simulation with a 405000-gas stipend at the fees it would be sent with: the call reverted: too little${SENDER}${TAIL}`,
  )
  t.equal(failing.node.runnerRequests.filter((request) => request.method === 'eth_call').length, 4, 'the probe and three exact runs')
})

t.test('the stipend stops at relay.maxCallGas: the probe, the raise and the refusal', async (t) => {
  const capped = networkConfig({ relay: { ...config.relay, maxCallGas: 200_000 } })
  // the probe measures 195,000: its stipend (217,187) is capped at 200,000
  const { node, context } = setup({ config: capped, relay: ({ gas, callGas }) => (gas === 700_032n + REFUND_PROBE_GAS + REFUND_PROBE_GAS / 63n ? { callSucceeded: true, callGasUsed: 195_000n } : { callSucceeded: false, callGasUsed: callGas }) })
  await refusal(
    t,
    prepareRunnerTransaction(context, relay, undefined, { token: weth, amount: 1n, nonce: 0, explainCallFailure: async () => 'the replay says why' }),
    `refused: the call fails in simulation with a 200000-gas stipend at the fees it would be sent with: the replay says why${SENDER}${TAIL}`,
  )
  t.strictSame(
    node.runnerRequests.map((request) => [request.method, request.callGas, request.gas]),
    [
      ['eth_call', 200_000n, 700_032n + REFUND_PROBE_GAS + REFUND_PROBE_GAS / 63n],
      ['eth_estimateGas', 200_000n, undefined],
      ['eth_call', 200_000n, 315_000n],
    ],
    'no second try: the stipend is at the cap',
  )

  // 180,000 first, raised once to the cap (not to 270,000), then refused there
  const raised = setup({ config: capped, relay: ({ gas, callGas }) => (gas === 700_032n + REFUND_PROBE_GAS + REFUND_PROBE_GAS / 63n ? { callSucceeded: true, callGasUsed: 160_000n } : { callSucceeded: false, callGasUsed: callGas }) })
  await refusal(
    t,
    prepareRunnerTransaction(raised.context, relay, undefined, { token: weth, amount: 1n, nonce: 0 }),
    `refused: the call fails in simulation with a 200000-gas stipend at the fees it would be sent with${SENDER}${TAIL}`,
  )
  t.strictSame(
    raised.node.runnerRequests.filter((request) => request.method === 'eth_call').map((request) => request.callGas),
    [200_000n, 180_000n, 200_000n],
  )
})

t.test('a call that fails the probe is refused with its reason; nothing else is asked', async (t) => {
  const { node, context } = setup({ relay: () => ({ callSucceeded: false, callGasUsed: 5n, reason: errorString('nope') }) })
  let explained = 0
  await refusal(
    t,
    prepareRunnerTransaction(context, relay, undefined, {
      token: weth,
      amount: 1n,
      nonce: 0,
      explainCallFailure: async () => {
        explained++
        return 'not asked'
      },
    }),
    `refused: the call fails in simulation even with 15000000 gas: the call reverted: nope${SENDER}${TAIL}`,
  )
  t.equal(explained, 0, 'revert data says it: no replay')
  t.strictSame(methods(node.seen).filter((method) => method === 'eth_estimateGas'), [])

  // no revert data: the explanation asked, or none
  const silent = setup({ relay: () => ({ callSucceeded: false, callGasUsed: 5n }) })
  await refusal(
    t,
    prepareRunnerTransaction(silent.context, relay, undefined, { token: weth, amount: 1n, nonce: 0, explainCallFailure: async () => 'Calibur says: too little received' }),
    `refused: the call fails in simulation even with 15000000 gas: Calibur says: too little received${SENDER}${TAIL}`,
  )
  await refusal(
    t,
    prepareRunnerTransaction(setup({ relay: () => ({ callSucceeded: false, callGasUsed: 5n }) }).context, relay, undefined, { token: weth, amount: 1n, nonce: 0, explainCallFailure: async () => undefined }),
    `refused: the call fails in simulation even with 15000000 gas${SENDER}${TAIL}`,
  )
  await refusal(
    t,
    prepareRunnerTransaction(setup({ relay: () => ({ callSucceeded: false, callGasUsed: 5n }) }).context, relay, undefined, { token: weth, amount: 1n, nonce: 0 }),
    `refused: the call fails in simulation even with 15000000 gas${SENDER}${TAIL}`,
  )
})

t.test('a delegate batch: relayBatch, its own refusal word, no note on msg.sender', async (t) => {
  const { node, context } = setup({ relay: () => ({ callSucceeded: false, callGasUsed: 5n, reason: errorString('nope') }) })
  await refusal(t, prepareRunnerTransaction(context, batch, undefined, { token: weth, amount: 777n, nonce: 0, refusal: 'cannot quote' }), `cannot quote: the call fails in simulation even with 15000000 gas: the call reverted: nope${TAIL}`)
  // the probe's gas: 15,000,000 + 500,000 + both batches' data (the payment batch's 6 non-zero bytes: 96; the
  // calls batch's 5 non-zero bytes and 1 zero: 84) + the refund's probe cap and its 1/63
  t.match(node.runnerRequests[0], { functionName: 'relayBatch', callGas: 15_000_000n, gas: 15_500_180n + REFUND_PROBE_GAS + REFUND_PROBE_GAS / 63n })
  t.equal(node.runnerRequests[0]!.data, batchData(15_000_000n, REFUND_PROBE_CHARGE), 'the payment batch and its gas cap, then the calls batch and its stipend')

  const passing = setup({ relay: () => ({ callSucceeded: true, callGasUsed: 16_000n }), estimate: () => 100_000n })
  const prepared = await prepareRunnerTransaction(passing.context, batch, undefined, { token: weth, amount: 777n, nonce: 0 })
  t.equal(prepared.callGas, 27_000n) // 16,000 + 1,000 + 10,000
  t.equal(prepared.gas, 105_000n)
  t.equal(prepared.data, batchData(27_000n))
  t.strictSame(
    passing.node.runnerRequests.map((request) => [request.method, (request.args[2] as { paymentGas: bigint }).paymentGas, request.callGas]),
    [
      ['eth_call', 150_000n, 15_000_000n],
      ['eth_estimateGas', 150_000n, 27_000n],
      ['eth_call', 150_000n, 27_000n],
    ],
    'every run caps the payment batch at its paymentGas; only the stipend changes',
  )
})

t.test('a delegate batch whose payment batch reverts: refused, PaymentFailed said with the nested reason in the delegate’s words', async (t) => {
  const abi = parseAbi(['error CallFailed(bytes reason)'])
  const reader: Delegate = fakeDelegate({
    errors: { abi, describe: (name, args, nested) => (name === 'CallFailed' ? nested(args[0] as Hex) : undefined) },
    read: () => undefined,
  })
  const failed = encodeErrorResult({
    abi: runnerErrors,
    errorName: 'PaymentFailed',
    args: [encodeErrorResult({ abi, errorName: 'CallFailed', args: [errorString('ERC20: transfer amount exceeds balance')] })],
  })
  const node = runnerNode({ relay: () => revert(failed) })
  await refusal(
    t,
    prepareRunnerTransaction(relayContext(node, operator, [reader]).context, batch, undefined, { token: weth, amount: 777n, nonce: 0, refusal: 'cannot quote' }),
    'cannot quote: the payment batch (payment.batch) failed: the call reverted: ERC20: transfer amount exceeds balance',
  )
  t.equal(node.runnerRequests.length, 1, 'refused at the probe: nothing estimated')
  // at the estimate too
  await refusal(
    t,
    prepareRunnerTransaction(relayContext(runnerNode({ estimate: () => revert(failed) }), operator, [reader]).context, batch, undefined, { token: weth, amount: 777n, nonce: 0 }),
    'refused: the payment batch (payment.batch) failed: the call reverted: ERC20: transfer amount exceeds balance',
  )
})

t.test('no call (to the zero address): a probe of the payment and its refund alone, a zero stipend, and a failed call phase is no failure', async (t) => {
  const { node, context } = setup({ relay: () => ({ callSucceeded: false, callGasUsed: 0n }), estimate: () => 100_000n })
  const prepared = await prepareRunnerTransaction(context, relayOf({ to: zeroAddress, data: '0x' }), undefined, { token: weth, amount: 1n, nonce: 0 })
  t.equal(prepared.callGas, 0n)
  t.equal(prepared.gas, 105_000n)
  t.strictSame(
    node.runnerRequests.map((request) => [request.method, request.callGas, request.gas]),
    [
      ['eth_call', 0n, 500_000n + REFUND_PROBE_GAS + REFUND_PROBE_GAS / 63n],
      ['eth_estimateGas', 0n, undefined],
      ['eth_call', 0n, 105_000n],
    ],
  )
})

t.test('a send: the stipend and fees known, the estimate joins the first batch and no fees are read', async (t) => {
  const fees = { maxFeePerGas: 5_000_000_000n, maxPriorityFeePerGas: 2n }
  const { node, context } = setup({ relay: () => ({ callSucceeded: true, callGasUsed: 1n }), estimate: () => 200_000n })
  const prepared = await prepareRunnerTransaction(context, relay, undefined, { token: weth, amount: 1n, nonce: 0, callGas: 250_000n, fees })
  t.strictSame(prepared.fees, fees)
  t.equal(prepared.callGas, 250_000n)
  t.equal(prepared.gas, 210_000n)
  t.strictSame(
    node.runnerRequests.map((request) => [request.method, request.callGas, request.gas, request.maxFeePerGas]),
    [
      ['eth_estimateGas', 250_000n, undefined, 5_000_000_000n],
      ['eth_call', 250_000n, 210_000n, 5_000_000_000n],
    ],
  )
  t.notOk(methods(node.seen).includes('eth_maxPriorityFeePerGas'), 'fees given: not read')
  t.equal(prepared.coverage.requiredAmount, 210_000n * 5_000_000_000n)

  // the first exact run fails: the raise is estimated anew
  const retried = setup({ relay: ({ callGas }) => ({ callSucceeded: callGas > 250_000n, callGasUsed: 1n }), estimate: ({ callGas }) => 200_000n + callGas })
  const again = await prepareRunnerTransaction(retried.context, relay, undefined, { token: weth, amount: 1n, nonce: 0, callGas: 250_000n, fees })
  t.equal(again.callGas, 375_000n)
  t.equal(again.gas, (575_000n * 10_500n) / 10_000n)
  t.strictSame(
    retried.node.runnerRequests.map((request) => [request.method, request.callGas]),
    [
      ['eth_estimateGas', 250_000n],
      ['eth_call', 250_000n],
      ['eth_estimateGas', 375_000n],
      ['eth_call', 375_000n],
    ],
  )

  // a stipend given without fees: no probe, the fees read, the estimate after them
  const noFees = setup({ relay: () => ({ callSucceeded: true, callGasUsed: 1n }), estimate: () => 200_000n })
  const read = await prepareRunnerTransaction(noFees.context, relay, undefined, { token: weth, amount: 1n, nonce: 0, callGas: 250_000n })
  t.strictSame(read.fees, FEES)
  t.strictSame(
    noFees.node.runnerRequests.map((request) => [request.method, request.callGas, request.maxFeePerGas]),
    [
      ['eth_estimateGas', 250_000n, MAX_FEE],
      ['eth_call', 250_000n, MAX_FEE],
    ],
  )
})

t.test('the transaction cap: the block gas limit or 2²⁴, whichever is lower', async (t) => {
  // a block of 1,000,000 gas: the estimate may reach it, the signed limit is cut to it
  const small = setup({ blockGasLimit: 1_000_000n, relay: () => ({ callSucceeded: true, callGasUsed: 100_000n }), estimate: () => 1_000_000n })
  const prepared = await prepareRunnerTransaction(small.context, relay, undefined, { token: weth, amount: 1n, nonce: 0 })
  t.equal(prepared.gas, 1_000_000n, 'not 1,050,000')
  t.equal(small.node.runnerRequests.at(-1)!.gas, 1_000_000n)
  // the probe's own gas is not cut: it asks for the cap it probes with
  t.equal(small.node.runnerRequests[0]!.gas, PROBE_GAS)
  // the stipend is capped by the block: 1,000,000 − 500,000 − 32
  const capped = setup({ blockGasLimit: 1_000_000n, relay: () => ({ callSucceeded: true, callGasUsed: 600_000n }), estimate: () => 900_000n })
  t.equal((await prepareRunnerTransaction(capped.context, relay, undefined, { token: weth, amount: 1n, nonce: 0 })).callGas, 499_968n)

  await refusal(
    t,
    prepareRunnerTransaction(setup({ blockGasLimit: 1_000_000n, estimate: () => 1_000_001n }).context, relay, undefined, { token: weth, amount: 1n, nonce: 0 }),
    'refused: the transaction needs 1000001 gas, over the 1000000 one transaction may carry on local',
  )
  // a block above 2²⁴: EIP-7825's cap
  await refusal(
    t,
    prepareRunnerTransaction(setup({ blockGasLimit: 60_000_000n, estimate: () => 16_777_217n }).context, relay, undefined, { token: weth, amount: 1n, nonce: 0, refusal: 'cannot quote' }),
    'cannot quote: the transaction needs 16777217 gas, over the 16777216 one transaction may carry on local',
  )
  const big = setup({ blockGasLimit: 60_000_000n, estimate: () => 16_000_000n })
  t.equal((await prepareRunnerTransaction(big.context, relay, undefined, { token: weth, amount: 1n, nonce: 0 })).gas, 16_777_216n)

  // no room for the call beside the payment phase: refused, whatever the probe said
  await refusal(
    t,
    prepareRunnerTransaction(setup({ blockGasLimit: 500_032n }).context, relay, undefined, { token: weth, amount: 1n, nonce: 0 }),
    "refused: the call's data is too large for one transaction on local",
  )
  // one gas of room: a 1-gas stipend
  const tight = setup({ blockGasLimit: 500_033n, estimate: () => 400_000n })
  t.equal((await prepareRunnerTransaction(tight.context, relay, undefined, { token: weth, amount: 1n, nonce: 0 })).callGas, 1n)
})

t.test('a payment phase that reverts is the caller’s refusal, in the payment token’s words', async (t) => {
  const short = encodeErrorResult({ abi: runnerErrors, errorName: 'PaymentShort', args: [100_000_000_000_000_000n, 150_000_000_000_000_000n] })
  const message = 'refused: the payment is short (payment.authorization.value): payment short: the payee would receive 0.1 WETH of the 0.15 WETH required'
  await refusal(t, prepareRunnerTransaction(setup({ relay: () => revert(short) }).context, relay, undefined, { token: weth, amount: 1n, nonce: 0 }), message)
  // at the estimate, and at the exact run
  await refusal(t, prepareRunnerTransaction(setup({ estimate: () => revert(short) }).context, relay, undefined, { token: weth, amount: 1n, nonce: 0 }), message)
  await refusal(
    t,
    prepareRunnerTransaction(setup({ relay: ({ maxFeePerGas }) => (maxFeePerGas === undefined ? { callSucceeded: true, callGasUsed: 1n } : revert(short)) }).context, relay, undefined, {
      token: weth,
      amount: 1n,
      nonce: 0,
      refusal: 'cannot quote',
    }),
    'cannot quote: the payment is short (payment.authorization.value): payment short: the payee would receive 0.1 WETH of the 0.15 WETH required',
  )
})

t.test('a node error without revert data is the chain’s, passed on as it is', async (t) => {
  const outage = () => {
    throw Object.assign(new Error('header not found'), { code: -32000 })
  }
  for (const options of [{ relay: outage }, { estimate: outage }] as RunnerNodeOptions[]) {
    const error = await prepareRunnerTransaction(setup(options).context, relay, undefined, { token: weth, amount: 1n, nonce: 0 }).catch((error: unknown) => error)
    t.notOk(error instanceof ToolError, 'not a refusal')
    t.notOk(error instanceof BrunoFault, 'not a fault of the runner')
    t.match((error as Error).message, /header not found/)
  }
  // at the estimate (with fees): the operator's balance is not asked about an outage
  const node = runnerNode({ estimate: outage })
  await prepareRunnerTransaction(relayContext(node, operator).context, relay, undefined, { token: weth, amount: 1n, nonce: 0 }).catch(() => undefined)
  t.notOk(methods(node.seen).includes('eth_getBalance'))
})

t.test('the operator short of ETH is Bruno’s fault, not the caller’s', async (t) => {
  const insufficient = () => {
    throw Object.assign(new Error('insufficient funds for gas * price + value'), { code: -32000 })
  }
  for (const options of [{ relay: insufficient }, { estimate: insufficient }] as RunnerNodeOptions[]) {
    const error = await prepareRunnerTransaction(setup(options).context, relay, undefined, { token: weth, amount: 1n, nonce: 0 }).catch((error: unknown) => error)
    t.type(error, BrunoFault)
    t.equal((error as Error).message, "the runner's ETH balance is too low to pay for gas")
    t.match((error as Error & { cause: Error }).cause.message, /insufficient funds/i)
  }

  // "gas required exceeds allowance" at the fees: the operator's balance decides (2²⁴ gas at the max fee)
  const allowance = () => {
    throw Object.assign(new Error('gas required exceeds allowance (0)'), { code: -32000 })
  }
  const enough = 16_777_216n * MAX_FEE
  const at = async (balance: bigint | undefined, options: RunnerNodeOptions = {}) => {
    const node = runnerNode({
      estimate: allowance,
      ...(balance === undefined
        ? {}
        : {
            balance: (address: string) => {
              if (getAddress(address) !== operator) throw new Error(`balance of ${address}`)
              return balance
            },
          }),
      ...options,
    })
    const { context } = relayContext(node, operator)
    const error = await prepareRunnerTransaction(context, relay, undefined, { token: weth, amount: 1n, nonce: 0 }).catch((error: unknown) => error)
    return { error: error as Error, node }
  }
  const poor = await at(enough - 1n)
  t.type(poor.error, BrunoFault)
  t.equal(poor.error.message, "the runner's ETH balance is too low to pay for gas")
  const balanceRequest = poor.node.seen.find((request) => request.method === 'eth_getBalance')!
  t.equal(getAddress(balanceRequest.params[0] as string), operator)
  const rich = await at(enough)
  t.notOk(rich.error instanceof BrunoFault, 'the balance bounds nothing: the transaction cap does')
  t.notOk(rich.error instanceof ToolError)
  t.match(rich.error.message, /gas required exceeds allowance/)
  // a balance the node cannot tell: not blamed on the balance
  const unknown = await at(0n, {
    balance: () => {
      throw new Error('no balance')
    },
  })
  t.notOk(unknown.error instanceof BrunoFault)
  t.match(unknown.error.message, /gas required exceeds allowance/)
  // a zero max fee: the balance bounds nothing
  const free = await at(0n, { baseFeePerGas: 0n, tip: 0n })
  t.notOk(free.error instanceof BrunoFault)
  t.match(free.error.message, /gas required exceeds allowance/)
  // the same words at the probe (no fees): the chain's error, the balance not asked
  const probe = runnerNode({ relay: allowance })
  const probeError = await prepareRunnerTransaction(relayContext(probe, operator).context, relay, undefined, { token: weth, amount: 1n, nonce: 0 }).catch((error: unknown) => error as Error)
  t.notOk(probeError instanceof BrunoFault)
  t.notOk(methods(probe.seen).includes('eth_getBalance'))
})

/** An authorization to 0x…ca1 at `nonce`, signed by the account a relay of `call` runs (its `to`). */
async function accountAuthorization(nonce: number) {
  const signed = await ACCOUNT.signAuthorization({ contractAddress: a(0xca1), chainId: 31337, nonce })
  return { chainId: 31337, address: a(0xca1), nonce, r: signed.r, s: signed.s, yParity: signed.yParity as 0 | 1 }
}

t.test('an authorization list rides on every simulation and on the prepared transaction', async (t) => {
  const { r, s, yParity } = await accountAuthorization(4)
  const list = [{ chainId: 31337, address: a(0xca1).toLowerCase(), nonce: 4, r, s, v: String(27 + yParity) }] as never
  const { node, context } = setup({ relay: () => ({ callSucceeded: true, callGasUsed: 1n }), eoaNonce: 4 })
  const prepared = await prepareRunnerTransaction(context, relayOf(accountCall), list, { token: weth, amount: 1n, nonce: 0 })
  t.strictSame(prepared.authorizationList, [{ address: a(0xca1), chainId: 31337, nonce: 4, r, s, yParity }])
  t.equal(node.runnerRequests.length, 3)
  for (const request of node.runnerRequests) t.match(request.authorizationList, [{ address: a(0xca1).toLowerCase(), chainId: '0x7a69', nonce: '0x4', r, s, yParity: `0x${yParity}` }], request.method)
})

t.test('an authorization the chain would skip, or by another account than the relayed one, is refused', async (t) => {
  const { context } = setup({ eoaNonce: 5 })
  const stale = [await accountAuthorization(4)]
  await refusal(t, prepareRunnerTransaction(context, relayOf(accountCall), stale, { token: weth, amount: 1n, nonce: 0 }), "refused: authorizationList[0] carries nonce 4; the account's EOA nonce is 5. Bruno's runner sends the transaction, not the account, so the authorization must carry the account's current nonce")
  await refusal(t, prepareRunnerTransaction(context, relay, stale, { token: weth, amount: 1n, nonce: 0 }), `refused: authorizationList[0] is signed by ${ACCOUNT.address}, not by the account ${target} whose calls the relay runs: only that account's own authorization is sent with them`)
})

t.test('OP-stack: the L1 data fee of the exact transaction (at the given nonce) is priced in', async (t) => {
  const opConfig = networkConfig({ l1DataFee: 'op-stack' })
  const { node, context } = setup({ config: opConfig, relay: () => ({ callSucceeded: true, callGasUsed: 160_000n }), estimate: () => 300_000n, l1Fee: 1_000n })
  const worst = 315_000n * MAX_FEE + 1_250n
  const prepared = await prepareRunnerTransaction(context, relay, undefined, { token: weth, amount: worst, nonce: 7 })
  t.equal(prepared.l1FeeWei, 1_250n)
  t.strictSame(prepared.coverage, { covered: true, requiredAmount: worst, worstCaseWei: worst })
  t.strictSame(node.oracleAsked, [
    serializeAsSigned(31337, { to: runner, data: dataAt(180_000n), gas: 315_000n, nonce: 7, ...FEES }),
  ])
  const short = setup({ config: opConfig, relay: () => ({ callSucceeded: true, callGasUsed: 160_000n }), estimate: () => 300_000n, l1Fee: 1_000n })
  t.equal((await prepareRunnerTransaction(short.context, relay, undefined, { token: weth, amount: worst - 1n, nonce: 7 })).coverage.covered, false)
})

t.test('a node on another chain is refused before anything is priced', async (t) => {
  const error = await prepareRunnerTransaction(setup({ chainId: 8453 }).context, relay, undefined, { token: weth, amount: 1n, nonce: 0 }).catch((error: unknown) => error)
  t.type(error, ChainUnavailableError)
  t.match((error as Error).message, /8453/)
})

t.test('OP-stack with an authorization list: the L1 data fee of the EIP-7702 transaction', async (t) => {
  const item = await accountAuthorization(4)
  const { node, context } = setup({ config: networkConfig({ l1DataFee: 'op-stack' }), relay: () => ({ callSucceeded: true, callGasUsed: 160_000n }), estimate: () => 300_000n, l1Fee: 8n, eoaNonce: 4 })
  const prepared = await prepareRunnerTransaction(context, relayOf(accountCall), [item], { token: weth, amount: 1n, nonce: 2 })
  t.equal(prepared.l1FeeWei, 10n)
  t.strictSame(node.oracleAsked, [
    serializeAsSigned(31337, { to: runner, data: dataAt(180_000n, accountCall), gas: 315_000n, nonce: 2, ...FEES, authorizationList: [{ address: a(0xca1), chainId: 31337, nonce: 4, r: item.r, s: item.s, yParity: item.yParity }] }),
  ])
})

t.test('a delegate’s errors are said in its group’s words, at the probe and in the payment phase', async (t) => {
  const abi = parseAbi(['error TooLittle(uint256 got)'])
  const reader: Delegate = fakeDelegate({
    errors: { abi, describe: (name, args) => (name === 'TooLittle' ? `too little: ${String(args[0])}` : undefined) },
    read: () => undefined,
  })
  const data = encodeErrorResult({ abi, errorName: 'TooLittle', args: [5n] })
  const withReader = (options: RunnerNodeOptions) => {
    const node = runnerNode(options)
    return relayContext(node, operator, [reader]).context
  }
  await refusal(
    t,
    prepareRunnerTransaction(withReader({ relay: () => ({ callSucceeded: false, callGasUsed: 1n, reason: data }) }), relay, undefined, { token: weth, amount: 1n, nonce: 0 }),
    `refused: the call fails in simulation even with 15000000 gas: too little: 5${SENDER}${TAIL}`,
  )
  await refusal(
    t,
    prepareRunnerTransaction(withReader({ relay: () => revert(data) }), relay, undefined, { token: weth, amount: 1n, nonce: 0 }),
    "refused: the token refused the payment: too little: 5. Check payment.authorization and payment.signature against payment_authorization's typedData",
  )
})

t.test('a payment that reverts is diagnosed after the refusal: a token without signed transfers, a payer short of the amount (issue 29, point 3)', async (t) => {
  const invalid = errorString('FiatTokenV2: invalid signature')
  // a token that answers no authorizationState (WETH9): which forms can pay in it
  let node = runnerNode({ relay: () => revert(invalid), signedTransfers: false })
  await refusal(
    t,
    prepareRunnerTransaction(relayContext(node, operator).context, relay, undefined, { token: weth, amount: 1n, nonce: 0 }),
    `refused: WETH cannot pay by signed transfer on local: ${weth.address} has no EIP-3009 transferWithAuthorization. ` +
      'Pay it with payment "batch" (a delegated account\'s payment batch transfers WETH: calibur_batch), or by signed transfer in USDC (payment_authorization)',
  )
  // a payer holding less than its signed transfer's value: the shortfall, not the token's words
  node = runnerNode({ relay: () => revert(errorString('ERC20: transfer amount exceeds balance')), tokenBalance: (_token, holder) => (holder === payer ? 4n : 10n ** 30n) })
  await refusal(
    t,
    prepareRunnerTransaction(relayContext(node, operator).context, relay, undefined, { token: weth, amount: 1n, nonce: 0 }),
    `refused: the payer ${payer} holds 0.000000000000000004 WETH, less than the 0.0000000000000005 WETH its payment transfers (payment.authorization.value): fund it with WETH, or pay in another token`,
  )
  // both fine: the token's words, with the field they name
  node = runnerNode({ relay: () => revert(invalid) })
  await refusal(
    t,
    prepareRunnerTransaction(relayContext(node, operator).context, relay, undefined, { token: weth, amount: 1n, nonce: 0 }),
    "refused: the token refused the payment: FiatTokenV2: invalid signature. payment.signature is not payment.authorization.from's signature of payment.authorization " +
      "(another key signed it, or a field changed after signing): sign payment_authorization's typedData unchanged, with from's own key",
  )
  // a refusal that is not the payment's (the gas) reads nothing more
  node = runnerNode({ relay: () => revert(encodeErrorResult({ abi: runnerErrors, errorName: 'GasShort', args: [1n, 2n] })) })
  await refusal(t, prepareRunnerTransaction(relayContext(node, operator).context, relay, undefined, { token: weth, amount: 1n, nonce: 0 }), 'refused: the gas limit cannot give the call its whole stipend (GasShort)')
  t.notOk(node.seen.some((request) => request.method === 'eth_call' && !(request.params[0] as { to: string }).to.toLowerCase().includes(node.runner.slice(2).toLowerCase())), 'no token read')
})

t.test('fees given without a stipend (the runner re-measuring): probed, estimated once, at the given fees', async (t) => {
  const fees = { maxFeePerGas: 5_000_000_000n, maxPriorityFeePerGas: 2n }
  const { node, context } = setup({ relay: () => ({ callSucceeded: true, callGasUsed: 160_000n }), estimate: ({ callGas }) => 120_000n + callGas })
  const prepared = await prepareRunnerTransaction(context, relay, undefined, { token: weth, amount: 1n, nonce: 0, fees })
  t.equal(prepared.callGas, 180_000n)
  t.equal(prepared.gas, (300_000n * 10_500n) / 10_000n)
  t.strictSame(
    node.runnerRequests.map((request) => [request.method, request.callGas, request.maxFeePerGas]),
    [
      ['eth_call', 15_000_000n, undefined],
      ['eth_estimateGas', 180_000n, 5_000_000_000n],
      ['eth_call', 180_000n, 5_000_000_000n],
    ],
  )
})

t.test('a send’s estimate leaves with the first reads: it is asked before the block is answered', async (t) => {
  const fees = { maxFeePerGas: 5_000_000_000n, maxPriorityFeePerGas: 2n }
  let estimatedBeforeBlock = false
  const { node, context } = setup({
    relay: () => ({ callSucceeded: true, callGasUsed: 1n }),
    estimate: () => 200_000n,
    // the block is answered once the estimate has been asked, or after two seconds without it
    blockGate: async () => {
      const until = Date.now() + 2_000
      while (!node.seen.some((request) => request.method === 'eth_estimateGas') && Date.now() < until) await yieldOnce()
      estimatedBeforeBlock = node.seen.some((request) => request.method === 'eth_estimateGas')
    },
  })
  await prepareRunnerTransaction(context, relay, undefined, { token: weth, amount: 1n, nonce: 0, callGas: 250_000n, fees })
  t.ok(estimatedBeforeBlock)
})
