import { readFileSync } from 'node:fs'
import t from 'tap'
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'
import { BrunoConfig } from '../config/schema.ts'

// server.json, Bruno's entry for the MCP Registry, checked against the registry's own schema.
// test/fixtures/server.schema.json is vendored unchanged from the registry repository
// (modelcontextprotocol/registry, docs/reference/server-json/draft/server.schema.json at commit
// 13760d02395eed4195a90c80c511aa6a93b33028, MIT licence): the schema the registry generates from
// its API, whose published release is https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json.

const read = (path: string) => JSON.parse(readFileSync(new URL(path, import.meta.url), 'utf8'))
const schema = read('./fixtures/server.schema.json')
const server = read('../server.json')
const ajv = new Ajv2020({ allErrors: true, strict: false })
addFormats.default(ajv)
const validate = ajv.compile(schema)

t.test('server.json is valid against the registry\'s schema', async (t) => {
  t.ok(validate(server), JSON.stringify(validate.errors))
  t.equal(server.$schema, 'https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json')
})

t.test('the schema refuses what the registry refuses', async (t) => {
  t.notOk(validate({ ...server, description: 'x'.repeat(101) }), 'a description over 100 characters')
  t.notOk(validate({ ...server, name: 'bruno' }), 'a name without a namespace')
  t.notOk(validate({ ...server, remotes: [{ type: 'streamable-http', url: 'not a url' }] }), 'a remote URL that is neither http(s) nor a template')
  t.notOk(validate({ ...server, version: undefined }), 'no version')
})

t.test('it describes this release and every group path', async (t) => {
  t.equal(server.version, read('../package.json').version)
  const urls = server.remotes.map((remote: { url: string }) => remote.url)
  const builtin = (BrunoConfig.properties.groups as { default: string[] }).default
  t.same(urls, ['https://{host}/mcp', ...builtin.map((group) => `https://{host}/mcp/${group}`)], '/mcp, then one path per built-in group')
  for (const remote of server.remotes) {
    t.equal(remote.type, 'streamable-http')
    t.ok(remote.variables.host.isRequired)
  }
})
