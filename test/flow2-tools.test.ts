import t from 'tap'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { createPublicClient, createTestClient, erc20Abi, getAddress, http, type Address } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { devnetChain } from '../core/devnet/chain.ts'
import { mintUsdc } from '../core/devnet/fund.ts'
import { startDevnetBruno } from './fixtures/devnetBruno.ts'
import { waitFor } from './fixtures/waitFor.ts'

// Flow 2 from the tools alone, over the official SDK v2 client: an account holding only USDC pays a
// friend with a gasless transfer (transfer_authorization → quote its quoteCall → payment_authorization
// → the wallet signs both → transfer_authorization_call → submit → status). The test builds no
// calldata: every call and typed data comes from a tool.

const bruno = await startDevnetBruno(t, { groups: ['bruno', '3009', 'erc20'] })
const { deployment } = bruno
const client = createPublicClient({ chain: devnetChain(deployment.chainId), transport: http(deployment.rpcUrl) })
const payee = getAddress(bruno.config.networks[0]!.payee)
const usdcOf = (address: Address) => client.readContract({ address: deployment.usdc, abi: erc20Abi, functionName: 'balanceOf', args: [address] })

const agent = new Client({ name: 'bruno-agent-test', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } })
await agent.connect(new StreamableHTTPClientTransport(new URL(`${bruno.mcpUrl}/bruno,3009,erc20`)))
t.teardown(() => agent.close())

async function call(name: string, args: Record<string, unknown>) {
  return agent.callTool({ name, arguments: args })
}

/** Calls a tool as an agent does; a refusal fails the test with its text. */
async function use(name: string, args: Record<string, unknown>): Promise<any> {
  const result = await call(name, args)
  if (result.isError) throw new Error(`${name} refused: ${(result.content as { text: string }[])[0]!.text}`)
  return result.structuredContent
}

async function untilSettled(id: string): Promise<any> {
  return waitFor(() => use('status', { id }), (status: any) => status.stage === 'done' || status.stage === 'failed', `submission ${id} settled`, 30_000)
}

t.test('the 3009 group lists its tools, each with an output schema', async (t) => {
  const { tools } = await agent.listTools()
  const own = tools.filter((tool) => ['payment_authorization', 'transfer_authorization', 'transfer_authorization_call'].includes(tool.name))
  t.same(own.map((tool) => tool.name), ['payment_authorization', 'transfer_authorization', 'transfer_authorization_call'])
  for (const tool of own) t.equal(tool.outputSchema?.type, 'object', `${tool.name} declares an outputSchema`)
})

t.test('flow 2 from the tools: a USDC-only account pays a friend 2 USDC', async (t) => {
  const payer = privateKeyToAccount(generatePrivateKey())
  const friend = privateKeyToAccount(generatePrivateKey()).address
  const minted = 5_000_000n
  await mintUsdc(deployment.rpcUrl, deployment, payer.address, minted)
  t.equal(await client.getBalance({ address: payer.address }), 0n, 'the payer holds no ETH')

  const transfer = await use('transfer_authorization', { chain: 'local', from: payer.address, to: friend, token: 'USDC', amount: '2' })
  t.equal(transfer.amountBaseUnits, '2000000')
  t.same(
    { from: transfer.typedData.message.from, to: transfer.typedData.message.to, value: transfer.typedData.message.value },
    { from: payer.address, to: friend, value: '2000000' },
    'the typed data moves 2 USDC from the payer to the friend',
  )
  t.equal(getAddress(transfer.quoteCall.to), getAddress(deployment.usdc), 'the quote call goes to the token')

  const quote = await use('quote', { chain: 'local', call: transfer.quoteCall, token: 'USDC', payment: 'authorization' })
  const prepared = await use('payment_authorization', { chain: 'local', from: payer.address, token: 'USDC', amount: quote.amount })
  t.equal(prepared.typedData.message.to, payee, 'the payment goes to Bruno\'s payee')

  // The wallet: the payer's own key signs both typed data exactly as they came.
  const transferSignature = await payer.signTypedData(transfer.typedData)
  const paymentSignature = await payer.signTypedData(prepared.typedData)

  const wrongSigner = await call('transfer_authorization_call', {
    chain: 'local',
    typedData: transfer.typedData,
    signature: await privateKeyToAccount(generatePrivateKey()).signTypedData(transfer.typedData),
  })
  t.equal(wrongSigner.isError, true, 'a signature by another key is refused')
  t.match((wrongSigner.content as { text: string }[])[0]!.text, /not by the sender/)

  const encoded = await use('transfer_authorization_call', { chain: 'local', typedData: transfer.typedData, signature: transferSignature })
  t.equal(encoded.call.data.length, transfer.quoteCall.data.length, 'the quoted call has the signed call\'s size')

  // What quote measured from the Runner, beside the signed call: only the balance writes differ.
  const runner = getAddress(bruno.config.networks[0]!.runner.contract)
  const [standIn, signed] = await Promise.all([
    client.estimateGas({ account: runner, to: transfer.quoteCall.to, data: transfer.quoteCall.data }),
    client.estimateGas({ account: runner, to: encoded.call.to, data: encoded.call.data }),
  ])
  t.ok(signed - standIn <= 25_000n, `the quote call's gas (${standIn}) is within 25,000 of the signed call's (${signed})`)

  const payeeBefore = await usdcOf(payee)
  const accepted = await use('submit', { chain: 'local', call: encoded.call, payment: { ...prepared.payment, signature: paymentSignature } })
  const status = await untilSettled(accepted.id)
  t.equal(status.stage, 'done', status.reason)
  t.equal(status.outcome.callSucceeded, true, 'the transfer to the friend ran')
  t.equal(status.outcome.paidBaseUnits, quote.amountBaseUnits, 'the payee was paid the quoted amount')
  t.ok(BigInt(status.transaction.gasUsed) <= BigInt(quote.gas), `the quote's gas (${quote.gas}) covered what the signed call used (${status.transaction.gasUsed})`)
  t.equal(await usdcOf(friend), 2_000_000n, 'the friend got exactly 2 USDC')
  t.equal(minted - (await usdcOf(payer.address)), 2_000_000n + BigInt(status.outcome.chargedBaseUnits), 'the payer paid exactly 2 USDC and the charge: the rest of the quote came back')
  t.equal((await usdcOf(payee)) - payeeBefore, BigInt(status.outcome.chargedBaseUnits))
  t.equal(await client.getBalance({ address: payer.address }), 0n, 'the payer never held ETH')

  const again = await call('transfer_authorization_call', { chain: 'local', typedData: transfer.typedData, signature: transferSignature })
  t.equal(again.isError, true, 'a used transfer is refused')
  t.match((again.content as { text: string }[])[0]!.text, /already used/)
})

t.test('transfer_authorization takes the least validity payment_authorization takes: a call that expires first would fail and still pay', async (t) => {
  const from = privateKeyToAccount(generatePrivateKey()).address
  const friend = privateKeyToAccount(generatePrivateKey()).address
  const { tools } = await agent.listTools()
  const minimum = (name: string) => (tools.find((tool) => tool.name === name)!.inputSchema.properties as Record<string, { minimum?: number }>).validForSec!.minimum
  t.equal(minimum('transfer_authorization'), 61, 'more than the 60 s submit needs')
  t.equal(minimum('transfer_authorization'), minimum('payment_authorization'), 'the same least as the payment\'s')
  for (const validForSec of [10, 60]) {
    const refused = await call('transfer_authorization', { chain: 'local', from, to: friend, token: 'USDC', amount: '1', validForSec })
    t.equal(refused.isError, true, `validForSec ${validForSec}: refused`)
    t.match((refused.content as { text: string }[])[0]!.text, /validForSec.*61/, 'naming the field and the least it takes')
  }
  const prepared = await use('transfer_authorization', { chain: 'local', from, to: friend, token: 'USDC', amount: '1', validForSec: 61 })
  t.ok(BigInt(prepared.typedData.message.validBefore) >= BigInt(Math.floor(Date.now() / 1000) + 60), 'validForSec 61: typed data valid 61 s')
})

t.test('erc20_transfer\'s call in flow 2 is refused: it runs from Bruno\'s Runner contract', async (t) => {
  const payer = privateKeyToAccount(generatePrivateKey())
  const friend = privateKeyToAccount(generatePrivateKey()).address
  await mintUsdc(deployment.rpcUrl, deployment, payer.address, 5_000_000n)
  const helper = await use('erc20_transfer', { chain: 'local', token: 'USDC', to: friend, amount: '2' })
  const { to, data } = helper.calls[0]
  const refused = await call('quote', { chain: 'local', call: { to, data }, token: 'USDC', payment: 'authorization' })
  t.equal(refused.isError, true)
  const text = (refused.content as { text: string }[])[0]!.text
  t.match(text, /from Bruno's Runner contract/, text)
  t.match(text, /only calls that act by signature belong there/)
  t.equal(await usdcOf(friend), 0n)
})

// Issue 43, point 11: a delegated account was refused as a signed-transfer payer only at submit,
// after its wallet had signed the call and the payment. payment_authorization asks the relay first.
t.test('payment_authorization refuses a payer with code before anything is signed, in submit\'s words', async (t) => {
  const delegated = privateKeyToAccount(generatePrivateKey()).address
  await createTestClient({ chain: devnetChain(deployment.chainId), mode: 'anvil', transport: http(deployment.rpcUrl) }).setCode({ address: delegated, bytecode: `0xef0100${'11'.repeat(20)}` })
  const refused = await call('payment_authorization', { chain: 'local', from: delegated, token: 'USDC', amount: '1' })
  t.equal(refused.isError, true)
  t.equal(
    (refused.content as { text: string }[])[0]!.text,
    `from ${delegated} cannot pay by signed transfer: the payer ${delegated} has code (a contract, or an account delegated by EIP-7702) that is not on the Runner's list of wallets that may pay by signed transfer: the token would run it inside the payment. A signed EIP-3009 transfer must come from a plain account or a listed wallet; a delegated account pays with a delegate batch (no delegate group is enabled on this server)`,
  )
  t.notOk((await call('payment_authorization', { chain: 'local', from: privateKeyToAccount(generatePrivateKey()).address, token: 'USDC', amount: '1' })).isError, 'a plain account is prepared as before')
})
