import { mkdtempSync, writeFileSync } from 'node:fs'
import { hostname, tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import t, { type Test } from 'tap'
import { encodeFunctionData, erc20Abi, getAddress } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { devnetConfig } from '../config/devnet.ts'
import { startAnvil } from '../core/devnet/anvil.ts'
import { deployDevnet } from '../core/devnet/deploy.ts'
import { mintUsdc } from '../core/devnet/fund.ts'
import { postgresDatabase, postgresSkip } from './fixtures/postgres.ts'
import { devnetPricing, ledgerViolations, runnerLedger } from '../core/testing/runnerLedger.ts'
import { signTransfer } from './fixtures/signedTransfer.ts'
import { serveReplica, type Replica } from './fixtures/replicaProcess.ts'
import { waitFor } from './fixtures/waitFor.ts'

// Two Bruno processes on one PostgreSQL and one runner key: submissions posted to either are each
// sent once, with no nonce used twice; when the replica that owns the key is killed (SIGKILL), the
// other takes the key over and completes the rest. Counts from the environment, for measuring.
const FIRST = Number(process.env.BRUNO_REPLICAS_FIRST ?? 200)
const SECOND = Number(process.env.BRUNO_REPLICAS_SECOND ?? 100)
/** Submissions posted at once (each a quote then a submit), spread over the replicas. */
const CONCURRENCY = 8
const LOCK_TAKEN = 'runner key lock taken: this process sends for the key'

// Measured alone: about 75 s for 200 + 100 submissions (most of it the devnet's mining and the
// ledger's block-by-block reads); the suite runs two files at once, so .taprc's 180 s is too tight.
t.setTimeout(420_000)



/** Runs `work` over `items`, `limit` at a time, in order of start. */
async function eachLimited<T>(items: readonly T[], limit: number, work: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) {
        const index = next++
        await work(items[index]!, index)
      }
    }),
  )
}

t.test('two replicas on one PostgreSQL and one runner key', { skip: postgresSkip() }, async (t) => {
  const pgUrl = await postgresDatabase(t)
  const anvil = await startAnvil()
  t.teardown(() => anvil.stop())
  const deployment = await deployDevnet(anvil.rpcUrl)
  const env = { ...process.env, BRUNO_REPLICA_PG_URL: pgUrl }
  const dir = mkdtempSync(join(tmpdir(), 'bruno-replicas-'))
  const config = {
    ...devnetConfig(deployment, env, { port: 0, groups: ['bruno'], pollMs: 100 }),
    store: { kind: 'postgres' as const, url: { env: 'BRUNO_REPLICA_PG_URL' } },
  }
  const configPath = join(dir, 'bruno.json')
  writeFileSync(configPath, JSON.stringify(config))
  const payee = getAddress(config.networks[0]!.payee)
  const token = { address: deployment.usdc, name: 'USD Coin', version: '2', chainId: deployment.chainId }
  const db = new pg.Client({ connectionString: pgUrl })
  await db.connect()
  t.teardown(() => db.end())

  const senders = Array.from({ length: FIRST + SECOND }, () => {
    const key = generatePrivateKey()
    const account = privateKeyToAccount(key).address
    // A paid no-op call: the account reads its own balance; the signed transfer pays for it.
    return { key, account, call: { to: deployment.usdc, data: encodeFunctionData({ abi: erc20Abi, functionName: 'balanceOf', args: [account] }) } }
  })
  let started = Date.now()
  for (const sender of senders) await mintUsdc(anvil.rpcUrl, deployment, sender.account, 5_000_000n)
  t.comment(`funded ${senders.length} accounts in ${Date.now() - started} ms`)

  const serve = (name: string) => serveReplica(t, name, configPath, env)
  const submit = async (replica: Replica, sender: (typeof senders)[number]): Promise<string> => {
    const quote = await replica.mcp.call('quote', { chain: 'local', call: sender.call, token: 'USDC', payment: 'authorization' })
    const fee = await signTransfer(sender.key, token, payee, BigInt(quote.amountBaseUnits))
    return (await replica.mcp.call('submit', { chain: 'local', call: sender.call, payment: { token: deployment.usdc, authorization: fee.message, signature: fee.signature } })).id as string
  }
  const doneCount = async () => Number((await db.query("SELECT count(*) AS n FROM submissions WHERE stage = 'done'")).rows[0].n)
  const unfinished = async () => (await db.query("SELECT id, stage, reason FROM submissions WHERE stage <> 'done'")).rows
  const owners = (replicas: Replica[]) => replicas.filter((replica) => replica.logs.some((line) => line.msg === LOCK_TAKEN))
  /** Every id's status, read through `replica`, and the runner's transactions on chain. */
  const check = async (t: Test, replica: Replica, ids: string[]) => {
    const finals = await Promise.all(ids.map((id) => replica.mcp.call('status', { id })))
    t.same(
      finals.filter((status) => status.stage !== 'done').map((status) => `${status.id}: ${status.stage} ${status.reason ?? ''}`),
      [],
      `all ${ids.length} are done`,
    )
    t.equal(new Set(finals.map((status) => status.transaction?.hash)).size, ids.length, 'each in a transaction of its own')
    t.same(finals.map((status) => status.transaction?.nonce).sort((a, b) => a - b), [...Array(ids.length).keys()], `nonces 0..${ids.length - 1}: none reused, none skipped`)
    const ledger = await runnerLedger(anvil.rpcUrl, deployment.runner.operator.address, devnetPricing(deployment))
    t.equal(ledger.length, ids.length, 'the runner sent each submission exactly once')
    t.same(ledgerViolations(ledger), [], 'and paid for no reverted transaction, nor more than any payment was worth')
  }

  const replicas = [await serve('a'), await serve('b')]
  await waitFor(async () => owners(replicas).length, (count) => count > 0, 'a replica to take the runner key', 20_000)

  // Round one: both replicas up, submissions alternating between them.
  const ids: string[] = []
  started = Date.now()
  await eachLimited(senders.slice(0, FIRST), CONCURRENCY, async (sender, index) => {
    ids[index] = await submit(replicas[index % 2]!, sender)
  })
  const accepted = Date.now() - started
  await waitFor(doneCount, (count) => count === FIRST, `${FIRST} done`, 120_000, 100)
  t.comment(`round one: ${FIRST} submissions over two replicas, accepted in ${accepted} ms, all done in ${Date.now() - started} ms`)
  t.equal(owners(replicas).length, 1, 'one replica alone took the runner key')
  // The other says so once, naming whom it waits for (issue 29, point 9).
  const standby = replicas.find((replica) => !owners(replicas).includes(replica))!
  const standing = standby.logs.filter((line) => line.msg?.startsWith('standing by:'))
  t.equal(standing.length, 1, 'one standing-by line, not one a pass')
  t.equal(standing[0]?.msg, `standing by: the Bruno at ${hostname()}:${owners(replicas)[0]!.child.pid} holds the runner key for local; this one takes it over when that one stops or goes silent`)
  await check(t, replicas[0]!, ids)

  // Round two: the owner is killed halfway through the posting; the rest go to the survivor.
  const owner = owners(replicas)[0]!
  const survivor = replicas.find((replica) => replica !== owner)!
  const half = Math.floor(SECOND / 2)
  started = Date.now()
  await eachLimited(senders.slice(FIRST, FIRST + half), CONCURRENCY, async (sender, index) => {
    ids[FIRST + index] = await submit(replicas[index % 2]!, sender)
  })
  const unfinishedAtKill = (await unfinished()).length
  owner.child.kill('SIGKILL')
  const killedAt = Date.now()
  await owner.exited
  await eachLimited(senders.slice(FIRST + half, FIRST + SECOND), CONCURRENCY, async (sender, index) => {
    ids[FIRST + half + index] = await submit(survivor, sender)
  })
  const takeover = await waitFor(
    async () => survivor.logs.find((line) => line.msg === LOCK_TAKEN),
    (line) => line !== undefined,
    'the survivor to take the runner key',
    30_000,
  )
  await waitFor(doneCount, (count) => count === FIRST + SECOND, `${FIRST + SECOND} done`, 120_000, 100)
  t.comment(
    `round two: ${SECOND} submissions, the owner killed after ${half} with ${unfinishedAtKill} not yet done; ` +
      `the survivor took the key ${takeover!.time! - killedAt} ms after the kill; all done ${Date.now() - started} ms after the round began`,
  )
  await check(t, survivor, ids)

  for (const replica of replicas) {
    const leaked = replica.text.filter((line) => line.includes(new URL(pgUrl).password) || line.includes(pgUrl))
    t.same(leaked, [], `${replica.name}'s logs never quote the PostgreSQL URL or password`)
  }
})
