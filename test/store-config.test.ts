import t from 'tap'
import { ConfigError } from '../config/load.ts'
import { openStore } from '../core/store/openStore.ts'
import { PostgresSubmissionStore } from '../core/store/postgresStore.ts'
import { SqliteSubmissionStore } from '../core/store/sqliteStore.ts'
import { configuredSecrets } from '../core/secrets.ts'
import { offlineConfig } from './fixtures/bruno.ts'

const postgres = { kind: 'postgres', url: { env: 'BRUNO_TEST_STORE_URL' } }
const url = 'postgres://bruno:s3cret%2Fpass@db.internal:5432/bruno'

t.test('the SQLite store stays the default, with or without a kind', async (t) => {
  t.same(offlineConfig({}, { store: undefined }).store, { kind: 'sqlite', path: '.bruno/bruno.sqlite' })
  t.same(offlineConfig({}, { store: { path: ':memory:' } }).store, { kind: 'sqlite', path: ':memory:' })
  const { store } = openStore({ kind: 'sqlite', path: ':memory:' }, {})
  t.ok(store instanceof SqliteSubmissionStore)
  await store.close()
})

t.test('the PostgreSQL store is named by an environment variable, which must be set', async (t) => {
  t.throws(() => offlineConfig({}, { store: postgres }), new ConfigError('config store.url: environment variable BRUNO_TEST_STORE_URL is not set'))
  t.throws(
    () => offlineConfig({ BRUNO_TEST_STORE_URL: url }, { store: { kind: 'postgres', url } }),
    new ConfigError('config store.url: Expected object'),
    'a URL written in the config itself is refused, and the message does not quote it',
  )
  t.throws(
    () => offlineConfig({}, { store: { kind: 'postgres', path: 'x.sqlite' } }),
    new ConfigError('config store.path: unknown key; the keys here are: "kind", "url"'),
    'a SQLite field on a PostgreSQL store',
  )
  t.throws(() => offlineConfig({}, { store: { kind: 'postgres' } }), new ConfigError('config store.url: Expected required property'))
  t.throws(() => offlineConfig({}, { store: { kind: 'mysql' } }), new ConfigError("config store.kind: Expected 'sqlite' or 'postgres'"))
  const env = { BRUNO_TEST_STORE_URL: url }
  const config = offlineConfig(env, { store: postgres })
  t.same(config.store, postgres)
  // Opening connects to nothing yet: the table is made on first use.
  const { store } = openStore(config.store, env)
  t.ok(store instanceof PostgresSubmissionStore)
  await store.close()
})

t.test('the PostgreSQL URL and its password are among the secrets the logger scrubs', async (t) => {
  const env = { BRUNO_TEST_STORE_URL: url }
  const secrets = configuredSecrets(offlineConfig(env, { store: postgres }), env)
  t.ok(secrets.includes(url), 'the URL')
  t.ok(secrets.includes('s3cret%2Fpass'), 'the password as written in the URL')
  t.ok(secrets.includes('s3cret/pass'), 'and decoded')
  t.notOk(configuredSecrets(offlineConfig({}), {}).some((secret) => secret.includes('postgres')), 'none for the SQLite store')
})
