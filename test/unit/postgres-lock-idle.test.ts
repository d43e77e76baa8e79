import type { FastifyBaseLogger } from 'fastify'
import t from 'tap'
import { PostgresRunnerLock } from '../../core/store/postgresRunnerLock.ts'
import { PostgresSubmissionStore } from '../../core/store/postgresStore.ts'
import { postgresDatabase, postgresSkip } from '../fixtures/postgres.ts'

// The runner lock's session against the server's idle timeout (core/store/postgresRunnerLock.ts):
// the lock session sets idle_session_timeout (5 s), and its heartbeat (every second) keeps it
// alive while the process runs; a process that stops running (frozen here: this thread blocked for
// 6 s, so no heartbeat can go out) has its session ended by the server, and on waking finds it no
// longer holds the key. These cases are about durations, so this file takes about 15 s; it runs
// only under .ci/with-postgres (or fails when BRUNO_TEST_PG_REQUIRED is set without it).

const IDLE_TIMEOUT_MS = 5_000

interface Line {
  readonly level: string
  readonly message: string
}

function recorder(): { log: FastifyBaseLogger; lines: Line[] } {
  const lines: Line[] = []
  const at = (level: string) => (_fields: unknown, message: string) => {
    lines.push({ level, message })
  }
  const log = { info: at('info'), warn: at('warn'), debug: at('debug'), error: at('error'), fatal: at('fatal'), trace: at('trace') }
  return { log: log as unknown as FastifyBaseLogger, lines }
}

t.test('PostgreSQL runner lock and the idle timeout', { skip: postgresSkip() }, async (t) => {
  const url = await postgresDatabase(t)
  const store = new PostgresSubmissionStore(url)
  t.teardown(() => store.close())

  t.test('a running holder keeps its session past the idle timeout: the heartbeat', async (t) => {
    const { log, lines } = recorder()
    const lock = new PostgresRunnerLock(url, { name: 'bruno-runner:1:0xidle', chain: 'base', onSubmission: () => {}, epochs: store }, log)
    t.teardown(() => lock.release())
    t.ok(await lock.acquire())
    // Watched (not slept through) until well past the timeout: held throughout.
    const until = Date.now() + IDLE_TIMEOUT_MS + 1_500
    while (Date.now() < until) {
      if (!lock.held()) break
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    t.equal(lock.held(), true, 'still held')
    t.strictSame(lines.map((line) => line.level), ['info'], 'no loss logged')
  })

  t.test('a frozen holder\'s session is ended by the server; on waking it stops holding', async (t) => {
    const { log, lines } = recorder()
    const lock = new PostgresRunnerLock(url, { name: 'bruno-runner:2:0xidle', chain: 'base', onSubmission: () => {}, epochs: store }, log)
    t.teardown(() => lock.release())
    t.ok(await lock.acquire())
    // Freeze this thread past the timeout: no timer, no heartbeat runs meanwhile.
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, IDLE_TIMEOUT_MS + 1_000)
    const deadline = Date.now() + 5_000
    while (lock.held() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20))
    t.equal(lock.held(), false, 'the session is gone, and the holder knows it')
    t.strictSame(lines.map((line) => line.message), [
      'runner key lock taken: this process sends for the key',
      'runner key lock lost: this process stops sending until it takes the lock again',
    ])
    const rival = new PostgresRunnerLock(url, { name: 'bruno-runner:2:0xidle', chain: 'base', onSubmission: () => {}, epochs: store }, recorder().log)
    t.teardown(() => rival.release())
    t.strictSame(await rival.acquire(), { key: 'bruno-runner:2:0xidle', epoch: 2 }, 'another takes the key')
  })
})
