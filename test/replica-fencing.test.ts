import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import t from 'tap'
import { encodeFunctionData, erc20Abi, getAddress } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { DEVNET_RPC_ENV, devnetConfig } from '../config/devnet.ts'
import { startAnvil } from '../core/devnet/anvil.ts'
import { deployDevnet } from '../core/devnet/deploy.ts'
import { mintUsdc } from '../core/devnet/fund.ts'
import { postgresDatabase, postgresSkip } from './fixtures/postgres.ts'
import { startRpcGate } from './fixtures/rpcGate.ts'
import { devnetPricing, ledgerViolations, runnerLedger } from '../core/testing/runnerLedger.ts'
import { signTransfer } from './fixtures/signedTransfer.ts'
import { serveReplica, type Replica } from './fixtures/replicaProcess.ts'
import { waitFor } from './fixtures/waitFor.ts'

// Two Bruno processes on one PostgreSQL and one runner key. The owner is stalled mid-send (the
// answer to its last simulation held back at an RPC gate: after it took its next nonce, before it
// stores the transaction it signs), then paused (SIGSTOP) past its lock session's idle timeout
// (5 s): the other replica takes the key at the next epoch and sends everything, the stalled
// submission included. Resumed (SIGCONT), the stale owner carries on where it stopped, with the
// simulation's answer and the nonce of before: the store refuses its write, so it never
// broadcasts, and it stands down. Unfenced, it would store and broadcast at a nonce already used,
// and its refusal would put the done submission back to waiting, to be sent again.

const LOCK_TAKEN = 'runner key lock taken: this process sends for the key'
const STANDS_DOWN = /^runner stands down: it lost ownership of the runner key at epoch (\d+) to epoch (\d+);/

t.setTimeout(240_000)


t.test('a replica paused past its lock is fenced out: no nonce reused, nothing sent twice, and it stands down', { skip: postgresSkip() }, async (t) => {
  const pgUrl = await postgresDatabase(t)
  const anvil = await startAnvil()
  t.teardown(() => anvil.stop())
  const deployment = await deployDevnet(anvil.rpcUrl)
  const gate = await startRpcGate(anvil.rpcUrl)
  t.teardown(() => gate.close())
  const env = { ...process.env, BRUNO_FENCING_PG_URL: pgUrl }
  const dir = mkdtempSync(join(tmpdir(), 'bruno-fencing-'))
  const devnet = devnetConfig(deployment, env, { port: 0, groups: ['bruno'], pollMs: 100 })
  const config = {
    ...devnet,
    // The held answer must outlast the pause without timing out (a retry would ask the chain afresh).
    networks: [{ ...devnet.networks[0]!, rpcTimeoutMs: 60_000 }],
    store: { kind: 'postgres' as const, url: { env: 'BRUNO_FENCING_PG_URL' } },
  }
  const configPath = join(dir, 'bruno.json')
  writeFileSync(configPath, JSON.stringify(config))
  const payee = getAddress(config.networks[0]!.payee)
  const token = { address: deployment.usdc, name: 'USD Coin', version: '2', chainId: deployment.chainId }
  const db = new pg.Client({ connectionString: pgUrl })
  await db.connect()
  t.teardown(() => db.end())

  const senders = Array.from({ length: 12 }, () => {
    const key = generatePrivateKey()
    const account = privateKeyToAccount(key).address
    // A paid no-op call: the account reads its own balance; the signed transfer pays for it.
    return { key, account, call: { to: deployment.usdc, data: encodeFunctionData({ abi: erc20Abi, functionName: 'balanceOf', args: [account] }) } }
  })
  for (const sender of senders) await mintUsdc(anvil.rpcUrl, deployment, sender.account, 5_000_000n)

  const serve = (name: string, rpcUrl: string) => serveReplica(t, name, configPath, { ...env, [DEVNET_RPC_ENV]: rpcUrl })
  const submit = async (replica: Replica, sender: (typeof senders)[number]): Promise<string> => {
    const quote = await replica.mcp.call('quote', { chain: 'local', call: sender.call, token: 'USDC', payment: 'authorization' })
    const fee = await signTransfer(sender.key, token, payee, BigInt(quote.amountBaseUnits))
    return (await replica.mcp.call('submit', { chain: 'local', call: sender.call, payment: { token: deployment.usdc, authorization: fee.message, signature: fee.signature } })).id as string
  }
  const ids: string[] = []
  const submitAll = async (replica: Replica, batch: typeof senders) => {
    for (const sender of batch) ids.push(await submit(replica, sender))
  }
  const allDone = () => waitFor(async () => Number((await db.query("SELECT count(*) AS n FROM submissions WHERE stage = 'done'")).rows[0].n), (n) => n === ids.length, `${ids.length} done`, 60_000)
  const lines = (replica: Replica, msg: string | RegExp) => replica.logs.filter((line) => (typeof msg === 'string' ? line.msg === msg : msg.test(line.msg ?? '')))

  // The owner reads the chain through the gate; the other replica, directly.
  const stale = await serve('stale', gate.url)
  await waitFor(async () => lines(stale, LOCK_TAKEN).length, (count) => count === 1, 'the first replica to take the runner key')
  const survivor = await serve('survivor', anvil.rpcUrl)

  // Round one: the owner sends, as usual (submitted through the other replica: it announces them).
  await submitAll(survivor, senders.slice(0, 4))
  await allDone()

  // The owner is stalled in the next one's last simulation (a call to the Runner), then paused past
  // its lock session's end.
  const runnerContract = deployment.runner.contract.toLowerCase()
  gate.hold((call) => call.method === 'eth_call' && (call.params?.[0] as { to?: string } | undefined)?.to?.toLowerCase() === runnerContract)
  await submitAll(survivor, senders.slice(4, 5))
  await waitFor(async () => gate.held, (held) => held > 0, 'the owner to simulate the submission')
  stale.child.kill('SIGSTOP')
  const pausedAt = Date.now()
  await submitAll(survivor, senders.slice(5, 8))
  const takeover = await waitFor(async () => lines(survivor, LOCK_TAKEN)[0], (line) => line !== undefined, 'the other replica to take the runner key', 30_000)
  t.comment(`the other replica took the key ${takeover!.time! - pausedAt} ms after the pause, at epoch ${takeover!.epoch}`)
  await allDone()

  // Resumed: the stale owner finishes its simulation and tries to store its transaction.
  gate.open()
  stale.child.kill('SIGCONT')
  const stoodDown = await waitFor(async () => lines(stale, STANDS_DOWN)[0], (line) => line !== undefined, 'the stale owner to stand down', 30_000)
  const [, lost, taken] = STANDS_DOWN.exec(stoodDown!.msg!)!.map(Number)
  t.comment(stoodDown!.msg!)
  t.equal(lost, 1, 'it lost the key at the epoch it took it at')
  t.equal(taken, takeover!.epoch, "to the other replica's epoch")
  t.equal(lines(stale, STANDS_DOWN).length, 1, 'and says so once')
  t.same((await db.query('SELECT epoch FROM runner_epochs')).rows.map((row) => Number(row.epoch)), [taken], "the store's epoch is the new owner's")

  // Both replicas still accept submissions; only the new owner sends them.
  await submitAll(stale, senders.slice(8, 10))
  await submitAll(survivor, senders.slice(10, 12))
  await allDone()

  const finals = await Promise.all(ids.map((id) => survivor.mcp.call('status', { id })))
  t.same(
    finals.filter((status) => status.stage !== 'done').map((status) => `${status.id}: ${status.stage} ${status.reason ?? ''}`),
    [],
    `all ${ids.length} are done`,
  )
  t.same(finals.map((status) => status.transaction?.nonce).sort((a, b) => a - b), [...Array(ids.length).keys()], `nonces 0..${ids.length - 1}: none reused, none skipped`)
  const ledger = await runnerLedger(anvil.rpcUrl, deployment.runner.operator.address, devnetPricing(deployment))
  t.same(ledger.map((entry) => entry.hash).sort(), finals.map((status) => status.transaction.hash).sort(), "the runner's transactions on chain are the submissions' own, one each: none sent twice")
  t.same(ledgerViolations(ledger), [], 'none reverted, none cancelled')
  // Logs are written in batches (at most a second late): read last, and placed by their own clock.
  t.same(lines(stale, 'sent').filter((line) => line.time! > pausedAt), [], 'the stale owner sent nothing after its pause')
  t.ok(lines(stale, 'sent').length > 0, '(and it did send before it)')
  t.equal(lines(stale, LOCK_TAKEN).length, 1, 'nor took the key again')
})
