import t from 'tap'
import { encodeAbiParameters, encodeEventTopics, encodeFunctionData, encodeFunctionResult, getAddress, parseAbi, parseSignature, type Hex, type Log } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { runnerAbi } from '../../contracts/abi.ts'
import { decodeRelayResult, encodeRunnerCall, relayedEvent, RUNNER_SETTLE_GAS, type RunnerRelay } from '../../core/relay/runnerCall.ts'
import { calldataGas, MAX_TRANSACTION_GAS, runnerGasLimit, stipendFor } from '../../core/relay/runnerTransaction.ts'
import { viemAuthorizations } from '../../core/relay/delegation7702.ts'

// The runner transaction's arithmetic and encoding (core/relay/runnerTransaction.ts, runnerCall.ts):
// gas figures computed by hand, calldata against the Runner's functions written from contracts/Runner.sol.

const runnerFunctions = parseAbi([
  'struct Authorization { address from; uint256 value; uint256 validAfter; uint256 validBefore; bytes32 nonce; bytes signature; }',
  'struct Charge { uint256 baseGas; uint256 floorGas; uint256 l1FeeWei; uint256 unitsPerEther; uint256 markupBps; uint256 refundGas; }',
  'function relayWithAuthorization(address target, bytes data, uint256 callGas, address token, address payee, uint256 amount, Authorization authorization, Charge charge) returns (bool callSucceeded, uint256 callGasUsed, bytes reason, uint256 refundGasUsed)',
  'function relayBatch(address account, address delegate, (address target, bytes payment, uint256 paymentGas, bytes data) batches, uint256 callGas, address token, address payee, uint256 amount, Charge charge) returns (bool callSucceeded, uint256 callGasUsed, bytes reason, uint256 refundGasUsed)',
  'event Relayed(address indexed target, address indexed payee, uint256 received, uint256 charged, uint256 refunded, bool callSucceeded, bytes reason)',
])
/** The charge that asks no refund: what the relay sends for now. */
const KEPT = { baseGas: 0n, floorGas: 0n, l1FeeWei: 0n, unitsPerEther: 0n, markupBps: 0n, refundGas: 0n } as const

const a = (n: number) => getAddress(`0x${n.toString(16).padStart(40, '0')}`)
const runner = a(0xb0b)

t.test('constants mirrored from the contract and the EIPs', async (t) => {
  t.equal(RUNNER_SETTLE_GAS, 25_000n)
  t.equal(MAX_TRANSACTION_GAS, 16_777_216n)
})

t.test('calldataGas: 4 per zero byte, 16 per other byte', async (t) => {
  t.equal(calldataGas('0x'), 0n)
  t.equal(calldataGas('0x00'), 4n)
  t.equal(calldataGas('0x01'), 16n)
  t.equal(calldataGas('0x10'), 16n, 'a zero nibble is not a zero byte')
  t.equal(calldataGas('0x0000ff00a0'), 4n + 4n + 16n + 4n + 16n)
})

t.test('stipendFor: used + used/16 + 10,000', async (t) => {
  t.equal(stipendFor(160_000n), 180_000n)
  t.equal(stipendFor(0n), 10_000n)
  t.equal(stipendFor(31n), 31n + 1n + 10_000n)
})

t.test('runnerGasLimit: the Runner’s spending, the calldata floor, the headroom', async (t) => {
  // runnerData 0x00ff (4 + 16 = 20), copied data 33 bytes (2 words: 6 + 0 memory), call 63,000 (+1,000 kept back)
  const parts = { runnerData: '0x00ff' as Hex, copiedData: `0x${'11'.repeat(33)}` as Hex, beforeCall: 110_000n, callGas: 63_000n, authorizationGas: 25_000n, gasLimitBps: 10_000 }
  const least = 21_000n + 20n + 25_000n + 110_000n + 6n + 0n + 63_000n + 1_000n + 25_000n
  t.equal(runnerGasLimit(parts), least)
  t.equal(runnerGasLimit({ ...parts, gasLimitBps: 10_500 }), (least * 10_500n) / 10_000n)
  t.equal(runnerGasLimit({ ...parts, gasLimitBps: 10_001 }), (least * 10_001n) / 10_000n, 'rounded down')
  // memory expansion: 1,024 words cost 3×1,024 + 1,024²/512
  const big = { ...parts, copiedData: `0x${'00'.repeat(32 * 1024)}` as Hex }
  t.equal(runnerGasLimit(big), least - 6n + 3n * 1024n + 2048n)
  // 31 bytes round up to one word; none is none
  t.equal(runnerGasLimit({ ...parts, copiedData: `0x${'11'.repeat(31)}` as Hex }), least - 6n + 3n)
  t.equal(runnerGasLimit({ ...parts, copiedData: '0x' }), least - 6n)
  // the EIP-7623 floor: 21,000 + 10 × tokens (a non-zero byte is 4 tokens) = 21,000 + 10 × calldataGas / 4
  const heavy = { runnerData: `0x${'ff'.repeat(10_000)}` as Hex, copiedData: '0x' as Hex, beforeCall: 0n, callGas: 0n, authorizationGas: 0n, gasLimitBps: 10_000 }
  t.equal(runnerGasLimit(heavy), 21_000n + 400_000n, 'the floor, above 21,000 + 160,000 + 25,000')
  t.equal(runnerGasLimit({ ...heavy, gasLimitBps: 12_000 }), ((21_000n + 400_000n) * 12n) / 10n)
  // no calldata: the Runner's own spending, above the bare 21,000 floor
  const even = { ...heavy, runnerData: '0x' as Hex }
  t.equal(runnerGasLimit(even), 21_000n + 25_000n)
})

t.test('viemAuthorizations: checksummed, yParity kept or derived from v, v dropped', async (t) => {
  t.equal(viemAuthorizations(undefined), undefined)
  const r = `0x${'01'.repeat(32)}` as Hex
  const s = `0x${'02'.repeat(32)}` as Hex
  t.strictSame(
    viemAuthorizations([
      { chainId: 1, address: a(0xca1).toLowerCase(), nonce: 3, r, s, yParity: 1 },
      { chainId: 2, address: a(0xca1), nonce: 4, r, s, v: '27' },
    ] as never),
    [
      { address: a(0xca1), chainId: 1, nonce: 3, r, s, yParity: 1 },
      { address: a(0xca1), chainId: 2, nonce: 4, r, s, yParity: 0 },
    ],
  )
})

t.test('encodeRunnerCall: relayBatch and relayWithAuthorization, as the contract declares them', async (t) => {
  const batch: RunnerRelay = { form: 'batch', account: a(1), delegate: a(2), target: a(5), paymentData: '0xc3c16ee401', paymentGas: 150_000n, data: '0xc3c16ee4', token: a(3), payee: a(4), amount: 150_000n }
  t.equal(
    encodeRunnerCall(batch, 180_000n),
    encodeFunctionData({ abi: runnerFunctions, functionName: 'relayBatch', args: [a(1), a(2), { target: a(5), payment: '0xc3c16ee401', paymentGas: 150_000n, data: '0xc3c16ee4' }, 180_000n, a(3), a(4), 150_000n, KEPT] }),
  )
  // a charge is its own argument, as given
  const charge = { baseGas: 30_000n, floorGas: 25_000n, l1FeeWei: 7n, unitsPerEther: 3_000_000_000n, markupBps: 500n, refundGas: 7_000n }
  t.equal(
    encodeRunnerCall(batch, 180_000n, charge),
    encodeFunctionData({ abi: runnerFunctions, functionName: 'relayBatch', args: [a(1), a(2), { target: a(5), payment: '0xc3c16ee401', paymentGas: 150_000n, data: '0xc3c16ee4' }, 180_000n, a(3), a(4), 150_000n, charge] }),
  )
  // the payment batch and its gas cap are their own arguments, not swapped with the calls' batch and stipend
  t.not(
    encodeRunnerCall(batch, 180_000n),
    encodeRunnerCall({ ...batch, paymentData: batch.data, data: batch.paymentData, paymentGas: 180_000n }, 150_000n),
  )
  // the target is its own argument, not the account
  t.not(encodeRunnerCall(batch, 180_000n), encodeRunnerCall({ ...batch, target: batch.account }, 180_000n))

  const signer = privateKeyToAccount('0x0000000000000000000000000000000000000000000000000000000000000002')
  const nonce = `0x${'ab'.repeat(32)}` as Hex
  for (const signature of [await signer.signMessage({ message: 'one' }), await signer.signMessage({ message: 'two' })]) {
    const { v } = parseSignature(signature)
    const relay: RunnerRelay = {
      form: 'authorization',
      call: { to: a(5).toLowerCase() as never, data: '0xabcd' },
      payment: { token: a(3).toLowerCase(), authorization: { from: signer.address.toLowerCase(), to: a(4), value: '150000', validAfter: '1', validBefore: '1900000000', nonce }, signature } as never,
      payee: a(4),
    }
    t.equal(
      encodeRunnerCall(relay, 90_000n),
      encodeFunctionData({
        abi: runnerFunctions,
        functionName: 'relayWithAuthorization',
        args: [a(5), '0xabcd', 90_000n, a(3), a(4), 150_000n, { from: signer.address, value: 150_000n, validAfter: 1n, validBefore: 1_900_000_000n, nonce, signature }, KEPT],
      }),
      `v ${v}`,
    )
  }
  // a compact-style signature ending in a yParity byte (0/1) is sent with v = 27/28
  const { r, s } = parseSignature(await signer.signMessage({ message: 'one' }))
  for (const [last, v] of [['00', '1b'], ['01', '1c']] as const) {
    const relay: RunnerRelay = {
      form: 'authorization',
      call: { to: a(5), data: '0x' },
      payment: { token: a(3), authorization: { from: signer.address, to: a(4), value: '1', validAfter: '0', validBefore: '2', nonce }, signature: `${r}${s.slice(2)}${last}` } as never,
      payee: a(4),
    }
    t.equal(
      encodeRunnerCall(relay, 1n),
      encodeFunctionData({ abi: runnerFunctions, functionName: 'relayWithAuthorization', args: [a(5), '0x', 1n, a(3), a(4), 1n, { from: signer.address, value: 1n, validAfter: 0n, validBefore: 2n, nonce, signature: `${r}${s.slice(2)}${v}` }, KEPT] }),
      `yParity ${last} → v 0x${v}`,
    )
  }
  // a wallet's signature (any length but 65: an ERC-1271 wrapper, an ERC-6492 one) goes as the wallet made it
  for (const signature of [`0x${'00'.repeat(31)}01${'ab'.repeat(160)}`, `0x${'cd'.repeat(64)}`] as const) {
    const relay: RunnerRelay = {
      form: 'authorization',
      call: { to: a(5), data: '0x' },
      payment: { token: a(3), authorization: { from: a(6), to: a(4), value: '1', validAfter: '0', validBefore: '2', nonce }, signature } as never,
      payee: a(4),
    }
    t.equal(
      encodeRunnerCall(relay, 1n),
      encodeFunctionData({ abi: runnerFunctions, functionName: 'relayWithAuthorization', args: [a(5), '0x', 1n, a(3), a(4), 1n, { from: a(6), value: 1n, validAfter: 0n, validBefore: 2n, nonce, signature }, KEPT] }),
      `${(signature.length - 2) / 2} bytes, unchanged`,
    )
  }
})

t.test('decodeRelayResult and relayedEvent', async (t) => {
  for (const functionName of ['relayBatch', 'relayWithAuthorization'] as const) {
    const data = encodeFunctionResult({ abi: runnerFunctions, functionName, result: [false, 12_345n, '0xdead', 0n] })
    t.strictSame(decodeRelayResult(functionName === 'relayBatch' ? 'batch' : 'authorization', data), { callSucceeded: false, callGasUsed: 12_345n, reason: '0xdead', refundGasUsed: 0n })
  }
  t.strictSame(decodeRelayResult('batch', encodeFunctionResult({ abi: runnerFunctions, functionName: 'relayBatch', result: [true, 1n, '0x', 6_773n] })), { callSucceeded: true, callGasUsed: 1n, reason: '0x', refundGasUsed: 6_773n })

  const log = (address: string, received: bigint, refunded = 0n): Log =>
    ({
      address,
      topics: encodeEventTopics({ abi: runnerFunctions, eventName: 'Relayed', args: { target: a(5), payee: a(4) } }),
      data: encodeAbiParameters([{ type: 'uint256' }, { type: 'uint256' }, { type: 'uint256' }, { type: 'bool' }, { type: 'bytes' }], [received, received - refunded, refunded, true, '0xbeef']),
      blockNumber: 1n,
      blockHash: `0x${'00'.repeat(32)}`,
      logIndex: 0,
      transactionHash: `0x${'00'.repeat(32)}`,
      transactionIndex: 0,
      removed: false,
    }) as Log
  t.strictSame(relayedEvent([log(runner, 7n)], runner), { received: 7n, charged: 7n, refunded: 0n, callSucceeded: true, reason: '0xbeef' })
  t.strictSame(relayedEvent([log(runner, 7n, 3n)], runner), { received: 7n, charged: 4n, refunded: 3n, callSucceeded: true, reason: '0xbeef' }, 'a refund, as logged')
  t.strictSame(relayedEvent([log(runner.toLowerCase(), 8n)], runner), { received: 8n, charged: 8n, refunded: 0n, callSucceeded: true, reason: '0xbeef' }, 'the log address in any case')
  t.equal(relayedEvent([log(a(0xbad), 7n)], runner), undefined, 'another contract’s Relayed is not ours')
  t.equal(relayedEvent([], runner), undefined)
  t.strictSame(relayedEvent([log(a(0xbad), 1n), log(runner, 9n)], runner), { received: 9n, charged: 9n, refunded: 0n, callSucceeded: true, reason: '0xbeef' })
})

t.test("the Runner's ABI: relayBatch takes the batches' target, the payment batch and its gas; no payment guard", async (t) => {
  const names: string[] = runnerAbi.map((item) => ('name' in item ? item.name : item.type))
  t.notOk(names.includes('paymentGuard'), 'no paymentGuard function')
  t.notOk(names.includes('NotInBatchRelay'), 'no NotInBatchRelay error')
  t.ok(names.includes('PaymentFailed'), 'a PaymentFailed error')
  const relayBatch = runnerAbi.find((item) => item.type === 'function' && item.name === 'relayBatch')
  t.strictSame(
    relayBatch && 'inputs' in relayBatch ? relayBatch.inputs.map((input) => `${input.type} ${input.name}`) : [],
    ['address account', 'address delegate', 'tuple batches', 'uint256 callGas', 'address token', 'address payee', 'uint256 amount', 'tuple charge'],
  )
  const batches = relayBatch && 'inputs' in relayBatch ? relayBatch.inputs[2] : undefined
  t.strictSame(
    batches && 'components' in batches ? batches.components.map((input) => `${input.type} ${input.name}`) : [],
    ['address target', 'bytes payment', 'uint256 paymentGas', 'bytes data'],
  )
})
