import t from 'tap'
import { createTestClient, createWalletClient, encodeFunctionData, erc20Abi, getAddress, http } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { mintUsdc } from '../core/devnet/fund.ts'
import { startDevnetBruno } from './fixtures/devnetBruno.ts'
import { RawMcpClient } from './fixtures/mcpHttp.ts'
import { signTransfer } from './fixtures/signedTransfer.ts'
import { waitFor } from './fixtures/waitFor.ts'

// Admission by standing (issue 13, ERC-7562 style): caps on active submissions per paying account
// and per client, a payer throttled then refused for submissions that failed by its own doing, and a
// payer refused at once after its payment reverted on chain. Small limits, so each is reached.

const bruno = await startDevnetBruno(t, {
  groups: ['bruno'],
  pollMs: 100,
  configure: (config) => {
    const [network] = config.networks
    const admission = { ...network!.relay.admission, account: { maxActive: 3, throttleAfter: 2, banAfter: 3 }, client: { maxActive: 4, throttleAfter: 100, banAfter: 100 }, windowSec: 600, banSec: 600 }
    return { ...config, networks: [{ ...network!, relay: { ...network!.relay, admission, failingHoldSec: 10 } }] }
  },
})
const { deployment } = bruno
const testClient = createTestClient({ mode: 'anvil', transport: http(deployment.rpcUrl) })
const mcp = new RawMcpClient(`${bruno.mcpUrl}/bruno`)
const payee = getAddress(bruno.config.networks[0]!.payee)
const usdc = { address: deployment.usdc, name: 'USD Coin', version: '2', chainId: deployment.chainId }

async function payer(usdcUnits = 5_000_000n) {
  const key = generatePrivateKey()
  const address = privateKeyToAccount(key).address
  await mintUsdc(deployment.rpcUrl, deployment, address, usdcUnits)
  const call = { to: deployment.usdc, data: encodeFunctionData({ abi: erc20Abi, functionName: 'balanceOf', args: [address] }) }
  const quote = await mcp.call('quote', { chain: 'local', call, token: 'USDC', payment: 'authorization' })
  const pay = async (value = BigInt(quote.amountBaseUnits)) => {
    const signed = await signTransfer(key, usdc, payee, value)
    return { token: deployment.usdc, authorization: signed.message, signature: signed.signature }
  }
  return { key, address, call, amount: BigInt(quote.amountBaseUnits), pay }
}

const submit = (call: unknown, payment: unknown, deadline?: number) => mcp.callTool('submit', { chain: 'local', call, payment, ...(deadline ? { deadline } : {}) })
const settled = (id: string) => waitFor(() => mcp.call('status', { id }), (view: any) => view.stage === 'done' || view.stage === 'failed', `${id} to settle`, 20_000)
const refusalsCounted = async (reason: string) => {
  const text = await (await fetch(`${bruno.server.url}/metrics`)).text()
  const line = text.split('\n').find((candidate) => candidate.startsWith(`bruno_admission_refusals_total{chain="local",reason="${reason}"}`))
  return line === undefined ? 0 : Number(line.split(' ').at(-1))
}

t.test('a paying account may have maxActive submissions active; the next is refused until one settles', async (t) => {
  const one = await payer()
  await testClient.setAutomine(false)
  t.teardown(() => testClient.setAutomine(true))
  const accepted = []
  for (let index = 0; index < 3; index++) {
    const result = await submit(one.call, await one.pay())
    t.notOk(result.isError, `submission ${index + 1} accepted`)
    accepted.push(result.structuredContent.id as string)
  }
  const fourth = await submit(one.call, await one.pay())
  t.equal(fourth.isError, true, 'the fourth is refused')
  t.equal(fourth.content[0].text, `refused: the account ${one.address} has 3 active submissions, the most it may have: wait for one to be done or failed`)
  t.equal(await refusalsCounted('account_busy'), 1, '/metrics counts the refusal')
  await testClient.setAutomine(true)
  // One transaction in flight per payer: each is mined before the next is sent.
  for (const id of accepted) {
    await waitFor(() => mcp.call('status', { id }), (view: any) => view.stage !== 'waiting', `${id} sent`, 20_000)
    t.equal((await settled(id)).stage, 'done')
  }
  t.notOk((await submit(one.call, await one.pay())).isError, 'accepted again once they settled')
})

t.test('a payer whose accepted submissions fail by its own doing is throttled, then refused for a while', async (t) => {
  const one = await payer(5_000_000n)
  // Two payments its balance covers only until the first payment is in: at the re-check they fail,
  // and each fails at its deadline, by the payer's doing. (The first is refunded what it did not cost,
  // about half: each of these needs all but a tenth or less of the first's payment.)
  await testClient.setAutomine(false)
  const first = await submit(one.call, await one.pay())
  const deadline = Math.floor(Date.now() / 1000) + 4
  const doomed = [await submit(one.call, await one.pay(5_000_000n - one.amount / 10n), deadline), await submit(one.call, await one.pay(5_000_000n - one.amount / 20n), deadline)]
  await testClient.setAutomine(true)
  await testClient.mine({ blocks: 1 })
  t.equal((await settled(first.structuredContent.id)).stage, 'done')
  for (const result of doomed) {
    const failed = await settled(result.structuredContent.id)
    t.equal(failed.stage, 'failed')
    // The payer holds less than its payment: said as the shortfall (issue 29, point 3), not the token's words.
    t.match(failed.reason, /^not sent before its deadline: waiting: the payer 0x[0-9a-fA-F]{40} holds [0-9.]+ USDC, less than the [0-9.]+ USDC its payment transfers \(payment\.authorization\.value\): fund it with USDC, or pay in another token$/)
  }

  // Throttled (throttleAfter 2): one active submission at most.
  await testClient.setAutomine(false)
  const only = await submit(one.call, await one.pay())
  t.notOk(only.isError, 'one active submission is allowed')
  const more = await submit(one.call, await one.pay())
  t.equal(more.isError, true)
  t.equal(
    more.content[0].text,
    `refused: the account ${one.address} has 1 active submission, the most it may have while throttled (2 recent failures of its own doing): wait for one to be done or failed`,
  )
  await testClient.setAutomine(true)
  await testClient.mine({ blocks: 1 })
  t.equal((await settled(only.structuredContent.id)).stage, 'done')

  // A third failure of its doing (banAfter 3): a call that needs an allowance the payer revokes
  // after the submission was accepted.
  const sink = privateKeyToAccount(generatePrivateKey()).address
  const wallet = createWalletClient({ account: one.address, transport: http(deployment.rpcUrl) })
  await testClient.impersonateAccount({ address: one.address })
  await testClient.setBalance({ address: one.address, value: 10n ** 18n })
  const approve = (amount: bigint) => wallet.writeContract({ chain: null, address: deployment.usdc, abi: erc20Abi, functionName: 'approve', args: [deployment.runner.contract, amount] })
  await approve(1n)
  const pull = { to: deployment.usdc, data: encodeFunctionData({ abi: erc20Abi, functionName: 'transferFrom', args: [one.address, sink, 1n] }) }
  await testClient.setAutomine(false)
  const revoked = await submit(pull, await one.pay(), Math.floor(Date.now() / 1000) + 4)
  t.notOk(revoked.isError, 'accepted while the allowance stands')
  await approve(0n)
  await testClient.setAutomine(true)
  await testClient.mine({ blocks: 1 })
  const third = await settled(revoked.structuredContent.id)
  t.equal(third.stage, 'failed')
  t.match(third.reason, /^not sent before its deadline: .*transfer amount exceeds allowance/)
  await testClient.stopImpersonatingAccount({ address: one.address })

  const refused = await submit(one.call, await one.pay())
  t.equal(refused.isError, true)
  t.match(refused.content[0].text, new RegExp(`^refused: the account ${one.address} is refused until \\d{4}-\\d\\d-\\d\\dT[0-9:.]+Z: 3 of its submissions failed by its own doing in the last 600 s`))
  const until = Date.parse(/until (\S+?Z):/.exec(refused.content[0].text)![1]!)
  t.ok(until > Date.now() + 590_000 && until <= Date.now() + 600_000, 'for banSec after the latest failure')
  t.ok((await refusalsCounted('account_banned')) >= 1, '/metrics counts the ban')
})

t.test('a client may have maxActive submissions active, whichever accounts pay', async (t) => {
  const payers = [await payer(), await payer(), await payer(), await payer(), await payer()]
  await testClient.setAutomine(false)
  t.teardown(() => testClient.setAutomine(true))
  const accepted: string[] = []
  for (const one of payers.slice(0, 4)) {
    const result = await submit(one.call, await one.pay())
    t.notOk(result.isError, `${one.address} accepted`)
    accepted.push(result.structuredContent.id)
  }
  const fifth = await submit(payers[4]!.call, await payers[4]!.pay())
  t.equal(fifth.isError, true)
  t.match(fifth.content[0].text, /^refused: the client \S+ has 4 active submissions, the most it may have: wait for one to be done or failed$/)
  t.equal(await refusalsCounted('client_busy'), 1)
  await testClient.setAutomine(true)
  await testClient.mine({ blocks: 1 })
  for (const id of accepted) t.equal((await settled(id)).stage, 'done')
})

t.test('submissions whose own call keeps failing fail after relay.failingHoldSec, not at their deadline, and count against their payer', async (t) => {
  const one = await payer()
  const sink = privateKeyToAccount(generatePrivateKey()).address
  const wallet = createWalletClient({ account: one.address, transport: http(deployment.rpcUrl) })
  await testClient.impersonateAccount({ address: one.address })
  t.teardown(() => testClient.stopImpersonatingAccount({ address: one.address }))
  await testClient.setBalance({ address: one.address, value: 10n ** 18n })
  const approve = (amount: bigint) => wallet.writeContract({ chain: null, address: deployment.usdc, abi: erc20Abi, functionName: 'approve', args: [deployment.runner.contract, amount] })
  await approve(1n)
  const pull = { to: deployment.usdc, data: encodeFunctionData({ abi: erc20Abi, functionName: 'transferFrom', args: [one.address, sink, 1n] }) }
  // A payment in flight first: the payer's next ones wait for it, and meanwhile the allowance goes.
  await testClient.setAutomine(false)
  const first = await submit(one.call, await one.pay())
  await waitFor(() => mcp.call('status', { id: first.structuredContent.id }), (view: any) => view.stage === 'sending', 'the first payment in flight', 20_000)
  const accepted = [await submit(pull, await one.pay()), await submit(pull, await one.pay())]
  for (const result of accepted) t.notOk(result.isError, 'accepted while the allowance stands, with the default deadline (600 s)')
  const acceptedAt = Date.now()
  await approve(0n)
  await testClient.setAutomine(true)
  await testClient.mine({ blocks: 1 })
  t.equal((await settled(first.structuredContent.id)).stage, 'done')
  for (const result of accepted) {
    const failed = await waitFor(() => mcp.call('status', { id: result.structuredContent.id }), (view: any) => view.stage === 'failed', 'the held submission to fail', 30_000)
    const heldMs = Date.now() - acceptedAt
    t.match(failed.reason, /^not sent: its payment or call kept failing for 10 s: .*transfer amount exceeds allowance/)
    t.ok(heldMs >= 10_000, `failed after ${heldMs} ms: no sooner than failingHoldSec`)
    t.ok(failed.deadline - Math.floor(Date.now() / 1000) > 500, 'long before its deadline')
  }
  // Two failures of its doing (throttleAfter 2): one active submission at most.
  await testClient.setAutomine(false)
  t.teardown(() => testClient.setAutomine(true))
  const only = await submit(one.call, await one.pay())
  t.notOk(only.isError, 'one active submission is allowed')
  const more = await submit(one.call, await one.pay())
  t.match(more.content[0].text, /while throttled \(2 recent failures of its own doing\)/, 'the second is refused: both failures counted')
  await testClient.setAutomine(true)
  await testClient.mine({ blocks: 1 })
  t.equal((await settled(only.structuredContent.id)).stage, 'done')
})
