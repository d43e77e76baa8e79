import t, { type Test } from 'tap'
import { createPublicClient, createWalletClient, erc20Abi, getAddress, http, type Address } from 'viem'
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import { foundry } from 'viem/chains'
import { mintUsdc } from '../core/devnet/fund.ts'
import { encodeTransfer } from '../core/erc20Calls.ts'
import { encodeExecuteBatch, ENTRY_POINT, entryPointAbi, simple7702Abi } from '../examples/simple7702-group/entryPoint.ts'
import { startDevnetBruno } from './fixtures/devnetBruno.ts'
import { RawMcpClient } from './fixtures/mcpHttp.ts'
import { waitFor } from './fixtures/waitFor.ts'

// Issue 31, point 5: a third party's delegate group (examples/simple7702-group, written against
// Bruno's exports only) — eth-infinitism's Simple7702Account through ERC-4337's EntryPoint v0.8,
// Bruno's Runner its own bundler, payment first — served on the devnet beside the built-in groups.
// Its devnet hook builds the EntryPoint at its address; the runner ledger is checked at teardown.

const bruno = await startDevnetBruno(t, { groups: ['bruno', 'erc20'], plugins: ['./examples/simple7702-group'] })
const { deployment } = bruno
const chain = { ...foundry, id: deployment.chainId }
const transport = http(deployment.rpcUrl)
const client = createPublicClient({ chain, transport, pollingInterval: 50 })
const mcp = new RawMcpClient(`${bruno.mcpUrl}/bruno,erc20,simple7702`)
const payee = getAddress(bruno.config.networks[0]!.payee)
const usdc = deployment.usdc
const implementation = getAddress((bruno.config.plugins[0]!.options as { implementation: string }).implementation)
const sponsor = createWalletClient({ account: privateKeyToAccount(deployment.deployer.privateKey), chain, transport })
const usdcOf = (address: Address) => client.readContract({ address: usdc, abi: erc20Abi, functionName: 'balanceOf', args: [address] })

async function funded(): Promise<PrivateKeyAccount> {
  const account = privateKeyToAccount(generatePrivateKey())
  await mintUsdc(deployment.rpcUrl, deployment, account.address, 20_000_000n)
  return account
}

async function relay(t: Test, account: PrivateKeyAccount, batch: any, authorizationList?: unknown) {
  const executed = await mcp.call('simple7702_execute', {
    chain: 'local',
    paymentTypedData: batch.paymentTypedData,
    paymentSignature: await account.signTypedData(batch.paymentTypedData),
    typedData: batch.typedData,
    signature: await account.signTypedData(batch.typedData),
    ...(authorizationList ? { authorizationList } : {}),
  })
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
