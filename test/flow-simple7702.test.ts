import { readFileSync } from 'node:fs'
import solc from 'solc'
import t, { type Test } from 'tap'
import { createPublicClient, createWalletClient, decodeErrorResult, encodeFunctionData, erc20Abi, getAddress, http, zeroAddress, type Address, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import { devnetChain } from '../core/devnet/chain.ts'
import { mintUsdc } from '../core/devnet/fund.ts'
import { revertData } from '../core/relay/revertReason.ts'
import { encodeTransfer } from '../core/chain/erc20Calls.ts'
import { encodeExecuteBatch, ENTRY_POINT, entryPointAbi, simple7702Abi } from '../examples/simple7702-group/entryPoint.ts'
import { RUNNER_GATE_CREATION, runnerGateAbi } from '../examples/simple7702-group/runnerGate.ts'
import { startDevnetBruno } from './fixtures/devnetBruno.ts'
import { RawMcpClient } from './fixtures/mcpHttp.ts'
import { waitFor } from './fixtures/waitFor.ts'

// Issue 31, point 5: a third party's delegate group (examples/simple7702-group, written against
// Bruno's exports only) — eth-infinitism's Simple7702Account through ERC-4337's EntryPoint v0.8,
// Bruno's Runner its own bundler, payment first — served on the devnet beside the built-in groups.
// Its devnet hook builds the EntryPoint at its address; the runner ledger is checked at teardown.

const bruno = await startDevnetBruno(t, { groups: ['bruno', 'erc20'], plugins: ['./examples/simple7702-group'] })
const { deployment } = bruno
const chain = devnetChain(deployment.chainId)
const transport = http(deployment.rpcUrl)
const client = createPublicClient({ chain, transport, pollingInterval: 50 })
const mcp = new RawMcpClient(`${bruno.mcpUrl}/bruno,erc20,simple7702`)
const payee = getAddress(bruno.config.networks[0]!.payee)
const usdc = deployment.usdc
const { implementation, gate } = bruno.config.plugins[0]!.options as { implementation: Address; gate: Address }
const sponsor = createWalletClient({ account: privateKeyToAccount(deployment.deployer.privateKey), chain, transport })
const usdcOf = (address: Address) => client.readContract({ address: usdc, abi: erc20Abi, functionName: 'balanceOf', args: [address] })

async function funded(): Promise<PrivateKeyAccount> {
  const account = privateKeyToAccount(generatePrivateKey())
  await mintUsdc(deployment.rpcUrl, deployment, account.address, 20_000_000n)
  return account
}

async function delegated(): Promise<PrivateKeyAccount> {
  const account = await funded()
  await client.waitForTransactionReceipt({ hash: await sponsor.sendTransaction({ to: sponsor.account.address, authorizationList: [await sponsor.signAuthorization({ account, contractAddress: implementation })] }) })
  return account
}

// handleOps of one signed operation, from its typed data as the account signed it (already packed), past simple7702_execute.
const handleOpsOf = (typedData: any, signature: Hex, beneficiary: Address): Hex => {
  const m = typedData.message
  const op = { ...m, nonce: BigInt(m.nonce), preVerificationGas: BigInt(m.preVerificationGas), signature }
  return encodeFunctionData({ abi: entryPointAbi, functionName: 'handleOps', args: [[op], beneficiary] })
}

/** How the EntryPoint refuses `data` sent by `from`: its error, its reason, and the paymaster's own error inside. */
async function refusalOf(from: Address, data: Hex): Promise<unknown[] | 'ran'> {
  const error = await client.call({ account: from, to: ENTRY_POINT, data }).then(() => undefined, (error: unknown) => error)
  if (error === undefined) return 'ran'
  const outer = decodeErrorResult({ abi: entryPointAbi, data: revertData(error)! })
  const [, reason, inner] = outer.args as [bigint, string, Hex]
  const gateError = decodeErrorResult({ abi: runnerGateAbi, data: inner })
  return [outer.errorName, reason, gateError.errorName, gateError.args]
}

const nonceOf = (account: Address) => client.readContract({ address: ENTRY_POINT, abi: entryPointAbi, functionName: 'getNonce', args: [account, 0n] })

/** simple7702_execute of a batch's two operations, each signed by the account as it came. */
async function executedBy(account: PrivateKeyAccount, batch: any, authorizationList?: unknown) {
  return mcp.call('simple7702_execute', {
    chain: 'local',
    paymentTypedData: batch.paymentTypedData,
    paymentSignature: await account.signTypedData(batch.paymentTypedData),
    typedData: batch.typedData,
    signature: await account.signTypedData(batch.typedData),
    ...(authorizationList ? { authorizationList } : {}),
  })
}

async function relay(t: Test, account: PrivateKeyAccount, batch: any, authorizationList?: unknown) {
  const executed = await executedBy(account, batch, authorizationList)
  t.equal(executed.call.to, ENTRY_POINT, 'the Runner is the bundler: both go to the EntryPoint')
  const accepted = await mcp.call('submit', { chain: 'local', call: executed.call, payment: executed.payment, ...(authorizationList ? { authorizationList } : {}) })
  const status = await waitFor(() => mcp.call('status', { id: accepted.id }), (view: any) => view.stage === 'done' || view.stage === 'failed', 'settled', 30_000)
  t.equal(status.stage, 'done', status.reason)
  const receipt = await client.getTransactionReceipt({ hash: status.transaction.hash })
  const signed = await client.getTransaction({ hash: status.transaction.hash })
  t.ok(BigInt(batch.gas.estimated) >= signed.gas, `the estimate ${batch.gas.estimated} covers the signed limit ${signed.gas}`)
  t.comment(`Simple7702: estimated ${batch.gas.estimated} (owner path ${batch.gas.ownerPath}), signed limit ${signed.gas}, used ${receipt.gasUsed}; paid ${batch.payment.amount} USDC`)
  return { status, receipt }
}

t.test('the devnet hook built EntryPoint v0.8 at its address; the account type names it', async (t) => {
  t.equal(await client.readContract({ address: implementation, abi: simple7702Abi, functionName: 'entryPoint' }), ENTRY_POINT)
  t.equal(await client.readContract({ address: ENTRY_POINT, abi: entryPointAbi, functionName: 'getNonce', args: [implementation, 0n] }), 0n)
  const names = (await mcp.listTools()).map((tool: { name: string }) => tool.name)
  t.ok(names.includes('simple7702_batch') && names.includes('simple7702_execute'))
})

t.test('a delegated account with USDC and no ETH sends 1 USDC: two operations, the payment first, done', async (t) => {
  const account = await funded()
  await client.waitForTransactionReceipt({ hash: await sponsor.sendTransaction({ to: sponsor.account.address, authorizationList: [await sponsor.signAuthorization({ account, contractAddress: implementation })] }) })
  const friend = privateKeyToAccount(generatePrivateKey()).address
  const seen = await mcp.call('account', { chain: 'local', address: account.address })
  t.match(seen, { delegateName: 'Simple7702', delegateNonce: '0' })
  const batch = await mcp.call('simple7702_batch', { chain: 'local', account: account.address, calls: [encodeTransfer({ token: usdc, to: friend, amount: 1_000_000n })], token: 'USDC' })
  t.equal(BigInt(batch.typedData.message.nonce), BigInt(batch.paymentTypedData.message.nonce) + 1n, 'the calls at the nonce after the payment')
  const { status } = await relay(t, account, batch)
  t.equal(status.outcome.callSucceeded, true)
  t.equal(await usdcOf(friend), 1_000_000n)
  t.equal(await usdcOf(account.address), 20_000_000n - 1_000_000n - BigInt(status.outcome.chargedBaseUnits), 'the transfer and the charge: the rest of the payment refunded')
  t.ok(BigInt(status.outcome.refundedBaseUnits) > 0n, 'an ERC-4337 payment operation is refunded too')
  t.equal((await mcp.call('account', { chain: 'local', address: account.address })).delegateNonce, '2', 'both operations spent their nonce')
})

t.test('delegated in the runner\'s own transaction (authorizationList)', async (t) => {
  const account = await funded()
  const friend = privateKeyToAccount(generatePrivateKey()).address
  const signed = await account.signAuthorization({ contractAddress: implementation, chainId: deployment.chainId, nonce: 0 })
  const authorizationList = [{ chainId: signed.chainId, address: signed.address, nonce: signed.nonce, r: signed.r, s: signed.s, yParity: signed.yParity! }]
  const batch = await mcp.call('simple7702_batch', { chain: 'local', account: account.address, calls: [encodeTransfer({ token: usdc, to: friend, amount: 2_000_000n })], token: 'USDC', authorizationList })
  await relay(t, account, batch, authorizationList)
  t.equal(await usdcOf(friend), 2_000_000n)
})

t.test('calls that would fail are refused before anything is sent, though the EntryPoint would swallow their failure', async (t) => {
  const account = await funded()
  await client.waitForTransactionReceipt({ hash: await sponsor.sendTransaction({ to: sponsor.account.address, authorizationList: [await sponsor.signAuthorization({ account, contractAddress: implementation })] }) })
  // Enough to pay, then a transfer of everything: it fails once the payment has been taken.
  const everything = encodeTransfer({ token: usdc, to: payee, amount: 20_000_000n })
  const batch = await mcp.call('simple7702_batch', { chain: 'local', account: account.address, calls: [encodeTransfer({ token: usdc, to: payee, amount: 1n })], token: 'USDC' })
  const nonceBefore = await client.getTransactionCount({ address: deployment.runner.operator.address })
  const failing = structuredClone(batch.typedData)
  failing.message.callData = encodeExecuteBatch([{ target: usdc, value: 0n, data: everything.data as `0x${string}` }])
  const executed = await mcp.call('simple7702_execute', {
    chain: 'local',
    paymentTypedData: batch.paymentTypedData,
    paymentSignature: await account.signTypedData(batch.paymentTypedData),
    typedData: failing,
    signature: await account.signTypedData(failing),
  })
  const refused = await mcp.callTool('submit', { chain: 'local', call: executed.call, payment: executed.payment })
  t.equal(refused.isError, true)
  t.match(refused.content[0].text, /^refused: the call fails in simulation: .*exceeds balance/)
  t.equal(await client.getTransactionCount({ address: deployment.runner.operator.address }), nonceBefore, 'the runner sent nothing')
})

t.test('a failure the EntryPoint swallows is reported: the calls run out of their signed gas on chain, the payment stays', async (t) => {
  const account = await funded()
  await client.waitForTransactionReceipt({ hash: await sponsor.sendTransaction({ to: sponsor.account.address, authorizationList: [await sponsor.signAuthorization({ account, contractAddress: implementation })] }) })
  const friend = privateKeyToAccount(generatePrivateKey()).address
  const batch = await mcp.call('simple7702_batch', { chain: 'local', account: account.address, calls: [encodeTransfer({ token: usdc, to: friend, amount: 1_000_000n })], token: 'USDC' })
  // The calls operation signed with 5,000 gas for its calls: the account's own replay (all the gas
  // it wants) succeeds, the Runner's call to the EntryPoint returns normally; the operation fails inside.
  const starved = structuredClone(batch.typedData)
  starved.message.accountGasLimits = `${starved.message.accountGasLimits.slice(0, 34)}${(5_000).toString(16).padStart(32, '0')}`
  const executed = await mcp.call('simple7702_execute', {
    chain: 'local',
    paymentTypedData: batch.paymentTypedData,
    paymentSignature: await account.signTypedData(batch.paymentTypedData),
    typedData: starved,
    signature: await account.signTypedData(starved),
  })
  const accepted = await mcp.call('submit', { chain: 'local', call: executed.call, payment: executed.payment })
  const status = await waitFor(() => mcp.call('status', { id: accepted.id }), (view: any) => view.stage === 'done' || view.stage === 'failed', 'settled', 30_000)
  t.equal(status.stage, 'done', 'done: sent, paid')
  t.equal(status.outcome.callSucceeded, false, 'the call failed on chain, as the EntryPoint\'s UserOperationEvent says (the Runner saw handleOps return)')
  t.match(status.reason, /the call failed on chain \(the payment was taken\): the EntryPoint ran the operation and it reverted/)
  t.equal(status.outcome.paidBaseUnits, batch.payment.amountBaseUnits, 'the payment stays')
  t.equal(await usdcOf(friend), 0n, 'the transfer did not happen')
})

t.test('a stranger cannot run the payment operation first: its handleOps reverts whole at the RunnerGate, the nonce stays unspent, and the relay then lands (issue 43, point 5)', async (t) => {
  const account = await delegated()
  const friend = privateKeyToAccount(generatePrivateKey()).address
  const batch = await mcp.call('simple7702_batch', { chain: 'local', account: account.address, calls: [encodeTransfer({ token: usdc, to: friend, amount: 1_000_000n })], token: 'USDC' })
  t.equal(batch.paymentTypedData.message.paymasterAndData.slice(0, 42), gate.toLowerCase(), 'the payment operation names the gate as its paymaster')
  t.equal(batch.typedData.message.paymasterAndData, '0x', 'the calls operation none')
  t.equal(await client.readContract({ address: gate, abi: runnerGateAbi, functionName: 'runner' }), deployment.runner.contract)
  const executed = await executedBy(account, batch)
  // A stranger who saw both signed operations (in the mempool, say) bundles the payment itself.
  const stranger = createWalletClient({ account: privateKeyToAccount(deployment.demoAccounts[0]!.privateKey), chain, transport })
  const [nonce, payeeBefore] = [await nonceOf(account.address), await usdcOf(payee)]
  const gateRefusal = ['FailedOpWithRevert', 'AA33 reverted', 'NotRunnersPayment', [account.address, zeroAddress]]
  t.same(await refusalOf(stranger.account.address, executed.payment.batch), gateRefusal, 'the EntryPoint refuses it whole: its paymaster, the gate, reverted (no payment phase names the account)')
  const sent = await client.waitForTransactionReceipt({ hash: await stranger.sendTransaction({ to: ENTRY_POINT, data: executed.payment.batch, gas: 1_000_000n }) })
  t.equal(sent.status, 'reverted', 'sent anyway: reverted whole')
  t.equal(await nonceOf(account.address), nonce, 'the payment operation\'s nonce is not spent')
  t.equal(await usdcOf(payee), payeeBefore, 'nothing paid')
  t.equal(await usdcOf(account.address), 20_000_000n)
  // Nor in a call relayed for another payer: the Runner's call phase is not its payment phase.
  t.same(await refusalOf(deployment.runner.contract, executed.payment.batch), gateRefusal, 'sent as the Runner outside a payment phase: refused too')
  // The account's own relay is untouched.
  const accepted = await mcp.call('submit', { chain: 'local', call: executed.call, payment: executed.payment })
  const status = await waitFor(() => mcp.call('status', { id: accepted.id }), (view: any) => view.stage === 'done' || view.stage === 'failed', 'settled', 30_000)
  t.equal(status.stage, 'done', status.reason)
  t.equal(status.outcome.callSucceeded, true)
  t.equal(await usdcOf(friend), 1_000_000n)
  t.equal(await nonceOf(account.address), nonce + 2n, 'both operations ran, in the Runner\'s transaction')
})

t.test('a payment operation without the RunnerGate, which anyone could run, is refused by simple7702_execute and by submit (issue 43, point 5)', async (t) => {
  const account = await delegated()
  const batch = await mcp.call('simple7702_batch', { chain: 'local', account: account.address, calls: [encodeTransfer({ token: usdc, to: payee, amount: 1n })], token: 'USDC' })
  const open = structuredClone(batch.paymentTypedData)
  open.message.paymasterAndData = '0x'
  const [openSignature, signature] = [await account.signTypedData(open), await account.signTypedData(batch.typedData)]
  const payment = { token: usdc, amountBaseUnits: batch.payment.amountBaseUnits, batch: handleOpsOf(open, openSignature, account.address) }
  // What the refusal guards against: a stranger's bundle of it would pay.
  const stranger = privateKeyToAccount(deployment.demoAccounts[0]!.privateKey)
  t.equal(await client.call({ account: stranger, to: ENTRY_POINT, data: payment.batch }).then(() => 'ran', () => 'reverted'), 'ran', 'a stranger could run it')
  const words = new RegExp(`^the payment operation does not name the RunnerGate \\(${gate.toLowerCase()}\\) as its paymaster: any bundler could run it, or spend its nonce, before Bruno's Runner`)
  const executed = await mcp.callTool('simple7702_execute', { chain: 'local', paymentTypedData: open, paymentSignature: openSignature, typedData: batch.typedData, signature })
  t.equal(executed.isError, true)
  t.match(executed.content[0].text, words, 'simple7702_execute refuses it')
  const call = { to: ENTRY_POINT, data: handleOpsOf(batch.typedData, signature, account.address) }
  const submitted = await mcp.callTool('submit', { chain: 'local', call, payment })
  t.equal(submitted.isError, true)
  t.match(submitted.content[0].text, words, 'submit too, built by hand')
  t.equal(await nonceOf(account.address), 0n, 'nothing ran')
})

t.test('the RunnerGate the example deploys is RunnerGate.sol as solc 0.8.37 builds it (optimizer 200 runs, EVM cancun), and its ABI the transcribed one', async (t) => {
  const content = readFileSync(new URL('../examples/simple7702-group/RunnerGate.sol', import.meta.url), 'utf8')
  const input = { language: 'Solidity', sources: { 'RunnerGate.sol': { content } }, settings: { optimizer: { enabled: true, runs: 200 }, evmVersion: 'cancun', outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } } } }
  const output = JSON.parse(solc.compile(JSON.stringify(input)))
  t.strictSame(output.errors ?? [], [])
  const built = output.contracts['RunnerGate.sol'].RunnerGate
  t.equal(`0x${built.evm.bytecode.object}`, RUNNER_GATE_CREATION)
  const signatures = (abi: readonly { type: string; name?: string; inputs?: readonly { type: string }[] }[]) =>
    abi.filter((item) => item.type !== 'function' || ['entryPoint', 'runner'].includes(item.name!)).map((item) => `${item.type} ${item.name ?? ''}(${(item.inputs ?? []).map((input) => input.type).join(',')})`).sort()
  t.strictSame(signatures(runnerGateAbi), signatures(built.abi))
})
