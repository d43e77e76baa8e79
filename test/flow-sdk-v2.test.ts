import t from 'tap'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { createPublicClient, createWalletClient, encodeFunctionData, erc20Abi, getAddress, http, type Address } from 'viem'
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import { devnetChain } from '../core/devnet/chain.ts'
import { mintUsdc } from '../core/devnet/fund.ts'
import { startDevnetBruno } from './fixtures/devnetBruno.ts'
import { waitFor } from './fixtures/waitFor.ts'
import { signedBatches } from './fixtures/caliburSignatures.ts'
import { CALIBUR_ADDRESS } from '../plugins/calibur/networkOptions.ts'

// Flows 1–4 exactly as an agent runs them: the official SDK v2 client on
// /mcp/bruno,calibur,3009 (and uniswap for flow 3), the wallet a local key that signs the typed data
// as it came.

const bruno = await startDevnetBruno(t, { groups: ['bruno', 'calibur', '3009', 'erc20', 'uniswap'] })
const { deployment } = bruno
const chain = devnetChain(deployment.chainId)
const client = createPublicClient({ chain, transport: http(deployment.rpcUrl) })
const payee = getAddress(bruno.config.networks[0]!.payee)
const usdcOf = (address: Address) => client.readContract({ address: deployment.usdc, abi: erc20Abi, functionName: 'balanceOf', args: [address] })

const agent = new Client({ name: 'bruno-agent-test', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } })
await agent.connect(new StreamableHTTPClientTransport(new URL(`${bruno.mcpUrl}/bruno,calibur,3009`)))
t.teardown(() => agent.close())
const swapper = new Client({ name: 'bruno-agent-test', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } })
await swapper.connect(new StreamableHTTPClientTransport(new URL(`${bruno.mcpUrl}/bruno,calibur,uniswap`)))
t.teardown(() => swapper.close())

/** Calls a tool as an agent does; a refusal fails the test with its text. */
async function use(name: string, args: Record<string, unknown>, through: Client = agent): Promise<any> {
  const result = await through.callTool({ name, arguments: args })
  if (result.isError) throw new Error(`${name} refused: ${(result.content as { text: string }[])[0]!.text}`)
  return result.structuredContent
}

async function untilSettled(id: string): Promise<any> {
  return waitFor(() => use('status', { id }), (status: any) => status.stage === 'done' || status.stage === 'failed', `submission ${id} settled`, 30_000)
}

t.test('the path lists exactly its three groups\' tools', async (t) => {
  const { tools } = await agent.listTools()
  t.same(
    tools.map((tool) => tool.name),
    ['account', 'quote', 'submit', 'status', 'calibur_batch', 'calibur_execute', 'payment_authorization', 'transfer_authorization', 'transfer_authorization_call'],
  )
})

t.test('flow 1 over SDK v2: calibur_batch → wallet signs → calibur_execute → submit → done', async (t) => {
  const owner: PrivateKeyAccount = privateKeyToAccount(deployment.demoAccounts[1]!.privateKey)
  const sponsor = createWalletClient({ account: privateKeyToAccount(deployment.deployer.privateKey), chain, transport: http(deployment.rpcUrl) })
  const authorization = await sponsor.signAuthorization({ account: owner, contractAddress: CALIBUR_ADDRESS })
  await client.waitForTransactionReceipt({ hash: await sponsor.sendTransaction({ to: sponsor.account.address, authorizationList: [authorization] }) })

  const seen = await use('account', { chain: 'local', address: owner.address })
  t.equal(seen.delegateName, 'Calibur')
  t.equal(seen.delegateNonce, '0', 'its first batch nonce')
  const friend = privateKeyToAccount(generatePrivateKey()).address
  // A builder MCP's transactionRequest, as it would hand it over: its gas fields are ignored.
  const builderCall = {
    to: deployment.usdc,
    value: '0x0',
    data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [friend, 2_000_000n] }),
    from: owner.address,
    gasLimit: '0x5208',
    chainId: deployment.chainId,
  }
  const batch = await use('calibur_batch', { chain: 'local', account: owner.address, calls: [builderCall], token: 'USDC' })
  const executed = await use('calibur_execute', { chain: 'local', ...(await signedBatches(owner, batch)) })
  const [ownerBefore, payeeBefore] = await Promise.all([usdcOf(owner.address), usdcOf(payee)])
  const accepted = await use('submit', { chain: 'local', call: executed.call, payment: executed.payment })
  const status = await untilSettled(accepted.id)
  t.equal(status.stage, 'done', status.reason)
  const { chargedBaseUnits, refundedBaseUnits } = status.outcome
  t.same(status.outcome, { paidBaseUnits: batch.payment.amountBaseUnits, chargedBaseUnits, refundedBaseUnits, callSucceeded: true }, 'paid first, then the call ran')
  t.equal(BigInt(chargedBaseUnits) + BigInt(refundedBaseUnits), BigInt(batch.payment.amountBaseUnits), 'the payee kept the charge and refunded the rest')
  t.equal(await usdcOf(friend), 2_000_000n, 'the builder\'s call ran from the account')
  t.equal((await usdcOf(payee)) - payeeBefore, BigInt(chargedBaseUnits), 'the payee kept the charge of the batch\'s payment leg')
  t.equal(ownerBefore - (await usdcOf(owner.address)), 2_000_000n + BigInt(chargedBaseUnits), 'the account paid the call and the charge, nothing else')
})

t.test('flow 2 over SDK v2: quote → payment_authorization → wallet signs → submit → done', async (t) => {
  const payer = privateKeyToAccount(generatePrivateKey())
  await mintUsdc(deployment.rpcUrl, deployment, payer.address, 3_000_000n)
  const call = { to: deployment.usdc, data: encodeFunctionData({ abi: erc20Abi, functionName: 'balanceOf', args: [payer.address] }) }
  const quote = await use('quote', { chain: 'local', call, token: 'USDC', payment: 'authorization' })
  const prepared = await use('payment_authorization', { chain: 'local', from: payer.address, token: 'USDC', amount: quote.amount })
  t.equal(prepared.typedData.message.to, payee, 'the transfer is to Bruno\'s payee')
  const signature = await payer.signTypedData(prepared.typedData)
  const accepted = await use('submit', { chain: 'local', call, payment: { ...prepared.payment, signature } })
  const status = await untilSettled(accepted.id)
  t.equal(status.stage, 'done', status.reason)
  t.equal(await usdcOf(payer.address), 3_000_000n - BigInt(status.outcome.chargedBaseUnits), 'the payer paid exactly the charge: the rest of the quote came back')
  t.ok(BigInt(status.outcome.chargedBaseUnits) < BigInt(quote.amountBaseUnits), 'less than the quote')
  t.equal(await client.getBalance({ address: payer.address }), 0n, 'and never held ETH')
})

t.test('flow 3 over SDK v2: uniswap_swap_to_eth → calibur_batch with its approvals → sign → calibur_execute → submit → done', async (t) => {
  const owner = privateKeyToAccount(generatePrivateKey())
  await mintUsdc(deployment.rpcUrl, deployment, owner.address, 30_000_000n)
  const sponsor = createWalletClient({ account: privateKeyToAccount(deployment.deployer.privateKey), chain, transport: http(deployment.rpcUrl) })
  const authorization = await sponsor.signAuthorization({ account: owner, contractAddress: CALIBUR_ADDRESS })
  await client.waitForTransactionReceipt({ hash: await sponsor.sendTransaction({ to: sponsor.account.address, authorizationList: [authorization] }) })
  const swap = await use('uniswap_swap_to_eth', { chain: 'local', token: 'USDC', amount: '10', recipient: owner.address }, swapper)
  const batch = await use('calibur_batch', { chain: 'local', account: owner.address, calls: swap.calls, approvals: swap.approvals, token: 'USDC' }, swapper)
  const executed = await use('calibur_execute', { chain: 'local', ...(await signedBatches(owner, batch)) }, swapper)
  const accepted = await use('submit', { chain: 'local', call: executed.call, payment: executed.payment }, swapper)
  const status = await untilSettled(accepted.id)
  t.equal(status.stage, 'done', status.reason)
  t.equal(status.outcome.callSucceeded, true, 'the swap ran')
  t.ok((await client.getBalance({ address: owner.address })) >= BigInt(swap.minimumOut.wei), 'the account got at least the swap\'s minimum in ETH')
  t.equal(await usdcOf(owner.address), 30_000_000n - 10_000_000n - BigInt(status.outcome.chargedBaseUnits), 'it paid the swap\'s input and the charge')
})

t.test('flow 4 over SDK v2: the account\'s 7702 authorization in calibur_batch, calibur_execute and submit: one transaction delegates and runs', async (t) => {
  const owner = privateKeyToAccount(generatePrivateKey())
  await mintUsdc(deployment.rpcUrl, deployment, owner.address, 5_000_000n)
  const friend = privateKeyToAccount(generatePrivateKey()).address
  const signed = await owner.signAuthorization({ contractAddress: CALIBUR_ADDRESS, chainId: deployment.chainId, nonce: 0 })
  const authorizationList = [{ chainId: signed.chainId, address: signed.address, nonce: signed.nonce, r: signed.r, s: signed.s, yParity: signed.yParity! }]
  const call = { to: deployment.usdc, value: '0', data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [friend, 1_000_000n] }) }
  const batch = await use('calibur_batch', { chain: 'local', account: owner.address, calls: [call], token: 'USDC', authorizationList })
  const executed = await use('calibur_execute', { chain: 'local', ...(await signedBatches(owner, batch)), authorizationList })
  const accepted = await use('submit', { chain: 'local', call: executed.call, payment: executed.payment, authorizationList: executed.authorizationList })
  const status = await untilSettled(accepted.id)
  t.equal(status.stage, 'done', status.reason)
  t.equal(await client.getCode({ address: owner.address }), `0xef0100${CALIBUR_ADDRESS.slice(2).toLowerCase()}`, 'delegated by that transaction')
  t.equal(await usdcOf(friend), 1_000_000n)
  t.equal(await usdcOf(owner.address), 5_000_000n - 1_000_000n - BigInt(status.outcome.chargedBaseUnits), 'the transfer and the charge: the rest of the payment refunded')
})
