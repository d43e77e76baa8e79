import t from 'tap'
import {
  type Address,
  BaseError,
  concat,
  type Hex,
  type TransactionReceipt,
  createPublicClient,
  createTestClient,
  createWalletClient,
  decodeErrorResult,
  decodeFunctionResult,
  encodeAbiParameters,
  serializeErc6492Signature,
  encodeFunctionData,
  erc20Abi,
  getAddress,
  http,
  isAddressEqual,
  keccak256,
  parseAbi,
  parseAbiParameters,
  parseEther,
  parseEventLogs,
  parseUnits,
  size,
  slice,
  toFunctionSelector,
  toHex,
  zeroAddress,
  zeroHash,
} from 'viem'
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import { devnetChain } from '../core/devnet/chain.ts'
import { caliburCompatibleAbi, runnerAbi } from '../contracts/abi.ts'
import { runnerArtifact } from '../contracts/artifacts.ts'
import { KEEP_PAYMENT, RUNNER_SETTLE_GAS, type RunnerCharge } from '../core/relay/runnerCall.ts'
import { compileTypedFixture } from './fixtures/solidityFixture.ts'
import { startAnvil } from '../core/devnet/anvil.ts'
import { deployDevnet } from '../core/devnet/deploy.ts'
import { devnetPricing, ledgerViolations, runnerLedger } from '../core/testing/runnerLedger.ts'
import { CALIBUR_ADDRESS } from '../plugins/calibur/networkOptions.ts'

// The Runner's guarantees (contracts/Runner.sol, DESIGN §3 "The Runner contract"), each with a test that fails
// without it. The operator sends only transactions that simulate cleanly at the gas they are sent with; where a
// revert is the point, it is observed with eth_call (or debug_traceCall), never sent. The last test checks the
// operator's ledger: nothing reverted, and no relay spent more than its payment was worth.

const anvil = await startAnvil()
t.teardown(() => anvil.stop())
const devnet = await deployDevnet(anvil.rpcUrl)
const transport = http(anvil.rpcUrl)
const chain = devnetChain(devnet.chainId)
const client = createPublicClient({ chain, transport, pollingInterval: 50 })
const testClient = createTestClient({ mode: 'anvil', chain, transport })
const wallet = (privateKey: Hex) => createWalletClient({ account: privateKeyToAccount(privateKey), chain, transport })
const operator = wallet(devnet.runner.operator.privateKey)
const deployer = wallet(devnet.deployer.privateKey)
const runner = devnet.runner.contract
const usdc = devnet.usdc

const demoAccount = (index: number) => {
  const demo = devnet.demoAccounts[index]
  if (!demo) throw new Error(`the devnet has no demo account #${index + 1}`)
  return privateKeyToAccount(demo.privateKey)
}
// #1 is delegated to Calibur below and pays with its batches; #2 only ever signs EIP-3009 transfers; #3 funds.
const delegated = demoAccount(0)
const usdcOnly = demoAccount(1)
const funder = wallet(devnet.demoAccounts[2]!.privateKey)
// anvil #9, the devnet config's payee.
const payee: Address = '0xa0Ee7A142d267C1f36714E4a8F75612F20a79720'
// anvil #8: a payee that has approved the delegated account to pull its USDC.
const approvingPayee = wallet('0xdbda1821b80551c9d65939329250298aa3472ba22feea921c0cf5d620ea67b97')
// anvil #5: anyone who is not the operator.
const stranger = privateKeyToAccount('0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba')
// Where the agents' transfers go.
const sink: Address = '0x5151515151515151515151515151515151515151'

// What each relay pays: enough for its gas at the devnet's fees and pool price (the last test checks the ledger).
const fee = parseUnits('5', 6)
const settleGas = await client.readContract({ address: runner, abi: runnerAbi, functionName: 'SETTLE_GAS' })
const reasonBytes = await client.readContract({ address: runner, abi: runnerAbi, functionName: 'REASON_BYTES' })

// ─── The probe: a test-only target, compiled here with the pinned solc and the contracts' own settings ───

const probeAbi = parseAbi([
  'event Probed(uint256 gasAtEntry, uint256 payeeBalance, uint256 value, address sender)',
  'function BOMB_HEAD() view returns (uint256)',
  'function probe(address token, address payee, uint256 payment) payable returns (uint256, uint256)',
  'function burn() pure',
  'function fail(bytes reason) pure',
  'function bomb(uint256 size, bool reverts) pure',
  'function forward(address to, bytes data)',
  'event SawPaying(address paying)',
  'function payingProbe(address runner, address token, address payee, uint256 payment)',
  'function isValidSignature(bytes32 hash, bytes signature) view returns (bytes4)',
])

const probeArtifact = compileTypedFixture('RunnerProbe', probeAbi)

const mined = async (hash: Hex) => {
  const receipt = await client.waitForTransactionReceipt({ hash })
  if (receipt.status !== 'success') throw new Error(`reverted: ${hash}`)
  return receipt
}

const probe = getAddress((await mined(await deployer.deployContract({ ...probeArtifact }))).contractAddress!)
// relayBatch runs only on an account delegated to the delegate it names: an EOA delegated to the
// probe (EIP-7702) is the probe as a relayed account.
const probeKey = privateKeyToAccount(generatePrivateKey())
const probeAccount = probeKey.address
await mined(
  await deployer.sendTransaction({ to: deployer.account.address, authorizationList: [await deployer.signAuthorization({ account: probeKey, contractAddress: probe })] }),
)

// Setup, none of it by the operator: #1 delegates to Calibur; the approving payee holds USDC and lets #1 pull it.
await mined(
  await deployer.sendTransaction({
    to: delegated.address,
    authorizationList: [await deployer.signAuthorization({ account: delegated, contractAddress: CALIBUR_ADDRESS })],
  }),
)
await mined(
  await funder.writeContract({
    address: usdc,
    abi: erc20Abi,
    functionName: 'transfer',
    args: [approvingPayee.account.address, parseUnits('100', 6)],
  }),
)
// The probe holds USDC, to pay as a relayed account.
await mined(await funder.writeContract({ address: usdc, abi: erc20Abi, functionName: 'transfer', args: [probe, fee * 20n] }))
await mined(await funder.writeContract({ address: usdc, abi: erc20Abi, functionName: 'transfer', args: [probeAccount, fee * 20n] }))
await mined(
  await approvingPayee.writeContract({
    address: usdc,
    abi: erc20Abi,
    functionName: 'approve',
    args: [delegated.address, parseUnits('100', 6)],
  }),
)

// ─── Helpers ───

const usdcBalance = (address: Address) =>
  client.readContract({ address: usdc, abi: erc20Abi, functionName: 'balanceOf', args: [address] })

type Request = { from?: Address; data: Hex; gas?: bigint; value?: bigint; to?: Address }

// The revert data of a simulated call ('0x' for a revert without data), or undefined when it succeeds.
async function revertData({ from = operator.account.address, to = runner, data, gas, value }: Request) {
  try {
    await client.call({ account: from, to, data, ...(gas ? { gas } : {}), ...(value ? { value } : {}) })
    return undefined
  } catch (error) {
    if (!(error instanceof BaseError)) throw error
    const withData = error.walk((inner) => typeof (inner as { data?: unknown }).data === 'string') as {
      data?: Hex
    } | null
    if (withData?.data) return withData.data
    if (/revert/i.test(error.message)) return '0x'
    throw error
  }
}

const runnerError = (data: Hex | undefined) => {
  if (data === undefined) return undefined
  const { errorName, args } = decodeErrorResult({ abi: runnerAbi, data })
  return { errorName, args }
}

// What a relay returns, simulated from the operator: (callSucceeded, callGasUsed, reason).
async function simulate(
  functionName: 'relayWithAuthorization' | 'relayBatch',
  { data, gas }: { data: Hex; gas?: bigint },
) {
  const result = await client.call({ account: operator.account.address, to: runner, data, ...(gas ? { gas } : {}) })
  const [callSucceeded, callGasUsed, reason] =
    functionName === 'relayBatch'
      ? decodeFunctionResult({ abi: runnerAbi, functionName, data: result.data! })
      : decodeFunctionResult({ abi: runnerAbi, functionName, data: result.data! })
  return { callSucceeded, callGasUsed, reason }
}

// The operator sends at the estimate (the lowest limit that succeeds), and only what simulates at that limit.
async function send(data: Hex): Promise<TransactionReceipt> {
  const gas = await client.estimateGas({ account: operator.account.address, to: runner, data })
  const failure = await revertData({ data, gas })
  if (failure !== undefined) throw new Error(`would revert at its estimate ${gas}: ${failure}`)
  return mined(await operator.sendTransaction({ to: runner, data, gas }))
}

// Every relay here keeps its payment (KEEP_PAYMENT: no refund; test/runner-refund.test.ts has the refunds): Relayed
// says so, and the rest of what it logs is returned.
const relayedOf = (receipt: TransactionReceipt) => {
  const events = parseEventLogs({ abi: runnerAbi, eventName: 'Relayed', logs: receipt.logs })
  if (events.length !== 1) throw new Error(`expected one Relayed, got ${events.length}`)
  const { charged, refunded, ...relayed } = events[0]!.args
  if (charged !== relayed.received || refunded !== 0n) throw new Error(`a kept payment logged charged ${charged}, refunded ${refunded} of ${relayed.received}`)
  return relayed
}

const probedOf = (receipt: TransactionReceipt) =>
  parseEventLogs({ abi: probeAbi, eventName: 'Probed', logs: receipt.logs })
    .filter((log) => isAddressEqual(log.address, probe) || isAddressEqual(log.address, probeAccount))
    .map((log) => log.args)

// A signed EIP-3009 transfer of `value` from the USDC-only account to `to`, as the Runner takes it.
async function authorizationFor(value: bigint, to: Address = payee, signer = usdcOnly) {
  const { timestamp } = await client.getBlock()
  const message = {
    from: signer.address,
    to,
    value,
    validAfter: 0n,
    validBefore: timestamp + 3600n,
    nonce: toHex(BigInt(generatePrivateKey()), { size: 32 }),
  }
  const signature = await signer.signTypedData({
    domain: { name: 'USD Coin', version: '2', chainId: devnet.chainId, verifyingContract: usdc },
    types: {
      TransferWithAuthorization: [
        { name: 'from', type: 'address' },
        { name: 'to', type: 'address' },
        { name: 'value', type: 'uint256' },
        { name: 'validAfter', type: 'uint256' },
        { name: 'validBefore', type: 'uint256' },
        { name: 'nonce', type: 'bytes32' },
      ],
    },
    primaryType: 'TransferWithAuthorization',
    message,
  })
  const { to: _to, ...fields } = message
  return { ...fields, signature }
}

type Authorization = Awaited<ReturnType<typeof authorizationFor>>

const relayWithAuthorizationData = (args: {
  target?: Address
  data?: Hex
  callGas?: bigint
  payee?: Address
  amount?: bigint
  authorization: Authorization
  charge?: RunnerCharge
}) =>
  encodeFunctionData({
    abi: runnerAbi,
    functionName: 'relayWithAuthorization',
    args: [
      args.target ?? zeroAddress,
      args.data ?? '0x',
      args.callGas ?? 0n,
      usdc,
      args.payee ?? payee,
      args.amount ?? fee,
      args.authorization,
      args.charge ?? KEEP_PAYMENT,
    ],
  })

const relayBatchData = (args: {
  account?: Address
  delegate?: Address
  target?: Address
  payment: Hex
  paymentGas?: bigint
  data: Hex
  callGas?: bigint
  payee?: Address
  amount?: bigint
  charge?: RunnerCharge
}) =>
  encodeFunctionData({
    abi: runnerAbi,
    functionName: 'relayBatch',
    args: [
      args.account ?? delegated.address,
      args.delegate ?? CALIBUR_ADDRESS,
      { target: args.target ?? args.account ?? delegated.address, payment: args.payment, paymentGas: args.paymentGas ?? 150_000n, data: args.data },
      args.callGas ?? 1_000_000n,
      usdc,
      args.payee ?? payee,
      args.amount ?? fee,
      args.charge ?? KEEP_PAYMENT,
    ],
  })

type Call = { to: Address; value: bigint; data: Hex }
type BatchedCall = { calls: Call[]; revertOnFailure: boolean }

const usdcCall = (data: Hex): Call => ({ to: usdc, value: 0n, data })
const usdcTransfer = (to: Address, amount: bigint) =>
  usdcCall(encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [to, amount] }))
const probeCall = (data: Hex): Call => ({ to: probe, value: 0n, data })
// The probe as a call: it reports what it sees. As relayBatch's account: `probePays` is its payment batch (it pays
// `fee`), `probeData` its batch of calls (it reports).
const probeData = encodeFunctionData({ abi: probeAbi, functionName: 'probe', args: [usdc, payee, 0n] })
const probePays = encodeFunctionData({ abi: probeAbi, functionName: 'probe', args: [usdc, payee, fee] })
const probeRelay = (args: { callGas?: bigint; data?: Hex; payment?: Hex; paymentGas?: bigint; amount?: bigint } = {}) =>
  relayBatchData({ account: probeAccount, delegate: probe, payment: args.payment ?? probePays, data: args.data ?? probeData, ...args })

// The delegated account's signed Calibur `execute` of `batchedCall` (root key, any executor, no deadline), at
// `ahead` past the account's next seq.
async function signedExecute(batchedCall: BatchedCall, ahead = 0n) {
  const seq = await client.readContract({
    address: delegated.address,
    abi: caliburCompatibleAbi,
    functionName: 'getSeq',
    args: [0n],
  })
  const nonce = seq + ahead
  const message = { batchedCall, nonce, keyHash: zeroHash, executor: zeroAddress, deadline: 0n }
  const signature = await delegated.signTypedData({
    domain: {
      name: 'Calibur',
      version: '1.0.0',
      chainId: devnet.chainId,
      verifyingContract: delegated.address,
      salt: toHex(BigInt(CALIBUR_ADDRESS), { size: 32 }),
    },
    types: {
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
    },
    primaryType: 'SignedBatchedCall',
    message,
  })
  const wrapped = encodeAbiParameters([{ type: 'bytes' }, { type: 'bytes' }], [signature, '0x'])
  return encodeFunctionData({ abi: caliburCompatibleAbi, functionName: 'execute', args: [message, wrapped] })
}

// The two batches relayBatch takes, signed: `payment`, the payment-only batch `{[leg], revertOnFailure: true}` at the
// account's next nonce, and `data`, the account's own calls `{calls, revertOnFailure: true}` at the nonce after it.
const payingBatches = async ({ leg = usdcTransfer(payee, fee), legs, calls }: { leg?: Call; legs?: Call[]; calls: Call[] }) => ({
  payment: await signedExecute({ calls: legs ?? [leg], revertOnFailure: true }),
  data: await signedExecute({ calls, revertOnFailure: true }, 1n),
})
const callFailedSelector = toFunctionSelector('CallFailed(bytes)')

// debug_traceCall's call tree, to see which contracts a reverting transaction reached.
type Frame = { to?: string; gasUsed?: Hex; error?: string; calls?: Frame[] }
const traceCall = (data: Hex, gas?: bigint) =>
  (client.request as unknown as (args: { method: string; params: unknown[] }) => Promise<Frame>)({
    method: 'debug_traceCall',
    params: [
      { from: operator.account.address, to: runner, data, ...(gas ? { gas: toHex(gas) } : {}) },
      'latest',
      { tracer: 'callTracer' },
    ],
  })
const reaches = (frame: Frame, address: Address): boolean =>
  (frame.to !== undefined && isAddressEqual(frame.to as Address, address)) ||
  (frame.calls ?? []).some((inner) => reaches(inner, address))

// The gas the probe spends before its first instruction reads gasleft() (dispatch and argument decoding),
// measured by calling it directly: a transaction's execution starts with its limit less the intrinsic gas.
const probeEntryGas = await (async () => {
  const data = probeData
  const gas = 100_000n
  const result = await client.call({ account: stranger.address, to: probe, data, gas })
  const [gasAtEntry] = decodeFunctionResult({ abi: probeAbi, functionName: 'probe', data: result.data! })
  const bytes = Buffer.from(data.slice(2), 'hex')
  const intrinsic = 21_000n + BigInt(bytes.reduce((sum, byte) => sum + (byte === 0 ? 4 : 16), 0))
  return gas - intrinsic - gasAtEntry
})()

// ─── The tests ───

t.test('the devnet deploys the Runner for anvil #4, and it holds nothing', async (t) => {
  t.equal(devnet.runner.operator.address, '0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65')
  t.equal(
    await client.readContract({ address: runner, abi: runnerAbi, functionName: 'operator' }),
    devnet.runner.operator.address,
  )
  t.equal(await client.getCode({ address: delegated.address }), `0xef0100${CALIBUR_ADDRESS.slice(2).toLowerCase()}`)
  t.equal(await client.getBalance({ address: runner }), 0n)
  t.equal(await usdcBalance(runner), 0n)
  t.ok(probeEntryGas > 0n && probeEntryGas < 500n, `the probe reads gasleft() ${probeEntryGas} gas into its call`)
  // The relay prices with these (core/relay/runnerCall.ts, SPEC): the contract must hold the same.
  t.equal(reasonBytes, 256n, 'a failed call\'s reason keeps 256 bytes')
  t.equal(settleGas, RUNNER_SETTLE_GAS, 'the settle reserve the relay prices is the contract\'s')
})

t.test('operator-only: both entry points refuse anyone else, and a call cannot re-enter them', async (t) => {
  // Requests that would succeed from the operator (checked), so only the sender decides.
  const withAuthorization = relayWithAuthorizationData({ authorization: await authorizationFor(fee) })
  const batch = probeRelay({ callGas: 100_000n })
  t.equal(await revertData({ data: withAuthorization }), undefined, 'relayWithAuthorization: the operator may')
  t.equal(await revertData({ data: batch }), undefined, 'relayBatch: the operator may')
  const notOperator = { errorName: 'NotOperator', args: undefined }
  for (const from of [stranger.address, usdcOnly.address, delegated.address, runner]) {
    t.same(runnerError(await revertData({ from, data: withAuthorization })), notOperator, `${from}: relayWithAuthorization`)
    t.same(runnerError(await revertData({ from, data: batch })), notOperator, `${from}: relayBatch`)
  }

  // A relayed call that calls the Runner back is refused like anyone else: the call fails, the relay stands.
  for (const inner of [withAuthorization, batch]) {
    const reentering = relayWithAuthorizationData({
      target: probe,
      data: encodeFunctionData({ abi: probeAbi, functionName: 'forward', args: [runner, inner] }),
      callGas: 500_000n,
      authorization: await authorizationFor(fee),
    })
    const result = await simulate('relayWithAuthorization', { data: reentering })
    t.equal(result.callSucceeded, false, 're-entering fails')
    t.same(runnerError(result.reason), notOperator, 'with NotOperator')
  }
})

t.test('further operators (a runner\'s lanes): only the owner allows or stops one; allowed, it relays as the operator does, for one storage read more', async (t) => {
  const lane = privateKeyToAccount(generatePrivateKey()).address
  const withAuthorization = relayWithAuthorizationData({ authorization: await authorizationFor(fee) })
  const batch = probeRelay({ callGas: 100_000n })
  const notOperator = { errorName: 'NotOperator', args: undefined }
  const setOperator = (allowed: boolean) => encodeFunctionData({ abi: runnerAbi, functionName: 'setOperator', args: [lane, allowed] })
  t.equal(await client.readContract({ address: runner, abi: runnerAbi, functionName: 'owner' }), deployer.account.address, 'the deployer owns the devnet\'s Runner')
  t.same(runnerError(await revertData({ from: lane, data: withAuthorization })), notOperator, 'not yet allowed: NotOperator')
  for (const from of [stranger.address, operator.account.address, lane]) {
    t.same(runnerError(await revertData({ from, data: setOperator(true) })), { errorName: 'NotOwner', args: undefined }, `${from} may not allow one`)
  }
  t.same(
    runnerError(await revertData({ from: deployer.account.address, data: encodeFunctionData({ abi: runnerAbi, functionName: 'setOperator', args: [runner, true] }) })),
    { errorName: 'RunnerCannotOperate', args: undefined },
    'the Runner itself is never an operator: a relayed call runs as the Runner',
  )

  const allowed = await mined(await deployer.sendTransaction({ to: runner, data: setOperator(true) }))
  t.same(parseEventLogs({ abi: runnerAbi, eventName: 'OperatorSet', logs: allowed.logs }).map((log) => log.args), [{ operator: lane, allowed: true }], 'OperatorSet logged')
  t.equal(await client.readContract({ address: runner, abi: runnerAbi, functionName: 'isOperator', args: [lane] }), true)
  for (const data of [withAuthorization, batch]) t.equal(await revertData({ from: lane, data }), undefined, 'allowed: it relays')
  // Its check reads the set (a cold slot): 2,100 gas more than the first lane's, which the immutable answers.
  const [first, further] = await Promise.all([operator.account.address, lane].map((account) => client.estimateGas({ account, to: runner, data: withAuthorization })))
  t.ok(further! - first! >= 2_100n && further! - first! <= 2_300n, `a further lane's relay estimates ${further! - first!} gas more`)

  await mined(await deployer.sendTransaction({ to: runner, data: setOperator(false) }))
  t.equal(await client.readContract({ address: runner, abi: runnerAbi, functionName: 'isOperator', args: [lane] }), false)
  for (const data of [withAuthorization, batch]) t.same(runnerError(await revertData({ from: lane, data })), notOperator, 'stopped: NotOperator again')
  t.equal(await revertData({ data: withAuthorization }), undefined, 'the first lane is untouched')
})

t.test('sweep: tokens sent to the Runner by mistake are open to a relayed call until the operator sends them on', async (t) => {
  const held = parseUnits('7', 6)
  const sweepData = encodeFunctionData({ abi: runnerAbi, functionName: 'sweep', args: [usdc, payee] })
  const sweepResult = async () => decodeFunctionResult({ abi: runnerAbi, functionName: 'sweep', data: (await client.call({ account: operator.account.address, to: runner, data: sweepData })).data! })
  t.equal(await sweepResult(), 0n, 'nothing held: 0')
  await mined(await funder.writeContract({ address: usdc, abi: erc20Abi, functionName: 'transfer', args: [runner, held] }))
  // A relayed call runs as msg.sender == Runner: a call to the token moves what the Runner holds.
  const taking = relayWithAuthorizationData({
    target: usdc,
    data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [sink, held] }),
    callGas: 100_000n,
    authorization: await authorizationFor(fee),
  })
  t.equal((await simulate('relayWithAuthorization', { data: taking })).callSucceeded, true, 'held: a relayed transfer of them succeeds')
  for (const from of [stranger.address, usdcOnly.address, runner]) {
    t.same(runnerError(await revertData({ from, data: sweepData })), { errorName: 'NotOperator', args: undefined }, `${from}: NotOperator`)
  }
  t.equal(await sweepResult(), held, 'the operator: the whole balance')
  const payeeBefore = await usdcBalance(payee)
  const receipt = await send(sweepData)
  t.same(parseEventLogs({ abi: runnerAbi, eventName: 'Swept', logs: receipt.logs }).map((log) => log.args), [{ token: usdc, to: payee, amount: held }])
  t.equal(await usdcBalance(runner), 0n, 'the Runner holds none')
  t.equal(await usdcBalance(payee), payeeBefore + held, 'sent to `to`')
  t.equal((await simulate('relayWithAuthorization', { data: taking })).callSucceeded, false, 'swept: the same call moves nothing')
  t.equal(await sweepResult(), 0n)
})

t.test('relayWithAuthorization: the payee is paid before the call, which gets exactly callGas and no value', async (t) => {
  const callGas = 300_000n
  const data = relayWithAuthorizationData({
    target: probe,
    data: probeData,
    callGas,
    authorization: await authorizationFor(fee),
  })
  // The lowest limit that succeeds (the estimate, which `send` uses) is the one that gives the call all of
  // callGas: one gas less and the Runner refuses before the call, rather than call with less.
  const gas = await client.estimateGas({ account: operator.account.address, to: runner, data })
  const short = runnerError(await revertData({ data, gas: gas - 1n }))
  t.equal(short?.errorName, 'GasShort', 'one gas below the estimate: GasShort')
  t.equal((short?.args as readonly bigint[] | undefined)?.[1], callGas + callGas / 63n + settleGas)

  const [payeeBefore, fromBefore] = [await usdcBalance(payee), await usdcBalance(usdcOnly.address)]
  const receipt = await send(data)
  const [probed] = probedOf(receipt)
  t.equal(probed?.payeeBalance, payeeBefore + fee, 'the call saw the payee already paid')
  t.equal(probed?.gasAtEntry, callGas - probeEntryGas, 'the call was given exactly callGas')
  t.equal(probed?.value, 0n, 'and no value')
  t.equal(probed?.sender, runner)
  t.same(relayedOf(receipt), { target: probe, payee, received: fee, callSucceeded: true, reason: '0x' })
  t.equal(await usdcBalance(payee), payeeBefore + fee)
  t.equal(await usdcBalance(usdcOnly.address), fromBefore - fee)
})

t.test('relayWithAuthorization: an amount above what the transfer pays is PaymentShort', async (t) => {
  const authorization = await authorizationFor(fee)
  for (const target of [zeroAddress, probe]) {
    const data = relayWithAuthorizationData({
      target,
      data: target === probe ? probeData : '0x',
      callGas: 100_000n,
      amount: fee + 1n,
      authorization,
    })
    t.same(runnerError(await revertData({ data })), { errorName: 'PaymentShort', args: [fee, fee + 1n] })
  }
  // A transfer to someone else is no payment to the payee: the token refuses the signature's `to`.
  const elsewhere = await revertData({ data: relayWithAuthorizationData({ payee: sink, authorization }) })
  t.not(elsewhere, undefined, 'an authorization is only good for its own payee')
})

t.test('relayWithAuthorization: a payer with code off the list is PayerHasCode, before the token can run its code; the devnet lists Calibur\'s delegation, whose accounts pay by its ERC-1271 (issue 46)', async (t) => {
  // FiatToken checks a payer with code by ERC-1271: the payer's own code would run inside the payment phase.
  t.not(await client.getCode({ address: probeAccount }), undefined, 'the payer has 7702 code')
  const unlisted = await authorizationFor(fee, payee, probeKey)
  t.same(runnerError(await revertData({ data: relayWithAuthorizationData({ authorization: unlisted }) })), { errorName: 'PayerHasCode', args: [probeAccount] }, 'delegated to the probe, off the list')
  const caliburCode = keccak256(concat(['0xef0100', CALIBUR_ADDRESS]))
  t.equal(await client.readContract({ address: runner, abi: runnerAbi, functionName: 'payerCodeAllowed', args: [caliburCode] }), true, 'the devnet\'s Calibur group listed its delegation')
  t.equal(keccak256((await client.getCode({ address: delegated.address }))!), caliburCode, 'the payer is delegated to Calibur')
  const payeeBefore = await usdcBalance(payee)
  const paid = await send(relayWithAuthorizationData({ authorization: await authorizationFor(fee, payee, delegated) }))
  t.same(relayedOf(paid), { target: zeroAddress, payee, received: fee, callSucceeded: true, reason: '0x' }, 'Calibur\'s isValidSignature took the account\'s own signature')
  t.equal(await usdcBalance(payee), payeeBefore + fee)
  t.comment(`a Calibur-delegated account's signed transfer, no call: ${paid.gasUsed} gas`)
})

t.test('relayWithAuthorization: a payer with code the owner allowed (payerCodeAllowed) pays by ERC-1271; any other code is PayerHasCode (issue 46)', async (t) => {
  // probeAccount is an EOA delegated to the probe, whose isValidSignature takes the EOA's own signature.
  const probeCode = keccak256(concat(['0xef0100', probe]))
  const setPayerCode = (codehash: Hex, allowed: boolean) => encodeFunctionData({ abi: runnerAbi, functionName: 'setPayerCode', args: [codehash, allowed] })
  const relay = async () => relayWithAuthorizationData({ authorization: await authorizationFor(fee, payee, probeKey) })
  t.same(runnerError(await revertData({ data: await relay() })), { errorName: 'PayerHasCode', args: [probeAccount] }, 'not yet allowed')
  for (const from of [operator.account.address, stranger.address]) {
    t.same(runnerError(await revertData({ from, data: setPayerCode(probeCode, true) })), { errorName: 'NotOwner', args: undefined }, `${from} may not allow payer code`)
  }
  const allowed = await mined(await deployer.sendTransaction({ to: runner, data: setPayerCode(probeCode, true) }))
  t.same(parseEventLogs({ abi: runnerAbi, eventName: 'PayerCodeSet', logs: allowed.logs }).map((log) => log.args), [{ codehash: probeCode, allowed: true }], 'PayerCodeSet logged')
  t.equal(await client.readContract({ address: runner, abi: runnerAbi, functionName: 'payerCodeAllowed', args: [probeCode] }), true)
  const payeeBefore = await usdcBalance(payee)
  const paid = await send(await relay())
  t.same(relayedOf(paid), { target: zeroAddress, payee, received: fee, callSucceeded: true, reason: '0x' }, 'the token checked the signature by the payer\'s code, and the payment landed')
  t.equal(await usdcBalance(payee), payeeBefore + fee)
  // Other code stays refused: an account delegated to USDC's contract (its designator is another hash).
  const other = privateKeyToAccount(generatePrivateKey())
  await mined(await deployer.sendTransaction({ to: deployer.account.address, authorizationList: [await deployer.signAuthorization({ account: other, contractAddress: usdc })] }))
  t.same(runnerError(await revertData({ data: relayWithAuthorizationData({ authorization: await authorizationFor(fee, payee, other) }) })), { errorName: 'PayerHasCode', args: [other.address] }, 'other code')
  await mined(await deployer.sendTransaction({ to: runner, data: setPayerCode(probeCode, false) }))
  t.same(runnerError(await revertData({ data: await relay() })), { errorName: 'PayerHasCode', args: [probeAccount] }, 'stopped again')
})

// ─── Smart-wallet payers (issue 46): a wallet's own signature by the token's bytes form, ERC-6492 for one not deployed ───

const walletAbi = parseAbi([
  'function owner() view returns (address)',
  'function setOwner(address next)',
  'function isValidSignature(bytes32 hash, bytes signature) view returns (bytes4)',
])
const walletFactoryAbi = parseAbi(['function createWallet(address owner) returns (address wallet)', 'function walletOf(address owner) view returns (address)'])
const walletArtifact = compileTypedFixture('WalletFixture', walletAbi)
const walletFactoryArtifact = compileTypedFixture('WalletFixtureFactory', walletFactoryAbi, 'WalletFixture')
const setPayerCodeData = (codehash: Hex, allowed: boolean) => encodeFunctionData({ abi: runnerAbi, functionName: 'setPayerCode', args: [codehash, allowed] })
const setWalletFactoryData = (factory: Address, allowed: boolean) => encodeFunctionData({ abi: runnerAbi, functionName: 'setWalletFactory', args: [factory, allowed] })

// A transfer signed by `owner` for `wallet`, the signature wrapped as the wallet takes it (`abi.encode(bytes)`).
async function walletAuthorizationFor(wallet: Address, owner: PrivateKeyAccount, value = fee) {
  const { signature, ...fields } = await authorizationFor(value, payee, { ...owner, address: wallet } as PrivateKeyAccount)
  return { ...fields, signature: encodeAbiParameters([{ type: 'bytes' }], [signature]) }
}

t.test('relayWithAuthorization: a deployed wallet on the owner\'s list pays with its own signature, by the token\'s bytes form (issue 46)', async (t) => {
  const ownerKey = generatePrivateKey()
  const owner = privateKeyToAccount(ownerKey)
  await mined(await deployer.sendTransaction({ to: owner.address, value: parseEther('1') }))
  const smartWallet = getAddress((await mined(await deployer.deployContract({ ...walletArtifact, args: [owner.address] }))).contractAddress!)
  await mined(await funder.writeContract({ address: usdc, abi: erc20Abi, functionName: 'transfer', args: [smartWallet, fee * 4n] }))
  const walletCode = keccak256((await client.getCode({ address: smartWallet }))!)
  const authorization = await walletAuthorizationFor(smartWallet, owner)
  t.equal(size(authorization.signature), 160, 'a signature of 160 bytes: not the (v, r, s) form')
  t.same(runnerError(await revertData({ data: relayWithAuthorizationData({ authorization }) })), { errorName: 'PayerHasCode', args: [smartWallet] }, 'off the list')
  await mined(await deployer.sendTransaction({ to: runner, data: setPayerCodeData(walletCode, true) }))
  const payeeBefore = await usdcBalance(payee)
  const paid = await send(relayWithAuthorizationData({ authorization }))
  t.same(relayedOf(paid), { target: zeroAddress, payee, received: fee, callSucceeded: true, reason: '0x' })
  t.equal(await usdcBalance(payee), payeeBefore + fee, 'paid by FiatToken\'s bytes form, checked by the wallet\'s ERC-1271')
  t.comment(`a deployed wallet's signed transfer, no call: ${paid.gasUsed} gas`)
  // Another key's signature, in the same wrapper: the token refuses it, and the relay reverts whole.
  const forged = await walletAuthorizationFor(smartWallet, privateKeyToAccount(generatePrivateKey()))
  t.match(await revertData({ data: relayWithAuthorizationData({ authorization: forged }) }), /^0x08c379a0/, 'FiatToken\'s "invalid signature"')
  // The owner hands the wallet on in the block before: its old signature is void, as the owner chose.
  const stale = await walletAuthorizationFor(smartWallet, owner)
  await mined(await wallet(ownerKey).writeContract({ address: smartWallet, abi: walletAbi, functionName: 'setOwner', args: [stranger.address] }))
  t.match(await revertData({ data: relayWithAuthorizationData({ authorization: stale }) }), /^0x08c379a0/, 'void once the owner changed it')
  // A stranger cannot: only the owner changes what the wallet accepts.
  t.not(await revertData({ from: owner.address, to: smartWallet, data: encodeFunctionData({ abi: walletAbi, functionName: 'setOwner', args: [owner.address] }) }), undefined, 'no longer the owner')
  await mined(await deployer.sendTransaction({ to: runner, data: setPayerCodeData(walletCode, false) }))
})

t.test('relayWithAuthorization: an account\'s 65-byte signature takes the (v, r, s) form, which every EIP-3009 token has (issue 46)', async (t) => {
  const vrsTokenAbi = parseAbi([
    'function balanceOf(address) view returns (uint256)',
    'function mint(address to, uint256 amount)',
    'function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, uint8 v, bytes32 r, bytes32 s)',
  ])
  const vrsToken = getAddress((await mined(await deployer.deployContract({ ...compileTypedFixture('VrsOnlyToken', vrsTokenAbi) }))).contractAddress!)
  await mined(await deployer.writeContract({ address: vrsToken, abi: vrsTokenAbi, functionName: 'mint', args: [usdcOnly.address, fee] }))
  const fields = { from: usdcOnly.address, value: fee, validAfter: 0n, validBefore: 2n ** 40n, nonce: toHex(7n, { size: 32 }) }
  const digest = keccak256(encodeAbiParameters(parseAbiParameters('address, address, uint256, uint256, uint256, bytes32'), [fields.from, payee, fields.value, fields.validAfter, fields.validBefore, fields.nonce]))
  const data = encodeFunctionData({
    abi: runnerAbi,
    functionName: 'relayWithAuthorization',
    args: [zeroAddress, '0x', 0n, vrsToken, payee, fee, { ...fields, signature: await usdcOnly.sign({ hash: digest }) }, KEEP_PAYMENT],
  })
  // Simulated, not sent: the runner ledger prices only the devnet's tokens, and this one is worth nothing.
  t.equal(await revertData({ data }), undefined, 'a token with no bytes form took it')
  t.same(await simulate('relayWithAuthorization', { data }), { callSucceeded: true, callGasUsed: 0n, reason: '0x' })
  const wallet = encodeAbiParameters([{ type: 'bytes' }], [await usdcOnly.sign({ hash: digest })])
  const asWallet = encodeFunctionData({ abi: runnerAbi, functionName: 'relayWithAuthorization', args: [zeroAddress, '0x', 0n, vrsToken, payee, fee, { ...fields, signature: wallet }, KEEP_PAYMENT] })
  t.equal(await revertData({ data: asWallet }), '0x', 'a wallet\'s signature goes to the bytes form, which this token lacks')
})

t.test('relayWithAuthorization: ERC-6492 — a listed factory deploys the payer, then it pays; nothing else deploys or pays (issue 46)', async (t) => {
  const factory = getAddress((await mined(await deployer.deployContract({ ...walletFactoryArtifact }))).contractAddress!)
  const owner = privateKeyToAccount(generatePrivateKey())
  const wallet = await client.readContract({ address: factory, abi: walletFactoryAbi, functionName: 'walletOf', args: [owner.address] })
  t.equal(await client.getCode({ address: wallet }), undefined, 'not deployed')
  await mined(await funder.writeContract({ address: usdc, abi: erc20Abi, functionName: 'transfer', args: [wallet, fee * 4n] }))
  const create = (who: Address) => encodeFunctionData({ abi: walletFactoryAbi, functionName: 'createWallet', args: [who] })
  const wrapped = async (data: Hex, by: Address = factory) => {
    const { signature, ...fields } = await walletAuthorizationFor(wallet, owner)
    return { ...fields, signature: serializeErc6492Signature({ address: by, data, signature }) }
  }
  const refusal = async (authorization: Awaited<ReturnType<typeof wrapped>>) => runnerError(await revertData({ data: relayWithAuthorizationData({ authorization }) }))
  t.same(await refusal(await wrapped(create(owner.address))), { errorName: 'WalletFactoryNotAllowed', args: [factory] }, 'a factory off the list')
  for (const from of [operator.account.address, stranger.address]) {
    t.same(runnerError(await revertData({ from, data: setWalletFactoryData(factory, true) })), { errorName: 'NotOwner', args: undefined }, `${from} may not list a factory`)
  }
  const listed = await mined(await deployer.sendTransaction({ to: runner, data: setWalletFactoryData(factory, true) }))
  t.same(parseEventLogs({ abi: runnerAbi, eventName: 'WalletFactorySet', logs: listed.logs }).map((log) => log.args), [{ factory, allowed: true }], 'WalletFactorySet logged')
  t.same(await refusal(await wrapped(create(owner.address))), { errorName: 'PayerHasCode', args: [wallet] }, 'deployed, but its code is off the list')
  const sample = getAddress((await mined(await deployer.deployContract({ ...walletArtifact, args: [owner.address] }))).contractAddress!)
  const walletCode = keccak256((await client.getCode({ address: sample }))!)
  await mined(await deployer.sendTransaction({ to: runner, data: setPayerCodeData(walletCode, true) }))
  t.same(await refusal(await wrapped(create(stranger.address))), { errorName: 'PayerNotDeployed', args: [wallet] }, 'a factory call that deploys another wallet')
  t.same(await refusal(await wrapped('0xdeadbeef')), { errorName: 'PayerNotDeployed', args: [wallet] }, 'a factory call that reverts')
  t.same(await refusal(await wrapped(create(owner.address), probe)), { errorName: 'WalletFactoryNotAllowed', args: [probe] }, 'another contract named as the factory')

  const payeeBefore = await usdcBalance(payee)
  const paid = await send(relayWithAuthorizationData({ authorization: await wrapped(create(owner.address)) }))
  t.same(relayedOf(paid), { target: zeroAddress, payee, received: fee, callSucceeded: true, reason: '0x' })
  t.equal(await usdcBalance(payee), payeeBefore + fee, 'paid, by the wallet deployed in the same transaction')
  t.equal(keccak256((await client.getCode({ address: wallet }))!), walletCode, 'the wallet is deployed')
  t.comment(`an undeployed wallet's signed transfer, its deployment included, no call: ${paid.gasUsed} gas`)
  // Deployed now: its factory is not called again, whatever the wrapper names (ERC-6492: the inner signature alone).
  const again = await send(relayWithAuthorizationData({ authorization: await wrapped(create(owner.address), probe) }))
  t.same(relayedOf(again), { target: zeroAddress, payee, received: fee, callSucceeded: true, reason: '0x' }, 'a second payment, the factory passed over')
  t.ok(again.gasUsed < paid.gasUsed - 30_000n, `${again.gasUsed} gas without the deployment`)
  await mined(await deployer.sendTransaction({ to: runner, data: setWalletFactoryData(factory, false) }))
  await mined(await deployer.sendTransaction({ to: runner, data: setPayerCodeData(walletCode, false) }))
  t.equal(await client.readContract({ address: runner, abi: runnerAbi, functionName: 'walletFactoryAllowed', args: [factory] }), false, 'stopped again')
})

t.test('relayBatch: an account not delegated to the named delegate is NotDelegated, before anything runs', async (t) => {
  const batches = await payingBatches({ calls: [probeCall(probeData)] })
  const wrongDelegate = runnerError(await revertData({ data: relayBatchData({ ...batches, delegate: probe }) }))
  t.same(wrongDelegate, { errorName: 'NotDelegated', args: [delegated.address, probe] }, 'delegated to Calibur, not to the one named')
  const plain = runnerError(await revertData({ data: relayBatchData({ account: usdcOnly.address, ...batches }) }))
  t.same(plain, { errorName: 'NotDelegated', args: [usdcOnly.address, CALIBUR_ADDRESS] }, 'an account with no code')
  t.equal(runnerError(await revertData({ data: relayBatchData(batches) })), undefined, 'the same batches on the account Calibur runs')
})

t.test('relayBatch: the payment batch runs first, in a call of its own, and the agent\'s calls run after it with the payee paid', async (t) => {
  const data = relayBatchData(await payingBatches({ calls: [probeCall(probeData), usdcTransfer(sink, 1n)] }))
  const [payeeBefore, sinkBefore] = [await usdcBalance(payee), await usdcBalance(sink)]
  const trace = await traceCall(data)
  const accountCalls = (trace.calls ?? []).filter((frame) => frame.to !== undefined && isAddressEqual(frame.to as Address, delegated.address))
  t.equal(accountCalls.length, 2, 'the Runner calls the account twice: the payment batch, then the batch of calls')
  t.equal(reaches(accountCalls[0]!, probe), false, 'the first call (the payment) reaches no agent call')
  t.equal(reaches(accountCalls[1]!, probe), true, 'the second runs the agent\'s calls')
  const receipt = await send(data)
  const [probed] = probedOf(receipt)
  t.equal(probed?.payeeBalance, payeeBefore + fee, 'the agent\'s call saw the payee already paid')
  t.equal(probed?.sender, delegated.address, 'made by the account')
  t.equal(probed?.value, 0n)
  t.same(relayedOf(receipt), { target: delegated.address, payee, received: fee, callSucceeded: true, reason: '0x' })
  t.equal(await usdcBalance(payee), payeeBefore + fee)
  t.equal(await usdcBalance(sink), sinkBefore + 1n)
})

t.test('relayBatch: both batches go to the target, which need not be the account; the account is still the one checked', async (t) => {
  // The probe stands in for a contract that makes the account run its batches (a delegation manager, an
  // EntryPoint): the account is Calibur's, the batches are the probe's own.
  const data = relayBatchData({ account: delegated.address, target: probeAccount, payment: probePays, data: probeData })
  const trace = await traceCall(data)
  const called = (trace.calls ?? []).filter((frame) => frame.to !== undefined && !isAddressEqual(frame.to as Address, usdc)).map((frame) => getAddress(frame.to!))
  t.same(called, [probeAccount, probeAccount], 'the Runner sends the payment batch, then the batch of calls, to the target; never to the account or the delegate')
  const payeeBefore = await usdcBalance(payee)
  const receipt = await send(data)
  const [paying, probed] = probedOf(receipt)
  t.equal(paying?.payeeBalance, payeeBefore + fee, 'the payment phase paid')
  t.equal(probed?.payeeBalance, payeeBefore + fee, 'the call phase ran the batch of calls, which pays nothing more')
  t.equal(await usdcBalance(payee), payeeBefore + fee)
  t.same(relayedOf(receipt), { target: delegated.address, payee, received: fee, callSucceeded: true, reason: '0x' }, 'Relayed names the account')
  const undelegated = runnerError(await revertData({ data: relayBatchData({ account: usdcOnly.address, target: probeAccount, payment: probePays, data: probeData }) }))
  t.same(undelegated, { errorName: 'NotDelegated', args: [usdcOnly.address, CALIBUR_ADDRESS] }, 'the 7702 check is on the account, whatever the target')
})

t.test('relayBatch: paying() names the account during its payment phase only, not during its calls nor outside a relay (issue 43, point 5)', async (t) => {
  const payingOf = (receipt: TransactionReceipt) =>
    parseEventLogs({ abi: probeAbi, eventName: 'SawPaying', logs: receipt.logs }).map((log) => log.args.paying)
  const payingProbe = (payment: bigint) => encodeFunctionData({ abi: probeAbi, functionName: 'payingProbe', args: [runner, usdc, payee, payment] })
  t.equal(await client.readContract({ address: runner, abi: runnerAbi, functionName: 'paying' }), zeroAddress, 'outside a relay: no one')
  // The target is not the account (the probe stands in for an EntryPoint): paying() names the account, not the target.
  const batch = await send(relayBatchData({ account: delegated.address, target: probeAccount, payment: payingProbe(fee), data: payingProbe(0n) }))
  t.same(payingOf(batch), [delegated.address, zeroAddress], 'the payment batch sees its account; the batch of calls sees no one')
  t.same(relayedOf(batch), { target: delegated.address, payee, received: fee, callSucceeded: true, reason: '0x' })
  // A relayed call (it runs as the Runner) of a signed transfer's relay sees no one either.
  const transfer = await send(relayWithAuthorizationData({ target: probe, data: payingProbe(0n), callGas: 200_000n, authorization: await authorizationFor(fee) }))
  t.same(payingOf(transfer), [zeroAddress], 'the call phase of relayWithAuthorization: no one')
  t.equal(await client.readContract({ address: runner, abi: runnerAbi, functionName: 'paying' }), zeroAddress, 'and after the relays: no one')
})

t.test('relayBatch: a payment batch that fails reverts the whole transaction with PaymentFailed, and no agent call runs', async (t) => {
  const failingLeg = usdcTransfer(payee, parseUnits('1000000000', 6))
  const failing = relayBatchData(await payingBatches({ leg: failingLeg, calls: [probeCall(probeData)] }))
  const failure = runnerError(await revertData({ data: failing }))
  t.equal(failure?.errorName, 'PaymentFailed', 'the payment batch reverted')
  const [reason] = (failure?.args ?? []) as readonly Hex[]
  t.equal(reason?.slice(0, 10), callFailedSelector, 'with its own reason: Calibur\'s CallFailed of the transfer')
  const trace = await traceCall(failing)
  t.ok(trace.error, 'the traced transaction reverts')
  t.equal(reaches(trace, probe), false, 'the agent\'s call was never made')
  const paid = relayBatchData(await payingBatches({ calls: [probeCall(probeData)] }))
  t.equal(reaches(await traceCall(paid), probe), true, 'the same batches with their payment reach the probe')
  t.comment(`gas: a relay whose payment batch fails costs ${BigInt(trace.gasUsed ?? '0x0')} (then reverts)`)

  // The agent's calls cannot make up for a failed payment: a payment hidden in them never runs.
  const hidden = relayBatchData(await payingBatches({ leg: failingLeg, calls: [usdcTransfer(payee, fee)] }))
  t.equal(runnerError(await revertData({ data: hidden }))?.errorName, 'PaymentFailed')

  // A payment batch that pays less than the amount: PaymentShort, before any agent call.
  const under = relayBatchData({ ...(await payingBatches({ calls: [probeCall(probeData)] })), amount: fee + 1n })
  t.same(runnerError(await revertData({ data: under })), { errorName: 'PaymentShort', args: [fee, fee + 1n] })
  t.equal(reaches(await traceCall(under), probe), false, 'no agent call when short')
  // A batch of calls that would pay the rest counts for nothing: the payment is judged before it runs.
  const toppedUp = relayBatchData({ ...(await payingBatches({ calls: [usdcTransfer(payee, 1n)] })), amount: fee + 1n })
  t.same(runnerError(await revertData({ data: toppedUp })), { errorName: 'PaymentShort', args: [fee, fee + 1n] })
})

t.test('relayBatch: the payment phase gets at most paymentGas, so a payment that fails costs at most that', async (t) => {
  const burn = encodeFunctionData({ abi: probeAbi, functionName: 'burn' })
  for (const paymentGas of [30_000n, 120_000n]) {
    const data = probeRelay({ payment: burn, paymentGas })
    t.same(runnerError(await revertData({ data })), { errorName: 'PaymentFailed', args: ['0x'] }, `a burning payment with ${paymentGas}`)
    const trace = await traceCall(data, 2_000_000n)
    const used = BigInt(trace.gasUsed ?? '0x0')
    t.ok(used > paymentGas && used < paymentGas + 40_000n, `it used ${used} gas: the cap and the Runner's own work`)
    t.equal(reaches(trace, probeAccount), true, 'the burn ran (as the delegated account\'s code)')
  }
  // A payment batch that returns megabytes of revert data: only REASON_BYTES of it are kept, within the cap.
  const bombing = probeRelay({ payment: encodeFunctionData({ abi: probeAbi, functionName: 'bomb', args: [2_000_000n, true] }), paymentGas: 100_000n })
  const failure = runnerError(await revertData({ data: bombing }))
  t.equal(failure?.errorName, 'PaymentFailed', 'a payment that cannot afford its own bomb fails')
  t.ok(BigInt(size((failure?.args as readonly Hex[])[0]!)) <= reasonBytes, 'its reason is at most 256 bytes')
})

t.test('relayBatch: the payment is judged once, after the payment phase; nothing the calls do after can revert the relay', async (t) => {
  // The approving payee let the account pull its USDC. The payment batch pays it and pulls some back.
  const to = approvingPayee.account.address
  const pull = (amount: bigint) =>
    usdcCall(encodeFunctionData({ abi: erc20Abi, functionName: 'transferFrom', args: [to, sink, amount] }))
  const relay = async (legs: Call[], calls: Call[] = [usdcTransfer(sink, 1n)]) =>
    relayBatchData({ ...(await payingBatches({ legs, calls })), payee: to })
  t.equal(await revertData({ data: await relay([usdcTransfer(to, fee)]) }), undefined, 'paid and nothing pulled: fine')
  t.same(runnerError(await revertData({ data: await relay([usdcTransfer(to, fee), pull(fee / 2n)]) })), { errorName: 'PaymentShort', args: [fee / 2n, fee] })
  t.same(runnerError(await revertData({ data: await relay([usdcTransfer(to, fee), pull(fee)]) })), { errorName: 'PaymentShort', args: [0n, fee] })
  // More pulled than paid: the balance fell, which is no payment at all (and no underflow).
  t.same(runnerError(await revertData({ data: await relay([usdcTransfer(to, fee), pull(2n * fee)]) })), { errorName: 'PaymentShort', args: [0n, fee] })
  // A pull in the batch of calls, after the payment was judged: the relay stands, paid as Relayed says. Only a
  // payee that approved the account can be pulled from, and Bruno's payee approves no one.
  const simulated = await simulate('relayBatch', { data: await relay([usdcTransfer(to, fee)], [pull(fee)]) })
  t.equal(simulated.callSucceeded, true, 'the pull ran after the payment was judged')
})

t.test('relayBatch: when the agent\'s calls fail the payment stays, the transaction succeeds, callSucceeded is false', async (t) => {
  const spender: Address = '0x3333333333333333333333333333333333333333'
  const approve = usdcCall(encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [spender, 5n] }))
  const overdraw = usdcTransfer(sink, parseUnits('1000000000', 6))
  const payeeBefore = await usdcBalance(payee)
  const receipt = await send(relayBatchData(await payingBatches({ calls: [approve, overdraw] })))
  const relayed = relayedOf(receipt)
  t.same({ ...relayed, reason: relayed.reason.slice(0, 10) }, { target: delegated.address, payee, received: fee, callSucceeded: false, reason: callFailedSelector })
  t.equal(await usdcBalance(payee), payeeBefore + fee, 'the payment stays')
  t.equal(
    await client.readContract({
      address: usdc,
      abi: erc20Abi,
      functionName: 'allowance',
      args: [delegated.address, spender],
    }),
    0n,
    'the agent\'s calls are undone together',
  )
})

t.test('the stipend: relayBatch gives the account exactly callGas; a limit too low reverts GasShort before the call', async (t) => {
  // The probe as the relayed account: its payment batch pays, its batch of calls reports its gas.
  const callGas = 250_000n
  const data = probeRelay({ callGas })
  const gas = await client.estimateGas({ account: operator.account.address, to: runner, data })
  t.equal(runnerError(await revertData({ data, gas: gas - 1n }))?.errorName, 'GasShort', 'one gas below the estimate')
  const receipt = await send(data)
  const [paying, probed] = probedOf(receipt)
  t.equal(paying?.gasAtEntry, 150_000n - probeEntryGas, 'the payment batch was given exactly paymentGas')
  t.equal(probed?.gasAtEntry, callGas - probeEntryGas, 'the account\'s batch of calls was given exactly callGas')
  t.equal(probed?.value, 0n, 'and no value')
  t.equal(probed?.sender, runner)
  t.same(relayedOf(receipt), { target: probeAccount, payee, received: fee, callSucceeded: true, reason: '0x' })

  // A million for the call in a 500k transaction: refused before the call, for both entry points.
  const big = 1_000_000n
  const required = big + big / 63n + settleGas
  const cases = {
    relayWithAuthorization: relayWithAuthorizationData({
      target: probe,
      data: probeData,
      callGas: big,
      authorization: await authorizationFor(fee),
    }),
    relayBatch: probeRelay({ callGas: big }),
  }
  for (const [name, request] of Object.entries(cases)) {
    const short = runnerError(await revertData({ data: request, gas: 500_000n }))
    t.equal(short?.errorName, 'GasShort', name)
    const [available, needed] = (short?.args ?? []) as readonly bigint[]
    t.equal(needed, required, `${name}: requires callGas + callGas/63 + SETTLE_GAS`)
    t.ok(available !== undefined && available < 500_000n, `${name}: had ${available}`)
    const trace = await traceCall(request, 500_000n)
    const probeCalls = (frame: Frame): Frame[] =>
      (frame.calls ?? []).flatMap((inner) => [...(inner.to !== undefined && isAddressEqual(inner.to as Address, probeAccount) ? [inner] : []), ...probeCalls(inner)])
    t.equal(
      name === 'relayBatch' ? probeCalls(trace).length : reaches(trace, probe) ? 1 : 0,
      name === 'relayBatch' ? 1 : 0,
      `${name}: the call was never made${name === 'relayBatch' ? ' (only the payment batch ran)' : ''}`,
    )
  }
})

t.test('a call that burns all its gas: callSucceeded false, the payment stays, the transaction succeeds, gas bounded', async (t) => {
  const paymentOnly = await send(relayWithAuthorizationData({ authorization: await authorizationFor(fee) }))
  const callGas = 400_000n
  const data = relayWithAuthorizationData({
    target: probe,
    data: encodeFunctionData({ abi: probeAbi, functionName: 'burn' }),
    callGas,
    authorization: await authorizationFor(fee),
  })
  const simulated = await simulate('relayWithAuthorization', { data })
  t.equal(simulated.callSucceeded, false)
  t.ok(
    simulated.callGasUsed >= callGas && simulated.callGasUsed < callGas + 3_000n,
    `the call phase spent ${simulated.callGasUsed}: its stipend and the call's own cost`,
  )
  const payeeBefore = await usdcBalance(payee)
  const receipt = await send(data)
  t.same(relayedOf(receipt), { target: probe, payee, received: fee, callSucceeded: false, reason: '0x' })
  t.equal(await usdcBalance(payee), payeeBefore + fee, 'the payment stays')
  const beyond = receipt.gasUsed - paymentOnly.gasUsed - callGas
  t.comment(`gas: ${receipt.gasUsed} for a ${callGas} stipend burnt, ${beyond} beyond payment-only + stipend`)
  t.ok(beyond > 0n && beyond < 10_000n, 'the transaction costs the payment, the stipend and little more')
})

t.test('the return-data bomb: ~2.75 MB returned or reverted does not break settlement, and reason keeps 256 bytes', async (t) => {
  const bombSize = 2_750_000n
  // The callee's memory for 2.75 MB costs ≈14.7M gas; a Runner that copied it all would need as much again.
  const callGas = 15_000_000n
  const head = await client.readContract({ address: probe, abi: probeAbi, functionName: 'BOMB_HEAD' })
  const expectedReason = encodeAbiParameters(
    Array.from({ length: Number(reasonBytes / 32n) }, () => ({ type: 'uint256' })),
    Array.from({ length: Number(reasonBytes / 32n) }, (_, i) => head + BigInt(i)),
  )
  const bomb = (reverts: boolean) =>
    encodeFunctionData({ abi: probeAbi, functionName: 'bomb', args: [bombSize, reverts] })

  // EIP-7825 (Osaka) caps a transaction at 2^24 gas: the stipend and the settlement must fit in one.
  const transactionGasCap = 2n ** 24n
  // Fifteen million gas is worth more than the usual fee.
  const bombFee = fee * 20n
  const paymentOnly = await send(relayWithAuthorizationData({ authorization: await authorizationFor(fee) }))
  for (const reverts of [true, false]) {
    const payeeBefore = await usdcBalance(payee)
    const data = relayWithAuthorizationData({
      target: probe,
      data: bomb(reverts),
      callGas,
      amount: bombFee,
      authorization: await authorizationFor(bombFee),
    })
    const gas = await client.estimateGas({ account: operator.account.address, to: runner, data })
    t.ok(gas < transactionGasCap, `the transaction needs ${gas} gas, within one transaction's cap`)
    const receipt = await send(data)
    t.ok(
      receipt.gasUsed < paymentOnly.gasUsed + callGas + 10_000n,
      `it spends ${receipt.gasUsed}: the payment, the stipend and little more (the data is not copied)`,
    )
    const relayed = relayedOf(receipt)
    t.equal(relayed.callSucceeded, !reverts, `relayWithAuthorization, ${reverts ? 'reverting' : 'returning'}`)
    t.equal(relayed.reason, reverts ? expectedReason : '0x', 'reason: a revert\'s first 256 bytes, nothing of a return')
    t.equal(relayed.received, bombFee)
    t.equal(await usdcBalance(payee), payeeBefore + bombFee, 'the payment stays')
    t.comment(`gas: relayWithAuthorization of a ${bombSize}-byte ${reverts ? 'revert' : 'return'}, ${receipt.gasUsed}`)
  }

  // relayBatch's call phase is the same: the bomb as the account's batch of calls (only simulated).
  const batch = probeRelay({ data: bomb(true), callGas })
  const gas = await client.estimateGas({ account: operator.account.address, to: runner, data: batch })
  t.ok(gas < transactionGasCap, `relayBatch needs ${gas} gas`)
  const simulated = await simulate('relayBatch', { data: batch, gas })
  t.equal(simulated.callSucceeded, false)
  t.equal(simulated.reason, expectedReason, 'reason: the revert\'s first 256 bytes')
  t.ok(simulated.callGasUsed < callGas + 5_000n, `the call phase spent ${simulated.callGasUsed}`)
})

t.test('no ETH: the Runner refuses value, and calls carry none even when the Runner holds some', async (t) => {
  const data = relayWithAuthorizationData({
    target: probe,
    data: probeData,
    callGas: 100_000n,
    authorization: await authorizationFor(fee),
  })
  t.equal(await revertData({ data, value: 1n }), '0x', 'relayWithAuthorization with value reverts')
  const batch = probeRelay({ callGas: 100_000n })
  t.equal(await revertData({ data: batch, value: 1n }), '0x', 'relayBatch with value reverts')
  t.equal(await revertData({ from: stranger.address, data: '0x', value: 1n }), '0x', 'a plain transfer reverts')

  // ETH can still be forced in (selfdestruct, a block reward): none of it goes out with a call.
  const forced = parseEther('1')
  await testClient.setBalance({ address: runner, value: forced })
  const probeBalance = await client.getBalance({ address: probe })
  for (const request of [data, batch]) {
    const [probed] = probedOf(await send(request))
    t.equal(probed?.value, 0n, 'the call carried no value')
  }
  t.equal(await client.getBalance({ address: runner }), forced, 'the Runner spent none of it')
  t.equal(await client.getBalance({ address: probe }), probeBalance)
  await testClient.setBalance({ address: runner, value: 0n })
})

t.test('two relays in one transaction (an operator that batches): each pays and runs on its own', async (t) => {
  // Bruno's operator is an EOA, one relay a transaction. An operator that batches (a contract, or an EOA
  // delegated to one) must find each relay paid and run by itself: the Runner keeps no state between them.
  const batcherAbi = parseAbi(['function callAll(address[] targets, bytes[] data) returns (bytes[] results)'])
  const batcherArtifact = compileTypedFixture('BatchingOperator', batcherAbi)
  const batcher = getAddress((await mined(await deployer.deployContract({ ...batcherArtifact }))).contractAddress!)
  const batched = getAddress((await mined(await deployer.deployContract({ ...runnerArtifact, args: [batcher, deployer.account.address] }))).contractAddress!)
  const callAll = (calls: { to: Address; data: Hex }[]) =>
    encodeFunctionData({ abi: batcherAbi, functionName: 'callAll', args: [calls.map(({ to }) => to), calls.map(({ data }) => data)] })
  const relay = (amount: bigint) => ({ to: batched, data: probeRelay({ amount }) })
  const outcomes = async (calls: { to: Address; data: Hex }[]) => {
    const { data } = await client.call({ account: stranger.address, to: batcher, data: callAll(calls) })
    const results = decodeFunctionResult({ abi: batcherAbi, functionName: 'callAll', data: data! })
    return results.map((result) => decodeFunctionResult({ abi: runnerAbi, functionName: 'relayBatch', data: result })[0])
  }
  t.same(await outcomes([relay(fee)]), [true], 'alone: paid, its call ran')
  t.same(await outcomes([relay(fee), relay(fee)]), [true, true], 'two in a row: each paid and ran')
  // The second relay's payment is judged on its own rise: the first's payment does not count for it.
  const second = runnerError(await revertData({ from: stranger.address, to: batcher, data: callAll([relay(fee), relay(fee + 1n)]) }))
  t.same(second, { errorName: 'PaymentShort', args: [fee, fee + 1n] })
})

t.test('a failing call\'s reason is recorded in Relayed (its first 256 bytes), and the payment stays', async (t) => {
  const longReason = toHex(new Uint8Array(300).map((_, i) => (i * 7 + 1) % 256))
  for (const reason of ['0x1234abcd' as Hex, longReason]) {
    const payeeBefore = await usdcBalance(payee)
    const receipt = await send(
      relayWithAuthorizationData({
        target: probe,
        data: encodeFunctionData({ abi: probeAbi, functionName: 'fail', args: [reason] }),
        callGas: 100_000n,
        authorization: await authorizationFor(fee),
      }),
    )
    t.same(relayedOf(receipt), {
      target: probe,
      payee,
      received: fee,
      callSucceeded: false,
      reason: size(reason) > Number(reasonBytes) ? slice(reason, 0, Number(reasonBytes)) : reason,
    })
    t.equal(await usdcBalance(payee), payeeBefore + fee, 'the payment stays')
  }
})

t.test('gas', async (t) => {
  const paymentOnly = await send(relayWithAuthorizationData({ authorization: await authorizationFor(fee) }))
  t.comment(`gas: relayWithAuthorization, payment only: ${paymentOnly.gasUsed}`)

  const oneCallBatch = await signedExecute({ calls: [usdcTransfer(sink, 1n)], revertOnFailure: true })
  const withBatch = await send(
    relayWithAuthorizationData({
      target: delegated.address,
      data: oneCallBatch,
      callGas: 300_000n,
      authorization: await authorizationFor(fee),
    }),
  )
  t.equal(relayedOf(withBatch).callSucceeded, true)
  t.comment(`gas: relayWithAuthorization with a 1-call Calibur batch: ${withBatch.gasUsed}`)

  for (const count of [1, 2, 8]) {
    // Each transfer to a recipient of its own, as an agent's payouts would be.
    const calls = Array.from({ length: count }, (_, i) =>
      usdcTransfer(toHex(0xa11ce000n + BigInt(count * 16 + i), { size: 20 }), parseUnits('1', 6)),
    )
    const receipt = await send(relayBatchData(await payingBatches({ calls })))
    t.equal(relayedOf(receipt).callSucceeded, true)
    t.comment(`gas: relayBatch with ${count} ERC-20 transfer call${count > 1 ? 's' : ''}: ${receipt.gasUsed}`)
  }
})

t.test('the operator never paid for a reverted transaction', async (t) => {
  const ledger = await runnerLedger(anvil.rpcUrl, operator.account.address, devnetPricing(devnet))
  t.ok(ledger.length > 0, `${ledger.length} sent`)
  t.same(ledgerViolations(ledger), [], 'nothing reverted, nothing spent beyond its payment')
  const dearest = ledger.reduce((most, entry) => {
    const share = Number(entry.spentWei) / Number(entry.keptWei)
    return share > most ? share : most
  }, 0)
  t.comment(`the dearest relay spent ${(dearest * 100).toFixed(1)} % of what its payment was worth`)
})
