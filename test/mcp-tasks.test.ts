import t from 'tap'
import { createPublicClient, createTestClient, encodeFunctionData, erc20Abi, getAddress, http, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client'
import { mintUsdc } from '../core/devnet/fund.ts'
import { startDevnetBruno } from './fixtures/devnetBruno.ts'
import { RawMcpClient, modernHeaders, modernMeta, postRaw } from './fixtures/mcpHttp.ts'
import { signTransfer } from './fixtures/signedTransfer.ts'
import { waitFor } from './fixtures/waitFor.ts'

// The Tasks extension (io.modelcontextprotocol/tasks) on `submit`: a client that declares it in a
// request's clientCapabilities gets a task whose id is the submission id, and follows it with
// tasks/get until it completes — with the final submission, or with isError and the reason. The
// official SDK v2 client has no runtime for the extension, so the declaring client is raw HTTP;
// the SDK stands for a client that does not declare it.

const TASKS = 'io.modelcontextprotocol/tasks'
const bruno = await startDevnetBruno(t, { groups: ['bruno', 'erc20'], pollMs: 100 })
const { deployment } = bruno
const chain = createPublicClient({ transport: http(deployment.rpcUrl) })
const testClient = createTestClient({ mode: 'anvil', transport: http(deployment.rpcUrl) })
const mcp = new RawMcpClient(`${bruno.mcpUrl}/bruno`)
const payee = getAddress(bruno.config.networks[0]!.payee)
const usdcDomain = { address: deployment.usdc, name: 'USD Coin', version: '2', chainId: deployment.chainId }
const pollMs = bruno.config.networks[0]!.runner.pollMs

/** A modern request from a client that declares the Tasks extension (or, with `declare` false, does not). */
function tasksRequest(method: string, params: Record<string, unknown>, name?: string, options: { declare?: boolean; path?: string } = {}) {
  const capabilities = options.declare === false ? {} : { extensions: { [TASKS]: {} } }
  return postRaw(
    `${bruno.mcpUrl}${options.path ?? '/bruno'}`,
    { jsonrpc: '2.0', id: 7, method, params: { ...params, _meta: modernMeta('2026-07-28', capabilities) } },
    modernHeaders(method, name),
  )
}

const getTask = (taskId: string) => tasksRequest('tasks/get', { taskId }, taskId)

/** A funded USDC-only account and a paid call for it: the call reads its balance, the fee is a signed transfer. */
async function paidCall() {
  const key = generatePrivateKey()
  const account = privateKeyToAccount(key).address
  await mintUsdc(deployment.rpcUrl, deployment, account, 5_000_000n)
  const call = { to: deployment.usdc, data: encodeFunctionData({ abi: erc20Abi, functionName: 'balanceOf', args: [account] }) }
  const quote = await mcp.call('quote', { chain: 'local', call, token: 'USDC', payment: 'authorization' })
  const fee = await signTransfer(key, usdcDomain, payee, BigInt(quote.amountBaseUnits))
  // A second payment of the same account's that its balance covers only until the first is in (the first is
  // refunded what it did not cost, about half of it: this one needs all but a tenth of it).
  const rest = await signTransfer(key, usdcDomain, payee, 5_000_000n - BigInt(quote.amountBaseUnits) / 10n)
  return {
    call,
    payment: { token: deployment.usdc, authorization: fee.message, signature: fee.signature },
    outrun: { token: deployment.usdc, authorization: rest.message, signature: rest.signature },
  }
}

/** tasks/get until the task leaves `working`; returns the last result. */
async function untilSettled(taskId: string) {
  const { json } = await waitFor(() => getTask(taskId), ({ json }) => json.result.status !== 'working', `task ${taskId} to leave working`, 30_000)
  return { result: json.result }
}

t.test('the extension is advertised in the modern era, where a task tool is served', async (t) => {
  const discover = (path: string) => tasksRequest('server/discover', {}, undefined, { path })
  t.same((await discover('/bruno')).json.result.capabilities.extensions, { [TASKS]: {}, 'io.modelcontextprotocol/ui': {} }, 'Tasks, beside MCP Apps (the status view)')
  t.equal((await discover('/erc20')).json.result.capabilities.extensions, undefined, 'no submit, no tasks')
  const initialized = await postRaw(`${bruno.mcpUrl}/bruno`, {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: { extensions: { [TASKS]: {} } }, clientInfo: { name: 't', version: '0' } },
  })
  t.equal(initialized.json.result.capabilities.extensions, undefined, 'the 2025 era has no extensions')
  t.equal(initialized.json.result.capabilities.tasks, undefined, 'nor the 2025-11-25 experimental tasks')
})

t.test('a client that does not declare the extension gets today\'s result (SDK v2)', async (t) => {
  const client = new ModernClient({ name: 'bruno-tests', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } })
  await client.connect(new ModernTransport(new URL(`${bruno.mcpUrl}/bruno`)))
  t.teardown(() => client.close())
  const { call, payment } = await paidCall()
  const result = await client.callTool({ name: 'submit', arguments: { chain: 'local', call, payment } })
  t.notOk(result.isError)
  const view = result.structuredContent as { id: string; stage: string; createdAt: number; updatedAt: number }
  t.equal(view.stage, 'waiting', 'the submission view, as before')
  t.equal((result as { taskId?: string }).taskId, undefined, 'no task')
  t.equal(view.updatedAt, view.createdAt, 'not changed since it was stored')

  const undeclared = await tasksRequest('tasks/get', { taskId: view.id }, view.id, { declare: false })
  t.equal(undeclared.status, 400, 'tasks/get without the extension')
  t.same(undeclared.json.error, { code: -32021, message: 'Missing required client capability', data: { requiredCapabilities: { extensions: { [TASKS]: {} } } } })

  const settled = await waitFor(() => mcp.call('status', { id: view.id }), (status) => status.stage === 'done' || status.stage === 'failed', `submission ${view.id} settled`, 30_000)
  t.equal(settled.stage, 'done', settled.reason)
})

t.test('submit as a task: working while the runner holds it, then completed or failed', async (t) => {
  const { call, payment, outrun } = await paidCall()
  // Blocks wait for us: the first submission stays sent and unmined while we look at it, and a
  // second payment by the same account, which its balance covers only until the first is in, can
  // then only revert, so it fails at its deadline.
  await testClient.setAutomine(false)
  t.teardown(() => testClient.setAutomine(true))
  const created = await tasksRequest('tools/call', { name: 'submit', arguments: { chain: 'local', call, payment } }, 'submit')
  t.equal(created.status, 200)
  const task = created.json.result
  t.equal(task.resultType, 'task', 'a CreateTaskResult')
  t.match(task.taskId, /^[0-9a-f-]{36}$/, 'an unguessable id')
  t.equal(task.status, 'working')
  t.equal(task.statusMessage, 'waiting to be sent', 'stored, not sent yet')
  t.equal(task.ttlMs, null, 'submissions are kept: no TTL')
  t.equal(task.pollIntervalMs, pollMs, 'poll as often as the runner looks')
  t.equal(new Date(task.createdAt).toISOString(), task.createdAt, 'ISO 8601 timestamps')
  t.equal(task.content, undefined, 'no CallToolResult fields')
  t.equal(task._meta['io.modelcontextprotocol/serverInfo'].name, 'bruno')

  const submission = await mcp.call('status', { id: task.taskId })
  t.equal(submission.id, task.taskId, 'the task id is the submission id')
  t.equal(new Date(submission.createdAt).toISOString(), task.createdAt)

  const sent = await waitFor(() => getTask(task.taskId), (answer) => /^sent as/.test(answer.json.result.statusMessage), `task ${task.taskId} sent`, 30_000)
  t.equal(sent.json.result.resultType, 'complete', 'tasks/get answers a complete result')
  t.equal(sent.json.result.status, 'working', 'sent, not mined: still working')
  t.match(sent.json.result.statusMessage, /^sent as 0x[0-9a-f]{64}, waiting for inclusion$/)
  t.equal(sent.json.result.result, undefined, 'no result while working')

  const deadline = Math.floor(Date.now() / 1000) + 3
  const doomed = await tasksRequest('tools/call', { name: 'submit', arguments: { chain: 'local', call, payment: outrun, deadline } }, 'submit')
  t.equal(doomed.json.result.resultType, 'task')
  await testClient.setAutomine(true)
  await testClient.mine({ blocks: 1 })

  const done = await untilSettled(task.taskId)
  t.equal(done.result.status, 'completed')
  t.equal(done.result.result.resultType, 'complete')
  t.notOk(done.result.result.isError)
  const final = done.result.result.structuredContent
  t.equal(final.stage, 'done')
  t.equal(final.id, task.taskId)
  t.same(JSON.parse(done.result.result.content[0].text), final, 'the text block holds the same JSON')
  t.equal((await chain.getTransactionReceipt({ hash: final.transaction.hash as Hex })).status, 'success')
  t.equal(done.result.statusMessage, `done in ${final.transaction.hash}`)
  t.equal(new Date(final.updatedAt).toISOString(), done.result.lastUpdatedAt, 'lastUpdatedAt is the submission\'s last change')

  const failed = await untilSettled(doomed.json.result.taskId)
  t.equal(failed.result.status, 'completed', 'a relay failure is a tool result, not a JSON-RPC error')
  t.equal(failed.result.result.isError, true)
  t.equal(failed.result.result.structuredContent, undefined)
  t.match(failed.result.result.content[0].text, new RegExp(`^submission ${doomed.json.result.taskId} failed: not sent before its deadline`))
  t.match(failed.result.statusMessage, /^failed: not sent before its deadline/)

  const resource = await mcp.request('resources/read', { uri: `bruno://local/submissions/${task.taskId}` }, `bruno://local/submissions/${task.taskId}`)
  t.same(JSON.parse(resource.json.result.contents[0].text), final, 'the submission resource is the status view')
  t.equal(resource.json.result.ttlMs, 0, 'a submission is never fresh')
  t.equal(resource.json.result.cacheScope, 'private')
  const otherChain = await mcp.request('resources/read', { uri: `bruno://base/submissions/${task.taskId}` }, `bruno://base/submissions/${task.taskId}`)
  t.equal(otherChain.json.error.code, -32602, 'an id under another chain names nothing')
})

t.test('tasks/get, tasks/update, tasks/cancel refusals and acknowledgements', async (t) => {
  const unknown = await getTask('no-such-task')
  t.equal(unknown.status, 200)
  t.same(unknown.json.error, { code: -32602, message: 'Failed to retrieve task: Task not found' })
  t.equal((await tasksRequest('tasks/get', {}, '')).json.error.code, -32602, 'no taskId')

  const { call, payment } = await paidCall()
  const created = await tasksRequest('tools/call', { name: 'submit', arguments: { chain: 'local', call, payment } }, 'submit')
  const { taskId } = created.json.result
  for (const method of ['tasks/update', 'tasks/cancel']) {
    const ack = await tasksRequest(method, { taskId, inputResponses: {} }, taskId)
    t.same(Object.keys(ack.json.result).sort(), ['_meta', 'resultType'], `${method}: an empty acknowledgement`)
    t.equal((await tasksRequest(method, { taskId: 'no-such-task' }, 'no-such-task')).json.error.code, -32602, `${method}: unknown task`)
  }
  const settled = await untilSettled(taskId)
  t.equal(settled.result.result.structuredContent.stage, 'done', 'cancel is acknowledged, not honoured: a held submission is sent')

  const mismatch = await tasksRequest('tasks/get', { taskId }, 'another-task')
  t.equal(mismatch.status, 400, 'Mcp-Name must be the taskId')
  t.equal(mismatch.json.error.code, -32020)
  const legacy = await postRaw(`${bruno.mcpUrl}/bruno`, { jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { taskId } }, { 'mcp-protocol-version': '2025-11-25' })
  t.equal(legacy.json.error.code, -32601, 'the 2025 era has no tasks/get')
  const noTaskTool = await tasksRequest('tasks/get', { taskId }, taskId, { path: '/erc20' })
  t.equal(noTaskTool.status, 404, 'a path without submit has no tasks/get')
  t.equal(noTaskTool.json.error.code, -32601)

  // A payment whose signature no longer matches its transfer (another nonce): refused at submit.
  const forged = { ...payment, authorization: { ...payment.authorization, nonce: `0x${'42'.repeat(32)}` } }
  const refused = await tasksRequest('tools/call', { name: 'submit', arguments: { chain: 'local', call, payment: forged } }, 'submit')
  t.equal(refused.json.result.resultType, 'complete', 'a refused submit creates no task')
  t.equal(refused.json.result.isError, true)
})
