import t, { type Test } from 'tap'
import { decodeFunctionData, encodeErrorResult, encodeFunctionData, getAddress, parseAbi, zeroHash, type Address, type Hex } from 'viem'
import { serializeAsSigned } from '../../core/chain/l1DataFee.ts'
import { privateKeyToAccount } from 'viem/accounts'
import { ToolError } from '../../core/tool/tool.ts'
import { AUTHORIZATION_GAS } from '../../core/relay/delegation7702.ts'
import { delegationOverride, FIRST_USE_OF_KEY_GAS, SIGNED_PATH_GAS } from '../../plugins/calibur/batch.ts'
import { caliburGroup } from '../../plugins/calibur/index.ts'
import {
  account,
  approveCall,
  caliburNode,
  caliburSolidity,
  delegatedTo,
  erc20Solidity,
  errorString,
  intrinsicOf,
  ownerExecute,
  ownerPathCalls,
  reverted,
  runnerSolidity,
  salt,
  signedExecute,
  signer,
  transferCall,
} from './caliburNode.ts'
import { fakeNetwork, networkConfig } from './fakeChain.ts'
import { CALIBUR_ADDRESS } from '../../plugins/calibur/networkOptions.ts'

// calibur_batch (plugins/calibur/batch.ts) called as Bruno calls it (the plugin's setup, the registry's
// input check, the handler), on a node the test answers: the typed data, calls and gas rebuilt here
// from Calibur's and the Runner's Solidity signatures and the gas rules by hand; every refusal's words.

/**
 * The charge a batch is priced with, as a payee that refunds would be sent: every figure at its dearest bytes (gas
 * figures 3 bytes, the L1 fee and the price 8), the default markup, and a refund's cap of 7,100, which the Runner
 * reserves with its 1/63 beside the stipend.
 */
const PRICED_CHARGE = { baseGas: 0xffffffn, floorGas: 0xffffffn, l1FeeWei: 2n ** 64n - 1n, unitsPerEther: 2n ** 64n - 1n, markupBps: 500n, refundGas: 7_100n }

const one = getAddress('0x1111111111111111111111111111111111111111')
const two = getAddress('0x2222222222222222222222222222222222222222')
const otherToken = getAddress('0x00000000000000000000000000000000000070cc')
const placeholder = `0x${'ff'.repeat(65)}` as Hex

type Call = { to: string; value: string; data: string }

const runner = getAddress('0x0000000000000000000000000000000000000b0b')

/** The owner-path estimates the node gives: the payment leg alone, and the leg then the account's calls. */
type Estimates = { leg: bigint; owner: bigint }

/** What calibur_batch must measure for `amount`, by hand: DESIGN §4's constants, the Runner's costs. */
function expectedMeasure(
  node: ReturnType<typeof caliburNode>,
  own: readonly Call[],
  amount: bigint,
  messages: { payment: Parameters<typeof signedExecute>[0]; calls: Parameters<typeof signedExecute>[0] },
  estimates: Estimates,
  options: { firstUse: boolean; authorization: boolean },
) {
  const { config } = node
  const usdc = getAddress(config.tokens[0]!.address)
  const leg = transferCall(usdc, config.payee, amount)
  const legData = ownerExecute([leg])
  const ownerData = ownerExecute([leg, ...own])
  const executed = (gas: bigint, data: Hex) => (gas - 21_000n - intrinsicOf(data) > 0n ? gas - 21_000n - intrinsicOf(data) : 0n)
  const legExecuted = executed(estimates.leg, legData)
  const callsExecuted = executed(estimates.owner, ownerData) - legExecuted
  const bytes = own.reduce((total, call) => total + BigInt((call.data.length - 2) / 2), 0n)
  // the payment batch: the leg on the signed path (and the key's first write); the account's: its calls on the signed path
  const paymentGas = legExecuted + 20_000n + (options.firstUse ? 17_500n : 0n)
  const accountGas = (callsExecuted > 0n ? callsExecuted : 0n) + 20_000n + 1_200n * BigInt(own.length) + 8n * bytes
  const callGas = accountGas + accountGas / 16n + 10_000n
  const paymentData = signedExecute(messages.payment, placeholder)
  const callsData = signedExecute(messages.calls, placeholder)
  const runnerData = encodeFunctionData({
    abi: runnerSolidity,
    functionName: 'relayBatch',
    args: [account, getAddress(CALIBUR_ADDRESS), { target: account, payment: paymentData, paymentGas: 150_000n, data: callsData }, callGas, usdc, getAddress(config.payee), amount, PRICED_CHARGE],
  })
  const calldata = intrinsicOf(runnerData)
  // the Runner copies both signed batches into memory
  const words = BigInt(Math.ceil((paymentData.length - 2 + callsData.length - 2) / 64))
  const least =
    21_000n + calldata + (options.authorization ? 25_000n : 0n) + 20_000n + paymentGas + 3n * words + (words * words) / 512n + callGas + callGas / 63n + 25_000n + 7_100n + 7_100n / 63n
  const floor = 21_000n + (10n * calldata) / 4n
  return { legData, ownerData, runnerData, paymentGas, accountGas, gas: ((least > floor ? least : floor) * 10_500n) / 10_000n, callGas }
}

/** The payment-only batch by hand: the one transfer to the payee, all or nothing, for the Runner to execute. */
function expectedPaymentMessage(node: ReturnType<typeof caliburNode>, amount: bigint, nonce: bigint, deadline: number) {
  const { config } = node
  return {
    batchedCall: { calls: [transferCall(config.tokens[0]!.address, config.payee, amount)], revertOnFailure: true },
    nonce: nonce.toString(),
    keyHash: zeroHash,
    executor: runner,
    deadline: deadline.toString(),
  }
}

/** The batch of the account's calls by hand: the calls alone (no guard), all or nothing, at the nonce after the payment's. */
function expectedCallsMessage(own: readonly Call[], nonce: bigint, deadline: number) {
  return {
    batchedCall: { calls: [...own], revertOnFailure: true },
    nonce: (nonce + 1n).toString(),
    keyHash: zeroHash,
    executor: runner,
    deadline: deadline.toString(),
  }
}

const caliburTypes = {
  EIP712Domain: [
    { name: 'name', type: 'string' },
    { name: 'version', type: 'string' },
    { name: 'chainId', type: 'uint256' },
    { name: 'verifyingContract', type: 'address' },
    { name: 'salt', type: 'bytes32' },
  ],
  SignedBatchedCall: [
    { name: 'batchedCall', type: 'BatchedCall' },
    { name: 'nonce', type: 'uint256' },
    { name: 'keyHash', type: 'bytes32' },
    { name: 'executor', type: 'address' },
    { name: 'deadline', type: 'uint256' },
  ],
  BatchedCall: [
    { name: 'calls', type: 'Call[]' },
    { name: 'revertOnFailure', type: 'bool' },
  ],
  Call: [
    { name: 'to', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'data', type: 'bytes' },
  ],
}

/** The price at a fee of 13 wei (base fee 10 × 1.2 + tip 1), 1 wei per base unit, 20 % margin: ⌈(gas·13 + l1)·1.2⌉. */
const priceOf = (gas: bigint, feePerGas = 13n, l1 = 0n) => {
  const wei = gas * feePerGas + l1
  return (wei * 12_000n + 9_999n) / 10_000n
}

/** The two-step pricing calibur_batch does: a leg of 1, then the leg it priced; the larger price kept. */
function expectedRun(
  node: ReturnType<typeof caliburNode>,
  own: Call[],
  options: { nonce: bigint; deadline: number; firstUse: boolean; authorization?: boolean; estimate: (amount: bigint) => Estimates; feePerGas?: bigint; l1?: bigint },
) {
  const callsMessage = expectedCallsMessage(own, options.nonce, options.deadline)
  const measure = (amount: bigint) =>
    expectedMeasure(
      node,
      own,
      amount,
      { payment: expectedPaymentMessage(node, amount, options.nonce, options.deadline), calls: callsMessage },
      options.estimate(amount),
      { firstUse: options.firstUse, authorization: options.authorization ?? false },
    )
  const priced = (gas: bigint) => {
    const amount = priceOf(gas, options.feePerGas, options.l1)
    return amount > 0n ? amount : 1n
  }
  const provisional = measure(1n)
  let amount = priced(provisional.gas)
  const measured = measure(amount)
  const first = amount
  if (priced(measured.gas) > amount) amount = priced(measured.gas)
  return { provisional, measured, first, amount, paymentMessage: expectedPaymentMessage(node, amount, options.nonce, options.deadline), callsMessage }
}

/** A node whose owner-path estimates are `of(amount)` for the leg alone and for the leg then the calls. */
function nodeEstimating(of: (amount: bigint) => Estimates, options: Parameters<typeof caliburNode>[0] = {}, config: Parameters<typeof caliburNode>[1] = {}) {
  const { tokens, payee } = networkConfig(config)
  const usdc = tokens[0]!.address
  // the leg's amount is read from the owner-path call's first call, the transfer to the payee
  return caliburNode(
    {
      ...options,
      estimate: ({ data }) => {
        const flat = ownerPathCalls(data)
        const { args } = decodeFunctionData({ abi: caliburSolidity, data })
        const leg = (args[0] as { calls: readonly { to: string; data: Hex }[] }).calls[0]!
        const transfer = decodeFunctionData({ abi: erc20Solidity, data: leg.data })
        if (getAddress(leg.to) !== getAddress(usdc) || getAddress(transfer.args[0] as string) !== getAddress(payee)) throw new Error('the first call is not the leg')
        const estimates = of(transfer.args[1] as bigint)
        return flat === 1 ? estimates.leg : estimates.owner
      },
    },
    config,
  )
}

const rejectsWith = async (t: Test, promise: Promise<unknown>, message: string) => t.rejects(promise, new ToolError(message), message)

t.test('the calibur group as the plugin declares it', async (t) => {
  t.equal(caliburGroup.name, 'calibur')
  t.equal(caliburGroup.order, 20)
  const node = caliburNode()
  const group = await caliburGroup.setup(node.services, {}, () => ({ address: CALIBUR_ADDRESS }))
  t.same(group.tools.map((tool) => tool.name), ['calibur_batch', 'calibur_execute'])
  t.equal(typeof group.delegate, 'object')
  t.ok(group.delegate, 'reads its signed batches as payment')
  t.equal(
    group.instructions,
    'calibur — batches for an account delegated to Calibur (EIP-7702; `account` says delegateName "Calibur"). Put the account\'s ' +
      'calls (helpers\' `calls`, builders\' transactions made with the account as fromAddress and recipient, never Bruno) ' +
      'and their `approvals` into calibur_batch: it adds the approvals that are short and a batch of its own that pays Bruno in ' +
      'a token (e.g. USDC), measured and priced (`gas`: the estimated limit, the owner path measured, the max fee per ' +
      'gas and margin it priced at). It returns two batches: paymentTypedData only pays, token.transfer(payee, amount), ' +
      'and runs first, in a call of its own; typedData runs the calls after it, all or nothing; if they fail on chain ' +
      'the payment is still taken. Pass each UNCHANGED to the account\'s wallet sign-typed-data tool ' +
      '(eth_signTypedData_v4; the account\'s own key: smart-wallet signers, ERC-1271 / ERC-6492, cannot sign them), ' +
      'then give both with their signatures to calibur_execute, and its {call, payment} ' +
      '(and authorizationList, if any) to submit; poll status until done. Never send a builder\'s or helper\'s call to ' +
      'submit as it is. An account not yet delegated is delegated in the same transaction: its wallet signs an EIP-7702 ' +
      'authorization to Calibur with nonce = its current EOA nonce (Bruno\'s runner sends the transaction, not the ' +
      'account), passed as authorizationList to calibur_batch, calibur_execute and submit. `deadline` (unix seconds) ' +
      'bounds the signed batches; `nonceKey` picks an independent nonce sequence. ' +
      `Calibur's address, an authorization's \`address\`: local ${CALIBUR_ADDRESS} (each chain's bruno://<chain>/config lists its delegates).`,
  )
  t.equal(node.registry.view(['calibur'])!.instructions.endsWith(group.instructions), true)
  const batch = group.tools[0]!
  t.equal(batch.title, 'Prepare a Calibur batch')
  t.same(batch.annotations, { readOnlyHint: true, openWorldHint: true })
  t.equal(
    batch.description,
    'Wraps the account\'s calls for Calibur (EIP-7702) as two batches to sign: paymentTypedData pays Bruno in `token` (unused part refunded), ' +
      'then typedData runs the calls all or nothing (paid even if they fail on chain). `calls`: helpers\' calls or a ' +
      'builder\'s transactionRequest (gas, fee, from, nonce ignored). `approvals` add an approve where short. Not ' +
      'delegated: pass its EIP-7702 authorization as authorizationList.',
  )
  t.equal(SIGNED_PATH_GAS, 20_000n)
  t.equal(FIRST_USE_OF_KEY_GAS, 17_500n)
  t.equal(AUTHORIZATION_GAS, 25_000n)
})

t.test('a delegated account, one call: the payment batch and the calls batch, priced twice, the larger kept', async (t) => {
  const estimates = () => ({ leg: 60_000n, owner: 100_000n })
  const node = nodeEstimating(estimates)
  const before = Math.floor(Date.now() / 1000)
  const result = await node.call('calibur_batch', { chain: 'local', account: account.toLowerCase(), calls: [{ to: one.toLowerCase(), value: '0x10', data: '0x1234' }], token: 'usdc' })
  const after = Math.floor(Date.now() / 1000)
  const deadline = result.deadline as number
  t.ok(deadline >= before + 600 && deadline <= after + 600, 'deadline: now + the submission ttl (600 s)')
  const own = [{ to: one, value: '16', data: '0x1234' }]
  const run = expectedRun(node, own, { nonce: 0n, deadline, firstUse: true, estimate: estimates })
  t.ok(run.amount > run.first, 'the second measure (a longer leg) priced higher, and that price is kept')
  const domain = { name: 'Calibur', version: '1.0.0', chainId: 31337, verifyingContract: account, salt }
  t.strictSame(result.paymentTypedData, { domain, types: caliburTypes, primaryType: 'SignedBatchedCall', message: run.paymentMessage })
  t.strictSame(result.typedData, { domain, types: caliburTypes, primaryType: 'SignedBatchedCall', message: run.callsMessage })
  // the payment batch only pays; the calls batch holds the calls alone, no guard, at the next nonce of the same key
  const paymentCalls = (result.paymentTypedData as { message: { batchedCall: { calls: Call[] } } }).message.batchedCall.calls
  const ownCalls = (result.typedData as { message: { batchedCall: { calls: Call[] }; nonce: string } }).message
  t.equal(paymentCalls.length, 1)
  t.notOk(ownCalls.batchedCall.calls.some((call) => getAddress(call.to) === runner), 'no call to the Runner among the account\'s calls')
  t.equal(ownCalls.nonce, '1')
  // the stipend is sized from the calls alone, the payment batch's gas counted before the call
  t.equal(run.measured.paymentGas, 60_000n - 21_000n - intrinsicOf(run.measured.legData) + 20_000n + 17_500n)
  t.equal(run.measured.accountGas, 100_000n - intrinsicOf(run.measured.ownerData) - (60_000n - intrinsicOf(run.measured.legData)) + 20_000n + 1_200n + 8n * 2n)
  const usdc = getAddress(node.config.tokens[0]!.address)
  const payee = getAddress(node.config.payee)
  const amount = run.amount
  const whole = `${amount / 1_000_000n}.${(amount % 1_000_000n).toString().padStart(6, '0')}`.replace(/\.?0+$/, '')
  // This payee is an account, which keeps payments: the whole amount is what is expected to be charged.
  t.strictSame(result.payment, { token: usdc, symbol: 'USDC', amount: whole, amountBaseUnits: amount.toString(), payee, expectedChargeBaseUnits: amount.toString() })
  t.strictSame(result.calls, own)
  t.strictSame(result.approvalsAdded, [])
  t.equal(result.nonce, '0')
  t.equal('authorizationList' in result, false)
  t.strictSame(result.gas, { estimated: run.measured.gas.toString(), ownerPath: '100000', feePerGasWei: '13', marginBps: 2000 })
  t.equal(
    result.summary,
    `First, a batch of its own: ${whole} USDC from ${account} to Bruno's payee ${payee} for the gas; it is paid even if the calls then fail. Then, all or nothing: ` +
      `approvals added: none needed; your 1 call (to 0x1111…1111). Valid until ${new Date(deadline * 1000).toISOString()} (unix ${deadline}); nonce key 0, seq 0 (payment) and 1 (calls).`,
  )
  t.equal(node.validOutput('calibur_batch', result), true)

  // What the node was asked: the delegation read first, Calibur's state, the price, two owner-path estimates per measure
  // (the leg alone, then the leg and the calls).
  t.same([...new Set(node.seen.map((request) => request.method))].sort(), ['eth_call', 'eth_estimateGas', 'eth_getBlockByNumber', 'eth_getCode', 'eth_maxPriorityFeePerGas'])
  t.same(node.seen.filter((request) => request.method === 'eth_getCode').map((request) => request.params), [[account, 'latest']])
  const calibur = node.calls.filter((call) => call.to.toLowerCase() === account.toLowerCase())
  t.same(calibur.map((call) => [call.functionName, call.args, call.stateOverride]), [
    ['eip712Domain', [], undefined],
    ['getSeq', [0n], undefined],
  ])
  t.same(
    node.seen.filter((request) => request.method === 'eth_estimateGas').map((request) => request.params),
    [
      [{ from: account, to: account, data: run.provisional.legData }, 'latest'],
      [{ from: account, to: account, data: run.provisional.ownerData }, 'latest'],
      [{ from: account, to: account, data: run.measured.legData }, 'latest'],
      [{ from: account, to: account, data: run.measured.ownerData }, 'latest'],
    ],
  )
})

t.test('the second measure priced lower: the first price stands', async (t) => {
  // The owner path with the provisional 1-unit leg measures far more than with the priced leg.
  const estimate = (amount: bigint) => (amount === 1n ? { leg: 200_000n, owner: 300_000n } : { leg: 50_000n, owner: 90_000n })
  const node = nodeEstimating(estimate)
  const result = await node.call('calibur_batch', { chain: 'local', account, calls: [{ to: one }], token: 'USDC', deadline: 4_000_000_000 })
  const run = expectedRun(node, [{ to: one, value: '0', data: '0x' }], { nonce: 0n, deadline: 4_000_000_000, firstUse: true, estimate })
  t.equal(run.amount, run.first)
  t.ok(run.provisional.gas > run.measured.gas)
  t.equal((result.payment as { amountBaseUnits: string }).amountBaseUnits, run.amount.toString())
  t.strictSame((result.paymentTypedData as { message: unknown }).message, run.paymentMessage, 'the payment batch pays the price kept')
  t.strictSame((result.typedData as { message: unknown }).message, run.callsMessage)
  t.strictSame(result.gas, { estimated: run.measured.gas.toString(), ownerPath: '90000', feePerGasWei: '13', marginBps: 2000 })
  t.equal(result.deadline, 4_000_000_000)
  t.match(result.summary, /Valid until 2096-10-02T07:06:40\.000Z \(unix 4000000000\)/)
})

t.test('a nonce key in use: its next seq, no first-use gas; an owner path cheaper than its intrinsic gas counts as 0', async (t) => {
  const node = caliburNode({ seq: (key) => (key === 5n ? 3n : 99n), estimate: () => 21_000n })
  const result = await node.call('calibur_batch', { chain: 'local', account, calls: [{ to: one, value: '7', data: '0xab' }, { to: two }], token: 'USDC', nonceKey: '5', deadline: 4_000_000_000 })
  const nonce = (5n << 64n) | 3n
  const own = [{ to: one, value: '7', data: '0xab' }, { to: two, value: '0', data: '0x' }]
  const run = expectedRun(node, own, { nonce, deadline: 4_000_000_000, firstUse: false, estimate: () => ({ leg: 21_000n, owner: 21_000n }) })
  t.equal(result.nonce, nonce.toString())
  t.strictSame((result.paymentTypedData as { message: unknown }).message, run.paymentMessage)
  t.strictSame((result.typedData as { message: unknown }).message, run.callsMessage)
  t.equal((result.typedData as { message: { nonce: string } }).message.nonce, ((5n << 64n) | 4n).toString(), 'the calls: key 5, seq 4')
  t.equal(run.measured.paymentGas, 20_000n, 'no first-use gas, the leg counted as 0')
  t.equal((result.gas as { estimated: string }).estimated, run.measured.gas.toString())
  t.match(result.summary, /your 2 calls \(to 0x1111…1111, 0x2222…2222\)\. Valid until .*; nonce key 5, seq 3 \(payment\) and 4 \(calls\)\.$/)
  t.same(node.calls.filter((call) => call.functionName === 'getSeq').map((call) => call.args), [[5n]])
})

t.test('a nonce whose key is not zero but whose seq part is zero is a first use', async (t) => {
  const node = caliburNode({ seq: () => 0n })
  const result = await node.call('calibur_batch', { chain: 'local', account, calls: [{ to: one }], token: 'USDC', nonceKey: '1', deadline: 4_000_000_000 })
  const run = expectedRun(node, [{ to: one, value: '0', data: '0x' }], { nonce: 1n << 64n, deadline: 4_000_000_000, firstUse: true, estimate: () => ({ leg: 100_000n, owner: 100_000n }) })
  t.equal((result.gas as { estimated: string }).estimated, run.measured.gas.toString())
  t.equal(result.nonce, (1n << 64n).toString())
  // the first use is the payment batch's: it writes the key's seq from zero; the calls batch then finds it written
  t.equal(run.measured.paymentGas, 100_000n - 21_000n - intrinsicOf(run.measured.legData) + 20_000n + 17_500n)
  t.equal(run.measured.accountGas, 20_000n + 1_200n, 'no first-use gas for the calls')
})

t.test('approvals: added only where the allowance is short, before the calls, described in words', async (t) => {
  const usdc = getAddress('0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913')
  const spender = getAddress('0x2626664c2603336E57B271c5C0b26F421741e481')
  const allowances: Record<string, bigint> = { [`${usdc}:${spender}`]: 1_499_999n, [`${otherToken}:${spender}`]: 5n, [`${usdc}:${two}`]: 10n }
  const node = caliburNode({ allowance: (token, owner, who) => (owner === account ? allowances[`${token}:${who}`] ?? 0n : 0n) })
  const result = await node.call('calibur_batch', {
    chain: 'local',
    account,
    calls: [{ to: spender, data: '0xabcdef' }],
    approvals: [
      { token: usdc.toLowerCase(), spender: spender.toLowerCase(), amountBaseUnits: '1500000' },
      { token: otherToken, spender, amountBaseUnits: '6' },
      // A configured token by its symbol (issue 29, point 4): read and compared as its address.
      { token: 'usdc', spender: two, amountBaseUnits: '10' },
    ],
    token: 'USDC',
    deadline: 4_000_000_000,
  })
  const own = [approveCall(usdc, spender, 1_500_000n), approveCall(otherToken, spender, 6n), { to: spender, value: '0', data: '0xabcdef' }]
  t.strictSame(result.approvalsAdded, [
    { token: usdc, spender, amountBaseUnits: '1500000' },
    { token: otherToken, spender, amountBaseUnits: '6' },
  ])
  t.strictSame(result.calls, own)
  const run = expectedRun(node, own, { nonce: 0n, deadline: 4_000_000_000, firstUse: true, estimate: () => ({ leg: 100_000n, owner: 100_000n }) })
  t.strictSame((result.typedData as { message: unknown }).message, run.callsMessage, 'the approvals first, then the call, in the calls batch')
  t.strictSame((result.paymentTypedData as { message: unknown }).message, run.paymentMessage, 'no approval in the payment batch')
  t.ok(
    (result.summary as string).includes(`Then, all or nothing: approvals added: approve 0x2626…e481 for 1.5 USDC; approve 0x2626…e481 for 6 base units of ${otherToken}; your 1 call (to 0x2626…e481).`),
    result.summary as string,
  )
  t.same(
    node.calls.filter((call) => call.functionName === 'allowance').map((call) => [getAddress(call.to), call.args]),
    [
      [usdc, [account, spender]],
      [otherToken, [account, spender]],
      [usdc, [account, two]],
    ],
  )
})

t.test('calls: values in decimal or hex, builder fields ignored, this chain’s id in any form; another chain refused', async (t) => {
  const node = caliburNode()
  const result = await node.call('calibur_batch', {
    chain: 'local',
    account,
    calls: [
      { to: one, value: '1000', data: '0x', chainId: 31337, gas: '0x5208', gasLimit: 1, gasPrice: '1', maxFeePerGas: '2', maxPriorityFeePerGas: '3', from: account, nonce: 4, type: 'eip1559' },
      { to: two, value: '0xff', chainId: '0x7a69' },
      { to: one, chainId: '31337' },
    ],
    token: 'USDC',
    deadline: 4_000_000_000,
  })
  t.strictSame(result.calls, [
    { to: one, value: '1000', data: '0x' },
    { to: two, value: '255', data: '0x' },
    { to: one, value: '0', data: '0x' },
  ])
  for (const chainId of [1, '0x1', '1']) {
    await rejectsWith(
      t,
      caliburNode().call('calibur_batch', { chain: 'local', account, calls: [{ to: one }, { to: two, chainId }], token: 'USDC' }),
      'calls[1] is for chain 1, not local (31337): ask the builder for this chain',
    )
  }
  await rejectsWith(
    t,
    caliburNode().call('calibur_batch', { chain: 'local', account, calls: [{ to: one }, { to: '0x2222222222222222222222222222222222222222', data: '0x' }, { to: '0x0000000000000000000000000000000000000000' }], token: 'USDC' }),
    'calls[2].to is the zero address',
  )
})

t.test('addresses named by their field when their checksum is wrong', async (t) => {
  const bad = '0x70997970c51812dc3a010C7d01b50e0d17dc79C8'
  const node = caliburNode()
  await rejectsWith(t, node.call('calibur_batch', { chain: 'local', account: bad, calls: [{ to: one }], token: 'USDC' }), `account ${bad} does not match its EIP-55 checksum (its mixed case is wrong): check it, or write it all lowercase`)
  await rejectsWith(t, node.call('calibur_batch', { chain: 'local', account, calls: [{ to: bad }], token: 'USDC' }), `calls[0].to ${bad} does not match its EIP-55 checksum (its mixed case is wrong): check it, or write it all lowercase`)
  await rejectsWith(
    t,
    node.call('calibur_batch', { chain: 'local', account, calls: [{ to: one }], approvals: [{ token: one, spender: one, amountBaseUnits: '1' }, { token: bad, spender: one, amountBaseUnits: '1' }], token: 'USDC' }),
    `approvals[1].token ${bad} does not match its EIP-55 checksum (its mixed case is wrong): check it, or write it all lowercase`,
  )
  await rejectsWith(
    t,
    node.call('calibur_batch', { chain: 'local', account, calls: [{ to: one }], approvals: [{ token: one, spender: one, amountBaseUnits: '1' }, { token: one, spender: bad, amountBaseUnits: '1' }], token: 'USDC' }),
    `approvals[1].spender ${bad} does not match its EIP-55 checksum (its mixed case is wrong): check it, or write it all lowercase`,
  )
  await rejectsWith(t, node.call('calibur_batch', { chain: 'local', account, calls: [{ to: one }], token: 'DAI' }), 'unknown token "DAI" on local: neither a configured symbol (USDC, WETH) nor a token address')
})

t.test('a deadline already passed is refused', async (t) => {
  const node = caliburNode()
  await t.rejects(node.call('calibur_batch', { chain: 'local', account, calls: [{ to: one }], token: 'USDC', deadline: 1 }), { name: 'ToolError', message: /^the deadline 1 has passed \(now \d+\)$/ })
  const now = Math.floor(Date.now() / 1000)
  await t.rejects(node.call('calibur_batch', { chain: 'local', account, calls: [{ to: one }], token: 'USDC', deadline: now }), { name: 'ToolError', message: new RegExp(`^the deadline ${now} has passed \\(now \\d+\\)$`) })
  t.equal(node.seen.filter((request) => request.method === 'eth_estimateGas').length, 0, 'nothing measured')
})

t.test('an account not delegated to Calibur, and no authorization list: refused, saying how to delegate', async (t) => {
  const calibur = '0x000000005c84F8Fd50b21CAC312528A64437030e'
  const fix =
    `: it is not delegated to Calibur (${calibur}). Delegate it first: have its wallet sign an EIP-7702 authorization to Calibur (nonce = its current EOA nonce) ` +
    'and pass it as authorizationList to calibur_batch, calibur_execute and submit (the runner sends it in the same transaction), or pay with a signed USDC transfer (payment_authorization)'
  const cases: [Hex, string][] = [
    ['0x', 'has no code'],
    [delegatedTo(two), 'is delegated to 0x2222222222222222222222222222222222222222'],
    ['0x6080604052', 'is a contract'],
  ]
  for (const [code, what] of cases) {
    const node = caliburNode({ code: { [account]: code } })
    await rejectsWith(t, node.call('calibur_batch', { chain: 'local', account, calls: [{ to: one }], token: 'USDC' }), `${account} ${what}${fix}`)
    t.equal(node.calls.filter((call) => call.to.toLowerCase() === account.toLowerCase()).length, 0, `${what}: Calibur's state not read`)
  }
  // The delegation read in any case: the node's code in mixed case is the same delegation.
  const mixed = `0xEF0100${'000000005c84F8Fd50b21CAC312528A64437030e'}` as Hex
  const node = caliburNode({ code: { [account]: mixed } })
  const result = await node.call('calibur_batch', { chain: 'local', account, calls: [{ to: one }], token: 'USDC' })
  t.equal(result.nonce, '0', 'delegated, in whatever case the node writes its code')
})

t.test('the account’s domain must be its own, on this chain', async (t) => {
  let node = caliburNode({ domain: ['0x1f', 'Calibur', '1.0.0', 1n, account, salt, []] })
  await rejectsWith(t, node.call('calibur_batch', { chain: 'local', account, calls: [{ to: one }], token: 'USDC' }), `${account}'s Calibur domain is for chain 1, not 31337`)
  node = caliburNode({ domain: ['0x1f', 'Calibur', '1.0.0', 31337n, two, salt, []] })
  await rejectsWith(t, node.call('calibur_batch', { chain: 'local', account, calls: [{ to: one }], token: 'USDC' }), `${account}'s EIP-712 domain names ${two} as its verifyingContract, not the account itself`)
  // As it will read once delegated by the authorization list: the same checks.
  const authorizationList = [await authorization()]
  node = caliburNode({ code: { [account]: '0x' }, eoaNonce: 7, domain: ['0x1f', 'Calibur', '1.0.0', 31337n, two, salt, []] })
  await rejectsWith(t, node.call('calibur_batch', { chain: 'local', account, calls: [{ to: one }], token: 'USDC', authorizationList }), `${account}'s EIP-712 domain names ${two} as its verifyingContract, not the account itself`)
  node = caliburNode({ code: { [account]: '0x' }, eoaNonce: 7, domain: ['0x1f', 'Calibur', '1.0.0', 10n, account, salt, []] })
  await rejectsWith(t, node.call('calibur_batch', { chain: 'local', account, calls: [{ to: one }], token: 'USDC', authorizationList }), `${account}'s Calibur domain is for chain 10, not 31337`)
  node = caliburNode({ code: { [account]: '0x' }, eoaNonce: 7, domain: ['0x1f', 'Other', '1.0.0', 31337n, account, salt, []] })
  await rejectsWith(
    t,
    node.call('calibur_batch', { chain: 'local', account, calls: [{ to: one }], token: 'USDC', authorizationList }),
    'the account\'s EIP-712 domain is "Other" version "1.0.0", not Calibur 1.0.0: it is not delegated to a Calibur this version of Bruno knows',
  )
})

t.test('a batch that fails in simulation is refused with its reason; a node failure is not dressed up', async (t) => {
  let node = caliburNode({
    estimate: () => {
      throw reverted(errorString('ERC20: transfer amount exceeds balance'))
    },
  })
  await rejectsWith(
    t,
    node.call('calibur_batch', { chain: 'local', account, calls: [{ to: one }], token: 'USDC' }),
    'the batch would fail: the call reverted: ERC20: transfer amount exceeds balance',
  )
  // A call inside the batch failing: Calibur's CallFailed(bytes), read through to the call's own reason.
  const callFailed = encodeErrorResult({ abi: parseAbi(['error CallFailed(bytes reason)']), errorName: 'CallFailed', args: [errorString('STF')] })
  node = caliburNode({
    estimate: () => {
      throw reverted(callFailed)
    },
  })
  await rejectsWith(t, node.call('calibur_batch', { chain: 'local', account, calls: [{ to: one }], token: 'USDC' }), 'the batch would fail: the call reverted: STF')
  node = caliburNode({
    estimate: () => {
      throw Object.assign(new Error('the node is down'), { code: -32603 })
    },
  })
  const failure = await node.call('calibur_batch', { chain: 'local', account, calls: [{ to: one }], token: 'USDC' }).then(
    () => undefined,
    (error: Error) => error,
  )
  t.equal(failure instanceof ToolError, false, 'not a refusal')
  t.match(failure?.message, /the node is down/)
})

t.test('no fee at all: the payment is still at least one base unit', async (t) => {
  const node = caliburNode({ baseFee: 0n, tip: 0n })
  const result = await node.call('calibur_batch', { chain: 'local', account, calls: [{ to: one }], token: 'USDC', deadline: 4_000_000_000 })
  t.strictSame(result.payment, { token: getAddress(node.config.tokens[0]!.address), symbol: 'USDC', amount: '0.000001', amountBaseUnits: '1', payee: getAddress(node.config.payee), expectedChargeBaseUnits: '1' })
  t.match(result.summary, /^First, a batch of its own: 0\.000001 USDC from /)
  t.equal((result.gas as { feePerGasWei: string }).feePerGasWei, '0')
})

async function authorization(fields: { address?: Address; chainId?: number; nonce?: number } = {}, by = signer) {
  const signed = await by.signAuthorization({ address: fields.address ?? '0x000000005c84F8Fd50b21CAC312528A64437030e', chainId: fields.chainId ?? 31337, nonce: fields.nonce ?? 7 })
  return { chainId: signed.chainId, address: signed.address, nonce: signed.nonce, r: signed.r, s: signed.s, yParity: signed.yParity as 0 | 1 }
}

t.test('delegated in the same transaction: the override shows the account delegated; the authorization is priced', async (t) => {
  const node = caliburNode({ code: { [account]: '0x' }, eoaNonce: 7 })
  const item = await authorization()
  const result = await node.call('calibur_batch', { chain: 'local', account, calls: [{ to: one }], token: 'USDC', deadline: 4_000_000_000, authorizationList: [item] })
  const override = [{ address: account, code: delegatedTo('0x000000005c84F8Fd50b21CAC312528A64437030e') }]
  const rpcOverride = { [account]: { code: override[0]!.code } }
  const run = expectedRun(node, [{ to: one, value: '0', data: '0x' }], { nonce: 0n, deadline: 4_000_000_000, firstUse: true, authorization: true, estimate: () => ({ leg: 100_000n, owner: 100_000n }) })
  t.strictSame(result.authorizationList, [item])
  t.strictSame((result.paymentTypedData as { message: unknown }).message, run.paymentMessage)
  t.strictSame((result.typedData as { message: unknown }).message, run.callsMessage)
  t.equal((result.gas as { estimated: string }).estimated, run.measured.gas.toString())
  t.match(result.summary, /nonce key 0, seq 0 \(payment\) and 1 \(calls\)\. The account is delegated to Calibur in the same transaction \(authorizationList\)\.$/)
  t.same(
    node.calls.filter((call) => call.to.toLowerCase() === account.toLowerCase()).map((call) => [call.functionName, call.stateOverride]),
    [
      ['eip712Domain', rpcOverride],
      ['getSeq', rpcOverride],
    ],
  )
  t.same(node.seen.filter((request) => request.method === 'eth_estimateGas').map((request) => request.params[2]), [rpcOverride, rpcOverride, rpcOverride, rpcOverride])
  t.same(node.seen.filter((request) => request.method === 'eth_getTransactionCount').map((request) => request.params), [[account, 'latest']])
  t.equal(node.validOutput('calibur_batch', result), true)
  t.strictSame(await delegationOverride(fakeNetwork(node.services.networks.get('local').client, node.config), account, [item], CALIBUR_ADDRESS), override)
})

t.test('delegated in the same transaction on an OP-stack chain: the L1 fee of the EIP-7702 runner transaction is priced', async (t) => {
  const node = caliburNode({ code: { [account]: '0x' }, eoaNonce: 7, l1Fee: 1_000n }, { l1DataFee: 'op-stack' })
  const item = await authorization()
  const result = await node.call('calibur_batch', { chain: 'local', account, calls: [{ to: one }], token: 'USDC', deadline: 4_000_000_000, authorizationList: [item] })
  // the oracle's 1,000 wei plus 25 %: 1,250 wei added to each measure
  const run = expectedRun(node, [{ to: one, value: '0', data: '0x' }], { nonce: 0n, deadline: 4_000_000_000, firstUse: true, authorization: true, estimate: () => ({ leg: 100_000n, owner: 100_000n }), l1: 1_250n })
  t.equal((result.payment as { amountBaseUnits: string }).amountBaseUnits, run.amount.toString())
  const asked = node.calls.filter((call) => call.functionName === 'getL1Fee').map((call) => call.args[0])
  const tx = (measure: typeof run.measured) =>
    serializeAsSigned(31337, {
      to: getAddress('0x0000000000000000000000000000000000000B0B'),
      data: measure.runnerData,
      gas: measure.gas,
      nonce: 0,
      maxFeePerGas: 13n,
      maxPriorityFeePerGas: 13n,
      authorizationList: [{ ...item, address: getAddress(item.address) }],
    })
  t.same(asked, [tx(run.provisional), tx(run.measured)])
})

t.test('an OP-stack chain without an authorization list: the plain EIP-1559 runner transaction', async (t) => {
  const node = caliburNode({ l1Fee: 4n }, { l1DataFee: 'op-stack' })
  await node.call('calibur_batch', { chain: 'local', account, calls: [{ to: one }], token: 'USDC', deadline: 4_000_000_000 })
  const asked = node.calls.filter((call) => call.functionName === 'getL1Fee').map((call) => call.args[0] as Hex)
  t.equal(asked.length, 2)
  t.match(asked[0], /^0x02/)
})

t.test('delegationOverride: the account’s one authorization to Calibur, for this chain, by the account, at its nonce', async (t) => {
  const node = caliburNode({ code: { [account]: '0x' }, eoaNonce: 7 })
  const network = node.services.networks.get('local')
  const calibur = '0x000000005c84F8Fd50b21CAC312528A64437030e'
  t.equal(await delegationOverride(network, account, undefined, CALIBUR_ADDRESS), undefined)
  t.equal(await delegationOverride(network, account, [], CALIBUR_ADDRESS), undefined)
  t.equal(node.seen.length, 0, 'nothing read without a list')
  const item = await authorization()
  await rejectsWith(t, delegationOverride(network, account, [item, item], CALIBUR_ADDRESS), "authorizationList: give only the account's own authorization to Calibur")
  await rejectsWith(t, delegationOverride(network, account, [undefined as never], CALIBUR_ADDRESS), "authorizationList: give only the account's own authorization to Calibur")
  const elsewhere = await authorization({ address: two })
  await rejectsWith(t, delegationOverride(network, account, [elsewhere], CALIBUR_ADDRESS), `authorizationList[0] delegates to ${two}, not to Calibur (${calibur})`)
  const lower = await authorization({ address: calibur.toLowerCase() as Address })
  t.strictSame(await delegationOverride(network, account, [lower], CALIBUR_ADDRESS), [{ address: account, code: delegatedTo(calibur) }], 'the address in any case')
  await rejectsWith(t, delegationOverride(network, account, [await authorization({ chainId: 1 })], CALIBUR_ADDRESS), 'authorizationList[0] is for chain 1, not local (31337)')
  t.strictSame(await delegationOverride(network, account, [await authorization({ chainId: 0 })], CALIBUR_ADDRESS), [{ address: account, code: delegatedTo(calibur) }], 'chain 0: any chain')
  await rejectsWith(t, delegationOverride(network, account, [{ ...item, r: zeroHash, s: zeroHash }], CALIBUR_ADDRESS), 'authorizationList[0] has a bad signature: it recovers to no address')
  const stranger = privateKeyToAccount('0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a')
  await rejectsWith(t, delegationOverride(network, account, [await authorization({}, stranger)], CALIBUR_ADDRESS), `authorizationList[0] is signed by ${stranger.address}, not by the account ${account}`)
  await rejectsWith(
    t,
    delegationOverride(network, account, [await authorization({ nonce: 6 })], CALIBUR_ADDRESS),
    "authorizationList[0] carries nonce 6; the account's EOA nonce is 7. Bruno's runner sends the transaction, not the account, so the authorization must carry the account's current nonce",
  )
  // Already delegated elsewhere: re-delegated; a contract cannot be.
  const redelegated = caliburNode({ code: { [account]: delegatedTo(two) }, eoaNonce: 7 })
  t.strictSame(await delegationOverride(redelegated.services.networks.get('local'), account, [item], CALIBUR_ADDRESS), [{ address: account, code: delegatedTo(calibur) }])
  const upper = caliburNode({ code: { [account]: `0xEF0100${two.slice(2)}` as Hex }, eoaNonce: 7 })
  t.strictSame(await delegationOverride(upper.services.networks.get('local'), account, [item], CALIBUR_ADDRESS), [{ address: account, code: delegatedTo(calibur) }], 'a delegation in upper case')
  const contract = caliburNode({ code: { [account]: '0x6080604052' }, eoaNonce: 7 })
  await rejectsWith(t, delegationOverride(contract.services.networks.get('local'), account, [item], CALIBUR_ADDRESS), `${account} is a contract: it cannot be delegated`)
  t.same(
    contract.seen.map((request) => request.method).sort(),
    ['eth_getCode', 'eth_getTransactionCount'],
  )
})

t.test('the input schema: what calibur_batch accepts and refuses', async (t) => {
  const node = caliburNode()
  const base = { chain: 'local', account, calls: [{ to: one }], token: 'USDC' }
  const accepts = (args: Record<string, unknown>, what: string) => t.equal(node.accepts('calibur_batch', args), true, `accepts ${what}`)
  const refuses = (args: Record<string, unknown>, what: string) => t.equal(node.accepts('calibur_batch', args), false, `refuses ${what}`)
  accepts(base, 'the least')
  for (const key of ['chain', 'account', 'calls', 'token']) refuses(Object.fromEntries(Object.entries(base).filter(([name]) => name !== key)), `no ${key}`)
  refuses({ ...base, extra: 1 }, 'an unknown argument')
  refuses({ ...base, chain: 'base' }, 'an unconfigured chain')
  refuses({ ...base, calls: [] }, 'no calls')
  accepts({ ...base, calls: Array.from({ length: 64 }, () => ({ to: one })) }, '64 calls')
  refuses({ ...base, calls: Array.from({ length: 65 }, () => ({ to: one })) }, '65 calls')
  refuses({ ...base, calls: [{ to: one, extra: 1 }] }, 'an unknown call field')
  refuses({ ...base, calls: [{ data: '0x' }] }, 'a call without to')
  for (const value of ['0', '123', '0x0', '0xFF', `0x${'f'.repeat(64)}`, '9'.repeat(78)]) accepts({ ...base, calls: [{ to: one, value }] }, `value ${value}`)
  for (const value of ['', '0x', '-1', '1.5', `0x${'f'.repeat(65)}`, '9'.repeat(79), ' 1', '1 ', 'x1', '0xg']) refuses({ ...base, calls: [{ to: one, value }] }, `value ${JSON.stringify(value)}`)
  for (const chainId of [0, 31337, '0x7a69', '0x0123456789abcdef', '12345678901234567890']) accepts({ ...base, calls: [{ to: one, chainId }] }, `chainId ${chainId}`)
  for (const chainId of [-1, 1.5, '', '0x', '0x0123456789abcdef0', '123456789012345678901', 'a1', ' 1', '1 ', '0xg']) refuses({ ...base, calls: [{ to: one, chainId }] }, `chainId ${JSON.stringify(chainId)}`)
  for (const token of ['', 'x'.repeat(43)]) refuses({ ...base, token }, `token of ${token.length} characters`)
  accepts({ ...base, token: 'x'.repeat(42) }, 'a token of 42 characters')
  accepts({ ...base, deadline: 1 }, 'deadline 1')
  refuses({ ...base, deadline: 0 }, 'deadline 0')
  refuses({ ...base, deadline: 1.5 }, 'a fractional deadline')
  for (const nonceKey of ['0', '9'.repeat(58)]) accepts({ ...base, nonceKey }, `nonceKey of ${nonceKey.length} digits`)
  for (const nonceKey of ['', '9'.repeat(59), '0x1', '-1', ' 1', '1 ']) refuses({ ...base, nonceKey }, `nonceKey ${JSON.stringify(nonceKey)}`)
  const approval = { token: one, spender: two, amountBaseUnits: '1' }
  accepts({ ...base, approvals: Array.from({ length: 16 }, () => approval) }, '16 approvals')
  refuses({ ...base, approvals: Array.from({ length: 17 }, () => approval) }, '17 approvals')
  const item = { chainId: 1, address: one, nonce: 0, r: zeroHash, s: zeroHash, yParity: 0 }
  accepts({ ...base, authorizationList: [item] }, 'one authorization')
  refuses({ ...base, authorizationList: [item, item] }, 'two authorizations')
  const published = node.registry.view(['calibur'])!.tools.get('calibur_batch')!.listing as { inputSchema: { properties: Record<string, { description?: string; items?: { properties: Record<string, { description?: string }> } }> } }
  const input = published.inputSchema.properties
  t.equal(input.account!.description, 'makes the calls and signs')
  t.equal(input.calls!.description, 'in order')
  t.equal(input.token!.description, 'the token to pay in')
  t.equal(input.deadline!.description, 'unix seconds (default: now + submission ttl)')
  t.equal(input.nonceKey!.description, 'Calibur nonce key, decimal (default 0)')
  t.equal(input.authorizationList!.description, "the account's, to Calibur, if not yet delegated; each item as submit's authorizationList")
  t.equal(input.calls!.items!.properties.value!.description, 'wei, decimal or 0x-hex (default 0)')
})

t.test('the output schema: what calibur_batch promises', async (t) => {
  const node = caliburNode()
  const result = await node.call('calibur_batch', { chain: 'local', account, calls: [{ to: one }], token: 'USDC', deadline: 4_000_000_000 })
  const valid = (value: unknown) => node.validOutput('calibur_batch', value)
  t.equal(valid(result), true)
  t.equal(valid({ ...result, extra: 1 }), false, 'nothing else')
  const typedData = result.typedData as Record<string, Record<string, unknown>>
  const withTyped = (typed: unknown) => ({ ...result, typedData: typed })
  t.equal(valid(withTyped({ ...typedData, extra: 1 })), false, 'typedData: nothing else')
  t.equal(valid(withTyped({ ...typedData, primaryType: 'Call' })), false, 'primaryType SignedBatchedCall only')
  t.equal(valid(withTyped({ ...typedData, domain: { ...typedData.domain, name: 'Other' } })), false, 'domain name Calibur only')
  t.equal(valid(withTyped({ ...typedData, domain: { ...typedData.domain, version: '1.0.1' } })), false, 'version 1.0.0 only')
  t.equal(valid(withTyped({ ...typedData, domain: { ...typedData.domain, chainId: 0 } })), false, 'chainId ≥ 1')
  t.equal(valid(withTyped({ ...typedData, domain: { ...typedData.domain, salt: `0x${'a'.repeat(63)}` } })), false, 'salt: 32 bytes')
  t.equal(valid(withTyped({ ...typedData, domain: { ...typedData.domain, extra: 1 } })), false, 'domain: nothing else')
  const message = typedData.message as Record<string, unknown>
  t.equal(valid(withTyped({ ...typedData, message: { ...message, extra: 1 } })), false, 'message: nothing else')
  t.equal(valid(withTyped({ ...typedData, message: { ...message, keyHash: `0x${'0'.repeat(62)}` } })), false, 'keyHash: 32 bytes')
  t.equal(valid(withTyped({ ...typedData, message: { ...message, batchedCall: { calls: [], revertOnFailure: false } } })), false, 'at least one call')
  t.equal(valid(withTyped({ ...typedData, message: { ...message, batchedCall: { ...(message.batchedCall as object), extra: 1 } } })), false, 'batchedCall: nothing else')
  // the payment batch: the same shape, required
  const paymentTypedData = result.paymentTypedData as Record<string, Record<string, unknown>>
  t.equal(valid(Object.fromEntries(Object.entries(result).filter(([key]) => key !== 'paymentTypedData'))), false, 'paymentTypedData: required')
  t.equal(valid(Object.fromEntries(Object.entries(result).filter(([key]) => key !== 'typedData'))), false, 'typedData: required')
  t.equal(valid({ ...result, paymentTypedData: { ...paymentTypedData, extra: 1 } }), false, 'paymentTypedData: nothing else')
  t.equal(valid({ ...result, paymentTypedData: { ...paymentTypedData, primaryType: 'Call' } }), false, 'paymentTypedData: SignedBatchedCall only')
  t.equal(
    valid({ ...result, paymentTypedData: { ...paymentTypedData, message: { ...paymentTypedData.message, batchedCall: { calls: [], revertOnFailure: true } } } }),
    false,
    'paymentTypedData: at least one call',
  )
  t.equal(valid({ ...result, payment: { ...(result.payment as object), extra: 1 } }), false, 'payment: nothing else')
  t.equal(valid({ ...result, gas: { ...(result.gas as object), extra: 1 } }), false, 'gas: nothing else')
  t.equal(valid({ ...result, gas: { ...(result.gas as object), marginBps: 1.5 } }), false, 'margin: an integer')
  const published = node.registry.view(['calibur'])!.tools.get('calibur_batch')!.listing as { outputSchema: { properties: Record<string, { description?: string; properties?: Record<string, { description?: string }> }> } }
  const output = published.outputSchema.properties
  t.equal(output.paymentTypedData!.description, 'the payment batch, in the shape of typedData', 'published once: the shape is typedData\'s')
  t.same(Object.keys(output.paymentTypedData!), ['type', 'required', 'description'])
  t.equal(output.typedData!.description, 'the calls batch, EIP-712 {domain, types, primaryType: SignedBatchedCall, message}: sign both unchanged')
  t.same(Object.keys(output.typedData!), ['type', 'required', 'description'], 'published as the object the wallet signs, validated in full (above)')
  t.equal(output.summary!.description, 'the batch in words')
  t.equal(output.payment!.description, 'the payment batch pays it')
  t.equal(output.nonce!.description, "the payment batch's")
  t.equal(output.payment!.properties!.amount!.description, 'whole token units')
  t.equal(output.calls!.description, 'as signed: approvals added, then the given calls')
  t.equal(output.authorizationList!.description, "pass on to calibur_execute and submit; each item as submit's authorizationList")
  t.equal(output.gas!.properties!.estimated!.description, "the runner transaction's")
  t.equal(output.gas!.properties!.ownerPath!.description, 'measured')
})

