import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import t from 'tap'
import { createPublicClient, createTestClient, encodeFunctionData, erc20Abi, getAddress, http, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { devnetConfig } from '../config/devnet.ts'
import { startAnvil } from '../core/devnet/anvil.ts'
import { deployDevnet } from '../core/devnet/deploy.ts'
import { mintUsdc } from '../core/devnet/fund.ts'
import { startDevnetBruno } from './fixtures/devnetBruno.ts'
import { RawMcpClient } from './fixtures/mcpHttp.ts'
import { devnetPricing, ledgerViolations, runnerLedger } from '../core/testing/runnerLedger.ts'
import { signTransfer } from './fixtures/signedTransfer.ts'
import { serveReplica } from './fixtures/replicaProcess.ts'
import { waitFor } from './fixtures/waitFor.ts'

// The runner under a process kill and a stuck transaction. Blocks are mined by hand (automine
// off), so transactions stay "sending" for as long as a test needs them to.


/** A fresh USDC-only account and a paid no-op call for it (the call reads a balance). */
function paidSubmission(usdc: Hex) {
  const key = generatePrivateKey()
  const account = privateKeyToAccount(key).address
  const call = { to: usdc, data: encodeFunctionData({ abi: erc20Abi, functionName: 'balanceOf', args: [account] }) }
  return { key, account, call }
}

t.test('SIGKILL with one submission waiting and ten sending: after a restart all are done, each sent once', async (t) => {
  const anvil = await startAnvil()
  t.teardown(() => anvil.stop())
  const deployment = await deployDevnet(anvil.rpcUrl)
  const testClient = createTestClient({ mode: 'anvil', transport: http(anvil.rpcUrl) })
  const env = { ...process.env }
  const dir = mkdtempSync(join(tmpdir(), 'bruno-restart-'))
  const storePath = join(dir, 'bruno.sqlite')
  const config = devnetConfig(deployment, env, { port: 0, groups: ['bruno'], storePath, pollMs: 100 })
  const configPath = join(dir, 'bruno.json')
  writeFileSync(configPath, JSON.stringify(config))
  const payee = getAddress(config.networks[0]!.payee)
  const token = { address: deployment.usdc, name: 'USD Coin', version: '2', chainId: deployment.chainId }

  const senders = Array.from({ length: 10 }, () => paidSubmission(deployment.usdc))
  for (const sender of senders) await mintUsdc(anvil.rpcUrl, deployment, sender.account, 5_000_000n)
  await testClient.setAutomine(false)

  const serve = async () => {
    const replica = await serveReplica(t, 'bruno', configPath, env)
    return { child: replica.child, mcp: replica.mcp, log: () => replica.logs }
  }

  const submit = async (mcp: RawMcpClient, sender: (typeof senders)[number]) => {
    const quote = await mcp.call('quote', { chain: 'local', call: sender.call, token: 'USDC', payment: 'authorization' })
    const fee = await signTransfer(sender.key, token, payee, BigInt(quote.amountBaseUnits))
    return (await mcp.call('submit', { chain: 'local', call: sender.call, payment: { token: deployment.usdc, authorization: fee.message, signature: fee.signature } })).id as string
  }

  const first = await serve()
  const sendingIds: string[] = []
  for (const sender of senders.slice(0, 10)) sendingIds.push(await submit(first.mcp, sender))
  for (const id of sendingIds) await waitFor(() => first.mcp.call('status', { id }), (status) => status.stage === 'sending', `${id} sending`)
  // The eleventh: a second payment of the first sender's. The runner sends one transaction per payer
  // at a time, so it waits while that sender's first is in flight, however soon the kill comes.
  const waitingId = await submit(first.mcp, senders[0]!)
  first.child.kill('SIGKILL')
  await new Promise((resolve) => first.child.once('exit', resolve))

  const db = new Database(storePath, { readonly: true })
  const stages = db.prepare('SELECT id, stage FROM submissions').all() as { id: string; stage: string }[]
  db.close()
  t.equal(stages.length, 11, 'every accepted submission was stored')
  t.equal(stages.find((row) => row.id === waitingId)?.stage, 'waiting', 'one was waiting when the process died')
  t.equal(stages.filter((row) => row.stage === 'sending').length, 10, 'ten were sending (signed, stored, broadcast, not mined)')

  const second = await serve()
  await testClient.setAutomine(true)
  await testClient.mine({ blocks: 1 })
  const finals = await Promise.all(
    [...sendingIds, waitingId].map((id) => waitFor(() => second.mcp.call('status', { id }), (status) => status.stage === 'done' || status.stage === 'failed', `${id} done`)),
  )
  t.same(finals.map((status) => status.stage), Array(11).fill('done'), 'all eleven are done')
  const hashes = new Set(finals.map((status) => status.transaction.hash))
  t.equal(hashes.size, 11, 'eleven distinct transactions')
  t.same(finals.map((status) => status.transaction.nonce).sort((a, b) => a - b), [...Array(11).keys()], 'nonces 0..10, none reused, none skipped')
  t.equal(finals.at(-1)!.transaction.nonce, 10, 'the one waiting was sent last, after the restart')

  const ledger = await runnerLedger(anvil.rpcUrl, deployment.runner.operator.address, devnetPricing(deployment))
  t.equal(ledger.length, 11, 'the runner sent each submission exactly once')
  t.same(ledgerViolations(ledger), [], 'and paid for no reverted transaction, nor more than any payment was worth')

  // The lifecycle in the log (issue 29, point 9): the start says what it took up, a clean stop what it leaves.
  const started = second.log().filter((line) => line.msg === 'runner started: it sends for the runner key and takes up what is in flight')
  t.same(started.map((line) => [line.inFlight, line.waiting]), [[{ sending: 10, confirming: 0 }, 1]], 'one line at the start: the ten sending on its lane, the one waiting for any lane')
  const exited = new Promise((resolve) => second.child.once('exit', resolve))
  second.child.kill('SIGTERM')
  t.equal(await exited, 0)
  const stopped = second.log().filter((line) => line.msg === 'runner stopped: what is in flight is taken up by the next start')
  t.same(stopped.map((line) => [line.inFlight, line.waiting]), [[{ sending: 0, confirming: 0 }, 0]], 'one line at the stop: nothing left in flight')
})

t.test('a stuck transaction is replaced: same nonce, higher fee, and only the replacement is mined', async (t) => {
  const bruno = await startDevnetBruno(t, { groups: ['bruno'], stuckAfterMs: 1_000, pollMs: 100 })
  const { deployment } = bruno
  const client = createPublicClient({ transport: http(deployment.rpcUrl) })
  const testClient = createTestClient({ mode: 'anvil', transport: http(deployment.rpcUrl) })
  const mcp = new RawMcpClient(`${bruno.mcpUrl}/bruno`)
  const payee = getAddress(bruno.config.networks[0]!.payee)
  const token = { address: deployment.usdc, name: 'USD Coin', version: '2', chainId: deployment.chainId }
  const sender = paidSubmission(deployment.usdc)
  await mintUsdc(deployment.rpcUrl, deployment, sender.account, 5_000_000n)
  const nonceBefore = await client.getTransactionCount({ address: deployment.runner.operator.address })
  await testClient.setAutomine(false)

  const quote = await mcp.call('quote', { chain: 'local', call: sender.call, token: 'USDC', payment: 'authorization' })
  const fee = await signTransfer(sender.key, token, payee, BigInt(quote.amountBaseUnits))
  const { id } = await mcp.call('submit', { chain: 'local', call: sender.call, payment: { token: deployment.usdc, authorization: fee.message, signature: fee.signature } })
  const sending = await waitFor(() => mcp.call('status', { id }), (status) => status.stage === 'sending', 'sending')
  const stuckHash = sending.transaction.hash
  // `sending` is stored before the broadcast: wait for the node to hold it.
  const stuck = (await waitFor(() => client.getTransaction({ hash: stuckHash }).catch(() => undefined), (found) => found !== undefined, 'the node to hold it'))!
  const replaced = await waitFor(() => mcp.call('status', { id }), (status) => status.transaction?.hash !== stuckHash, 'a replacement', 10_000)
  t.equal(replaced.transaction.nonce, sending.transaction.nonce, 'the replacement takes the same nonce')
  const replacement = (await waitFor(() => client.getTransaction({ hash: replaced.transaction.hash }).catch(() => undefined), (found) => found !== undefined, 'the node to hold the replacement'))!
  t.ok(replacement.maxFeePerGas! >= (stuck.maxFeePerGas! * 11_250n) / 10_000n, 'the max fee rose by the configured bump')
  t.ok(replacement.maxPriorityFeePerGas! > stuck.maxPriorityFeePerGas!, 'and so did the tip')

  await testClient.setAutomine(true)
  await testClient.mine({ blocks: 1 })
  const done = await waitFor(() => mcp.call('status', { id }), (status) => status.stage === 'done', 'done')
  t.equal(done.transaction.hash, replaced.transaction.hash, 'the replacement was mined')
  const receipt = await client.getTransactionReceipt({ hash: done.transaction.hash })
  t.equal(receipt.status, 'success')
  t.equal(await client.getTransactionCount({ address: deployment.runner.operator.address }), nonceBefore + 1, 'one transaction for that nonce')
  await t.rejects(client.getTransactionReceipt({ hash: stuckHash }), 'the stuck transaction was never mined')
})
