import t from 'tap'
import { createPublicClient, createTestClient, createWalletClient, encodeFunctionData, getAddress, http, parseEther, zeroAddress, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import { devnetChain } from '../../core/devnet/chain.ts'
import { mintUsdc } from '../../core/devnet/fund.ts'
import { caliburAbi } from '../../plugins/calibur/abi.ts'
import { CALIBUR_ADDRESS } from '../../plugins/calibur/networkOptions.ts'
import { chargedAtCost, startDevnetBruno } from '../fixtures/devnetBruno.ts'
import { RawMcpClient } from '../fixtures/mcpHttp.ts'
import { signTransfer } from '../fixtures/signedTransfer.ts'
import { waitFor } from '../fixtures/waitFor.ts'

// Issue 43, point 1: submit took up to four EIP-7702 authorizations with any payment and did not
// ask whose they were. One whose nonce is not its signer's is skipped by the chain, billed 25,000
// gas and refunded nothing, and no simulation fails on it; the charge counted 12,500 for each with a
// nonce above 0. Four such on a no-op relay: 156,295 gas counted, 206,175 billed, the runner keeping
// 0.796 of what it spent, again and again. Now every authorization is read as the chain will apply
// it at quote, submit and every send (core/relay/delegation7702.ts, readAuthorizations): only that
// of the account whose calls the relay runs, once, at its current nonce, each charged its whole 25,000.

const bruno = await startDevnetBruno(t, { groups: ['bruno', 'calibur', '3009'] })
const { deployment } = bruno
const chain = devnetChain(deployment.chainId)
const transport = http(deployment.rpcUrl)
const client = createPublicClient({ chain, transport })
const testClient = createTestClient({ mode: 'anvil', chain, transport })
const sponsor = createWalletClient({ account: privateKeyToAccount(deployment.deployer.privateKey), chain, transport })
const usdc = deployment.usdc
const usdcDomain = { address: usdc, name: 'USD Coin', version: '2', chainId: deployment.chainId }
const payee = getAddress(bruno.config.networks[0]!.payee)
const operator = deployment.runner.operator.address
const mcp = new RawMcpClient(`${bruno.mcpUrl}/bruno`)
const noOp = { to: zeroAddress, data: '0x' as Hex }
/** A call to `account` that succeeds whether or not it is delegated to Calibur: its nonce read. */
const readSeq = (account: PrivateKeyAccount) => ({ to: account.address, data: encodeFunctionData({ abi: caliburAbi, functionName: 'getSeq', args: [0n] }) })

const rest = async (path: string, body: unknown) => {
  const reply = await fetch(`${bruno.server.url}/local/v1/${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  return { status: reply.status, body: await reply.json() }
}
const authorize = async (signer: PrivateKeyAccount, nonce: number) => {
  const signed = await signer.signAuthorization({ contractAddress: CALIBUR_ADDRESS, chainId: deployment.chainId, nonce })
  return { chainId: signed.chainId, address: signed.address, nonce: signed.nonce, r: signed.r, s: signed.s, yParity: signed.yParity! }
}
const payment = async (key: Hex, value = 5_000_000n) => {
  const signed = await signTransfer(key, usdcDomain, payee, value)
  return { token: usdc, authorization: signed.message, signature: signed.signature }
}
/** A fresh payer holding 50 USDC and no ETH. */
const freshPayer = async () => {
  const key = generatePrivateKey()
  const account = privateKeyToAccount(key)
  await mintUsdc(deployment.rpcUrl, deployment, account.address, 50_000_000n)
  return { key, account }
}

t.test('authorizations the chain would skip, or not the relayed account\'s, are refused at quote and submit on every binding; nothing is sent', async (t) => {
  const { key } = await freshPayer()
  const account = privateKeyToAccount(generatePrivateKey())
  const call = readSeq(account)
  const strangers = Array.from({ length: 4 }, () => privateKeyToAccount(generatePrivateKey()))
  // The issue's attack: four strangers' authorizations at nonces their signers never had.
  const skipped = await Promise.all(strangers.map((stranger) => authorize(stranger, 5)))
  const runnerNonce = await client.getTransactionCount({ address: operator })
  const notTheAccounts = `authorizationList[0] is signed by ${strangers[0]!.address}, not by the account ${account.address} whose calls the relay runs: only that account's own authorization is sent with them`

  const quoted = await rest('quote', { call, token: 'USDC', payment: 'authorization', authorizationList: skipped })
  t.equal(quoted.status, 422)
  t.equal(quoted.body.error.message, `cannot quote: ${notTheAccounts}`, 'quote, before anything is signed')
  const overRest = await rest('submit', { call, payment: await payment(key), authorizationList: skipped })
  t.equal(overRest.status, 422)
  t.equal(overRest.body.error.message, `refused: ${notTheAccounts}`, 'REST')
  const overMcp = await mcp.callTool('submit', { chain: 'local', call, payment: await payment(key), authorizationList: skipped })
  t.equal(overMcp.isError, true)
  t.equal(overMcp.content[0].text, `refused: ${notTheAccounts}`, 'MCP')
  // With no call there is no account to delegate: none is sent.
  t.match((await rest('submit', { call: noOp, payment: await payment(key), authorizationList: [await authorize(strangers[0]!, 0)] })).body.error.message, /is signed by .*, not by the account 0x0000000000000000000000000000000000000000/)

  // The account's own: at a nonce it does not have, or twice.
  t.equal(
    (await rest('submit', { call, payment: await payment(key), authorizationList: [await authorize(account, 3)] })).body.error.message,
    "refused: authorizationList[0] carries nonce 3; the account's EOA nonce is 0. Bruno's runner sends the transaction, not the account, so the authorization must carry the account's current nonce",
  )
  const own = await authorize(account, 0)
  t.equal(
    (await rest('submit', { call, payment: await payment(key), authorizationList: [own, own] })).body.error.message,
    `refused: authorizationList[1] is a second authorization by ${account.address}: the chain would skip it (its nonce is spent by the first), so give one`,
  )
  t.equal(await client.getTransactionCount({ address: operator }), runnerNonce, 'the runner sent nothing')
})

t.test('the account\'s own authorization is charged its whole 25,000: the runner keeps at least what it spent', async (t) => {
  const { key } = await freshPayer()
  const account = privateKeyToAccount(generatePrivateKey())
  const accepted = await rest('submit', { call: readSeq(account), payment: await payment(key), authorizationList: [await authorize(account, 0)] })
  t.equal(accepted.status, 202, JSON.stringify(accepted.body))
  const status = await waitFor(async () => (await fetch(`${bruno.server.url}/local/v1/status/${accepted.body.id}`)).json(), (view: any) => view.stage === 'done' || view.stage === 'failed', 'done', 20_000)
  t.equal(status.stage, 'done', status.reason)
  t.equal(await client.getCode({ address: account.address }), `0xef0100${CALIBUR_ADDRESS.slice(2).toLowerCase()}`, 'the account is delegated by the runner\'s transaction')
  await chargedAtCost(t, bruno, status.transaction.hash, 'an empty account delegated in the relay')
})

t.test('an authorization made stale after submit is not sent: the runner checks it again before the send', async (t) => {
  const { key } = await freshPayer()
  const account = privateKeyToAccount(generatePrivateKey())
  const wallet = createWalletClient({ account, chain, transport })
  await client.waitForTransactionReceipt({ hash: await sponsor.sendTransaction({ to: account.address, value: parseEther('1') }) })
  // A nonce above 0: the charge used to count such an authorization at 12,500, the chain billing 25,000 once skipped.
  await client.waitForTransactionReceipt({ hash: await wallet.sendTransaction({ to: account.address }) })
  await testClient.setAutomine(false)
  t.teardown(() => testClient.setAutomine(true))
  // A first relay of the payer's in flight holds its second behind it.
  const before = await client.getTransactionCount({ address: operator })
  const first = await rest('submit', { call: readSeq(account), payment: await payment(key) })
  t.equal(first.status, 202, JSON.stringify(first.body))
  await waitFor(() => client.getTransactionCount({ address: operator, blockTag: 'pending' }), (count) => count > before, 'the first in the pool', 15_000)
  const second = await rest('submit', { call: readSeq(account), payment: await payment(key), authorizationList: [await authorize(account, 1)] })
  t.equal(second.status, 202, JSON.stringify(second.body))
  // The account spends the authorization's nonce itself, in the same block as the payer's first relay.
  await wallet.sendTransaction({ to: account.address, nonce: 1 })
  await testClient.mine({ blocks: 1 })
  await testClient.setAutomine(true)
  const held = await waitFor(
    async () => (await fetch(`${bruno.server.url}/local/v1/status/${second.body.id}`)).json(),
    (view: any) => /carries nonce 1; the account's EOA nonce is 2/.test(view.reason ?? ''),
    'the second held for its stale authorization',
    20_000,
  )
  t.equal(held.stage, 'waiting', held.reason)
  t.notOk(held.transaction, 'never sent')
  t.equal(await client.getTransactionCount({ address: operator }), before + 1, 'the runner sent only the first')
})
