import t from 'tap'
import { createPublicClient, createTestClient, encodeFunctionData, erc20Abi, getAddress, http } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { mintUsdc } from '../core/devnet/fund.ts'
import { startDevnetBruno } from './fixtures/devnetBruno.ts'
import { RawMcpClient } from './fixtures/mcpHttp.ts'
import { signTransfer } from './fixtures/signedTransfer.ts'
import { waitFor } from './fixtures/waitFor.ts'

// A submission that stops working after it was accepted is never sent: it waits, with the reason,
// and fails at its deadline. Here two submissions carry the same signed transfer; the runner sends
// the first, and the second's payment can then only revert.

t.test('a submission that would revert waits with its reason, then fails at its deadline, unsent', async (t) => {
  const bruno = await startDevnetBruno(t, { groups: ['bruno'], pollMs: 100 })
  const { deployment } = bruno
  const client = createPublicClient({ transport: http(deployment.rpcUrl) })
  const testClient = createTestClient({ mode: 'anvil', transport: http(deployment.rpcUrl) })
  const mcp = new RawMcpClient(`${bruno.mcpUrl}/bruno`)
  const payee = getAddress(bruno.config.networks[0]!.payee)
  const key = generatePrivateKey()
  const account = privateKeyToAccount(key).address
  await mintUsdc(deployment.rpcUrl, deployment, account, 5_000_000n)
  const call = { to: deployment.usdc, data: encodeFunctionData({ abi: erc20Abi, functionName: 'balanceOf', args: [account] }) }
  const quote = await mcp.call('quote', { chain: 'local', call, token: 'USDC', payment: 'authorization' })
  const fee = await signTransfer(key, { address: deployment.usdc, name: 'USD Coin', version: '2', chainId: deployment.chainId }, payee, BigInt(quote.amountBaseUnits))
  const payment = { token: deployment.usdc, authorization: fee.message, signature: fee.signature }

  // Blocks wait for us: the first submission is sent but not mined when the second is accepted.
  await testClient.setAutomine(false)
  const first = await mcp.call('submit', { chain: 'local', call, payment })
  await waitFor(() => mcp.call('status', { id: first.id }), (status) => status.stage === 'sending', `the first submission ${first.id} sent`, 20_000)
  // A second payment by the same account that its balance covers only until the first is in (the first is refunded
  // what it did not cost, about half of it: this one needs all but a tenth of it).
  const rest = await signTransfer(key, { address: deployment.usdc, name: 'USD Coin', version: '2', chainId: deployment.chainId }, payee, 5_000_000n - BigInt(quote.amountBaseUnits) / 10n)
  const deadline = Math.floor(Date.now() / 1000) + 3
  const second = await mcp.call('submit', { chain: 'local', call, payment: { token: deployment.usdc, authorization: rest.message, signature: rest.signature }, deadline })
  t.equal(second.stage, 'waiting', 'accepted: against the latest block, the balance still covers it')
  t.not(second.id, first.id, 'a payment of its own: a submission of its own')
  await testClient.setAutomine(true)
  await testClient.mine({ blocks: 1 })

  const reasonsWhileWaiting = new Set<string>()
  const status = await waitFor(
    () => mcp.call('status', { id: second.id }),
    (status) => {
      if (status.stage === 'waiting' && status.reason) reasonsWhileWaiting.add(status.reason)
      return status.stage === 'failed' || status.stage === 'done'
    },
    `the second submission ${second.id} settled`,
    30_000,
  )
  // While the first is in flight, the second waits behind it (one transaction in flight per payer);
  // once the first is in, the second's payment is spent and it waits for that reason.
  const whileWaiting = [...reasonsWhileWaiting].filter((reason) => !/has a transaction in flight; this one follows it$/.test(reason))
  t.equal(whileWaiting.length, 1, 'while waiting, it says why, in one way')
  t.match(whileWaiting[0], /^waiting: the payer 0x[0-9a-fA-F]{40} holds [0-9.]+ USDC, less than the [0-9.]+ USDC its payment transfers \(payment\.authorization\.value\): fund it with USDC, or pay in another token$/, 'its payer holds less than it pays')
  t.equal(status.stage, 'failed')
  t.match(status.reason, /^not sent before its deadline: waiting: the payer 0x[0-9a-fA-F]{40} holds /)
  t.equal(status.transaction, undefined, 'it was never sent')
  const failedLine = bruno.logs.map((line) => JSON.parse(line)).find((line) => line.msg === 'submission failed')
  t.match(failedLine, { level: 40, submission: second.id, reason: status.reason }, 'the log says it failed, and why, at warn')
  t.equal((await mcp.call('status', { id: first.id })).stage, 'done', 'the first one went through')
  t.equal(await client.getTransactionCount({ address: deployment.runner.operator.address }), 1, 'the runner sent one transaction')
})
