import t, { type Test } from 'tap'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { createPublicClient, createTestClient, createWalletClient, decodeFunctionData, encodeFunctionData, erc20Abi, formatUnits, getAddress, http, keccak256, type Address, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import { devnetChain } from '../core/devnet/chain.ts'
import { runnerAbi } from '../contracts/abi.ts'
import { mintUsdc } from '../core/devnet/fund.ts'
import { encodeTransfer } from '../core/chain/erc20Calls.ts'
import { delegationManagerAbi } from '../plugins/metamask/abi.ts'
import { metaMaskContracts, paymentFirstEnforcer } from '../plugins/metamask/contracts.ts'
import { chargedAtCost, startDevnetBruno } from './fixtures/devnetBruno.ts'
import { signTransfer } from './fixtures/signedTransfer.ts'
import { connectAgent } from './fixtures/agent.ts'
import { waitFor } from './fixtures/waitFor.ts'

// Issue 31: MetaMask's EIP7702StatelessDeleGator v1.3.0 as a built-in group, its flows as an agent
// runs them with the official SDK v2 client: metamask_batch → the wallet signs the one Delegation as
// it came → metamask_execute → submit → status until done. The devnet holds MetaMask's contracts at
// their addresses, from @metamask/delegation-abis bytecode; the runner ledger is checked at teardown.

const bruno = await startDevnetBruno(t, { groups: ['bruno', 'metamask', '3009', 'erc20', 'uniswap'] })
const { deployment } = bruno
const chain = devnetChain(deployment.chainId)
const transport = http(deployment.rpcUrl)
const client = createPublicClient({ chain, transport, pollingInterval: 50 })
const payee = getAddress(bruno.config.networks[0]!.payee)
const usdc = deployment.usdc
const runner = deployment.runner.operator.address
const sponsor = createWalletClient({ account: privateKeyToAccount(deployment.deployer.privateKey), chain, transport })
const delegatedCode = `0xef0100${metaMaskContracts.delegator.slice(2).toLowerCase()}`
const usdcOf = (address: Address) => client.readContract({ address: usdc, abi: erc20Abi, functionName: 'balanceOf', args: [address] })

const { agent, use, refusal, untilSettled, submitBy } = await connectAgent(t, `${bruno.mcpUrl}/bruno,metamask,3009,erc20,uniswap`, bruno.server.url)

async function delegate(account: PrivateKeyAccount): Promise<void> {
  const authorization = await sponsor.signAuthorization({ account, contractAddress: metaMaskContracts.delegator })
  const receipt = await client.waitForTransactionReceipt({ hash: await sponsor.sendTransaction({ to: sponsor.account.address, authorizationList: [authorization] }) })
  if (receipt.status !== 'success') throw new Error('delegation reverted')
}

// The wallet signs the typed data exactly as the tool returned it (JSON, the salt a decimal string).
const sign = (account: PrivateKeyAccount, typedData: unknown) => account.signTypedData(typedData as never)

/** Runs a prepared delegation to done; returns the runner's receipt. */
async function relay(t: Test, account: PrivateKeyAccount, batch: any, authorizationList?: unknown) {
  const executed = await use('metamask_execute', { chain: 'local', typedData: batch.typedData, batches: batch.batches, signature: await sign(account, batch.typedData), ...(authorizationList ? { authorizationList } : {}) })
  t.equal(executed.call.to, metaMaskContracts.delegationManager, 'the Runner redeems through the DelegationManager')
  t.same({ token: executed.payment.token, amountBaseUnits: executed.payment.amountBaseUnits }, { token: usdc, amountBaseUnits: batch.payment.amountBaseUnits }, 'the payment is the delegation\'s payment batch')
  t.match(executed.payment.batch, /^0xcef6d209/, 'the payment is a redeemDelegations too')
  // quote prices the exact redemptions as submit will: no more than metamask_batch priced them.
  const quote = await use('quote', { chain: 'local', call: executed.call, paymentBatch: executed.payment.batch, token: 'USDC', payment: 'batch', ...(authorizationList ? { authorizationList } : {}) })
  t.ok(BigInt(quote.amountBaseUnits) <= BigInt(batch.payment.amountBaseUnits), `quote's ${quote.amountBaseUnits} ≤ the delegation's ${batch.payment.amountBaseUnits}`)
  const accepted = await use('submit', { chain: 'local', call: executed.call, payment: executed.payment, ...(authorizationList ? { authorizationList } : {}) })
  const status = await untilSettled(accepted.id)
  t.equal(status.stage, 'done', status.reason)
  t.equal(status.outcome.callSucceeded, true, 'the calls ran')
  t.equal(status.outcome.paidBaseUnits, batch.payment.amountBaseUnits, 'the payee received the payment batch\'s transfer')
  const receipt = await client.getTransactionReceipt({ hash: status.transaction.hash })
  const signed = await client.getTransaction({ hash: status.transaction.hash })
  t.ok(BigInt(batch.gas.estimated) >= signed.gas, `the estimate ${batch.gas.estimated} covers the signed limit ${signed.gas}`)
  t.comment(`gas: estimated ${batch.gas.estimated} (owner path ${batch.gas.ownerPath}), signed limit ${signed.gas}, used ${receipt.gasUsed}; paid ${batch.payment.amount} USDC`)
  return { receipt, executed, status }
}

t.test('the metamask group: its two tools, after the bruno group; account names the delegate', async (t) => {
  const { tools } = await agent.listTools()
  const names = tools.map((tool) => tool.name)
  t.same(names.slice(0, 6), ['account', 'quote', 'submit', 'status', 'metamask_batch', 'metamask_execute'])
  const owner = privateKeyToAccount(deployment.demoAccounts[2]!.privateKey)
  await delegate(owner)
  const seen = await use('account', { chain: 'local', address: owner.address })
  t.match(seen, { delegated: true, delegate: metaMaskContracts.delegator, delegateName: 'MetaMask' })
  t.notOk('delegateNonce' in seen, 'a delegation is single-use by its salt: no sequential nonce')
})

let done: { batch: any; signature: `0x${string}`; executed: any; account: PrivateKeyAccount } | undefined

t.test('flow 1: a delegated account runs a builder\'s call, paying in USDC, with one signature', async (t) => {
  const owner = privateKeyToAccount(deployment.demoAccounts[0]!.privateKey)
  await delegate(owner)
  t.equal(await client.getCode({ address: owner.address }), delegatedCode)
  const friend = privateKeyToAccount(generatePrivateKey()).address
  // A builder MCP's transactionRequest, as it would hand it over: its gas fields are ignored.
  const builderCall = {
    to: usdc,
    value: '0x0',
    data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [friend, 2_000_000n] }),
    from: owner.address,
    gasLimit: '0x5208',
    chainId: deployment.chainId,
  }
  const batch = await use('metamask_batch', { chain: 'local', account: owner.address, calls: [builderCall], token: 'USDC' })
  t.match(batch.typedData, { domain: { name: 'DelegationManager', version: '1', chainId: deployment.chainId, verifyingContract: metaMaskContracts.delegationManager }, primaryType: 'Delegation' })
  t.equal(batch.typedData.message.delegate, deployment.runner.contract, 'only the Runner may redeem it')
  t.equal(batch.typedData.message.delegator, owner.address)
  t.same(batch.typedData.message.caveats.map((caveat: any) => caveat.enforcer), [paymentFirstEnforcer], 'one caveat: Bruno\'s enforcer, the batches\' hashes and the deadline')
  t.same(batch.calls, [{ to: usdc, value: '0', data: builderCall.data }], 'the builder\'s extra fields are dropped')
  t.match(batch.summary, /One delegation to Bruno's Runner, redeemed twice/)
  const before = { owner: await usdcOf(owner.address), payee: await usdcOf(payee), runner: await client.getBalance({ address: runner }) }
  const signature = await sign(owner, batch.typedData)
  const { receipt, executed, status } = await relay(t, owner, batch)
  const charged = BigInt(status.outcome.chargedBaseUnits)
  t.equal(await usdcOf(friend), 2_000_000n, 'the friend got exactly 2 USDC')
  t.equal(before.owner - (await usdcOf(owner.address)), 2_000_000n + charged, 'the account paid 2 USDC and the charge: the rest of the payment came back')
  t.equal((await usdcOf(payee)) - before.payee, charged, 'the payee kept the charge')
  t.equal(before.runner - (await client.getBalance({ address: runner })), receipt.gasUsed * receipt.effectiveGasPrice, 'the runner spent only the gas')
  // What metamask_batch expected before signing errs high, as calibur_batch's (SPEC §6), never low.
  const expected = BigInt(batch.payment.expectedChargeBaseUnits)
  t.ok(charged <= expected && expected * 10n <= charged * 12n, `charged ${charged}, expected ${expected} before signing: not below, at most a fifth above`)
  t.comment(`MetaMask, one USDC transfer: ${receipt.gasUsed} gas; paid ${batch.payment.amount} USDC, charged ${formatUnits(charged, 6)}`)
  await chargedAtCost(t, bruno, receipt.transactionHash, 'MetaMask, flow 1')
  done = { batch, signature, executed, account: owner }
})

t.test('flow 3: a USDC-only account with no ETH, delegated in the same transaction, swaps USDC to ETH', async (t) => {
  const account = privateKeyToAccount(generatePrivateKey())
  await mintUsdc(deployment.rpcUrl, deployment, account.address, 50_000_000n)
  t.equal(await client.getBalance({ address: account.address }), 0n, 'no ETH')
  t.match(await refusal('metamask_batch', { chain: 'local', account: account.address, calls: [encodeTransfer({ token: usdc, to: payee, amount: 1n })], token: 'USDC' }), /has no code: it is not delegated to MetaMask .*authorizationList to metamask_batch, metamask_execute and submit/)
  const signed = await account.signAuthorization({ contractAddress: metaMaskContracts.delegator, chainId: deployment.chainId, nonce: 0 })
  const authorizationList = [{ chainId: signed.chainId, address: signed.address, nonce: signed.nonce, r: signed.r, s: signed.s, yParity: signed.yParity! }]
  const swap = await use('uniswap_swap_to_eth', { chain: 'local', token: 'USDC', amount: '10', recipient: account.address })
  const batch = await use('metamask_batch', { chain: 'local', account: account.address, calls: swap.calls, approvals: swap.approvals, token: 'USDC', authorizationList })
  t.same(batch.approvalsAdded, swap.approvals, 'the router had no allowance: approve added')
  t.equal(batch.calls.length, 2, 'approve, swap')
  t.same(batch.authorizationList, authorizationList)
  t.match(batch.summary, /delegated to MetaMask's delegator in the same transaction/)
  const { status } = await relay(t, account, batch, authorizationList)
  t.equal(await client.getCode({ address: account.address }), delegatedCode, 'delegated by the runner\'s transaction')
  const eth = await client.getBalance({ address: account.address })
  t.ok(eth >= BigInt(swap.minimumOut.wei), `the account got ${formatUnits(eth, 18)} ETH, at least the minimum ${swap.minimumOut.eth}`)
  t.equal(await usdcOf(account.address), 50_000_000n - 10_000_000n - BigInt(status.outcome.chargedBaseUnits))
})

t.test('refusals and replays: nothing more reaches the runner', async (t) => {
  if (!done) throw new Error('flow 1 did not run')
  const owner = privateKeyToAccount(deployment.demoAccounts[1]!.privateKey)
  await delegate(owner)
  const nonceBefore = await client.getTransactionCount({ address: runner })
  const transfer = encodeTransfer({ token: usdc, to: done.account.address, amount: 1_000_000n })
  const batch = await use('metamask_batch', { chain: 'local', account: owner.address, calls: [transfer], token: 'USDC' })
  const signature = await sign(owner, batch.typedData)
  const execute = (typedData: unknown, signature: string, batches = batch.batches) => refusal('metamask_execute', { chain: 'local', typedData, signature, batches })

  t.match(await execute(batch.typedData, `0x${'00'.repeat(64)}1b`), /bad signature|recovers to/)
  t.match(await execute(batch.typedData, await sign(done.account, batch.typedData)), new RegExp(`recovers to ${done.account.address}, not the account`))
  // The payment changed after signing: the signature no longer recovers to the account.
  const cheaper = structuredClone(batch.typedData)
  cheaper.message.salt = (BigInt(cheaper.message.salt) + 1n).toString()
  t.match(await execute(cheaper, signature), /not the account/)
  // Another redeemer, or no caveat: not a payment-first delegation.
  const otherRedeemer = structuredClone(batch.typedData)
  otherRedeemer.message.delegate = done.account.address
  t.match(await execute(otherRedeemer, await sign(owner, otherRedeemer)), /not a payment-first delegation to Bruno: it delegates to 0x[0-9a-fA-F]{40}, not to Bruno's Runner/)
  const noCaveat = structuredClone(batch.typedData)
  noCaveat.message.caveats = []
  t.match(await execute(noCaveat, await sign(owner, noCaveat)), /its caveats are not the one payment-first caveat \(Bruno's enforcer 0x[0-9a-fA-F]{40}\)/)
  // The batches beside it are not what it signs: another account's, swapped, or not batches at all.
  t.match(await execute(batch.typedData, signature, done.batch.batches), /batches are not what the delegation pins: the (payment batch is not the one|calls are not the ones) the delegation pins/)
  t.match(await execute(batch.typedData, signature, '0x1234'), /batches does not decode as two ERC-7579 batches/)
  // The done delegation of flow 1, again: its redemptions are counted on chain.
  t.match(await execute(done.batch.typedData, done.signature, done.batch.batches), /was redeemed already \(2 times\)/)
  // Its submit again is the same submission (idempotent), not a second payment.
  const again = await use('submit', { chain: 'local', call: done.executed.call, payment: done.executed.payment })
  t.equal(again.stage, 'done', 'the done submission answers')
  // The call with the payment of another delegation: refused before anything is sent.
  const executed = await use('metamask_execute', { chain: 'local', typedData: batch.typedData, batches: batch.batches, signature })
  t.match(await refusal('submit', { chain: 'local', call: executed.call, payment: done.executed.payment }), /the payment and the call redeem different delegations/)
  // The payment redemption as the call, and the call as its own payment.
  t.match(await refusal('submit', { chain: 'local', call: { to: metaMaskContracts.delegationManager, data: executed.payment.batch }, payment: executed.payment }), /the redemptions do not run what the delegation pins: the calls are not the ones the delegation pins/)
  t.match(await refusal('submit', { chain: 'local', call: executed.call, payment: { ...executed.payment, batch: executed.call.data } }), /the redemptions do not run what the delegation pins: the payment batch is not the one the delegation pins/)
  // A batch that cannot run: refused with the token's reason before anything is signed.
  const tooMuch = encodeTransfer({ token: usdc, to: done.account.address, amount: 10n ** 15n })
  t.match(await refusal('metamask_batch', { chain: 'local', account: owner.address, calls: [tooMuch], token: 'USDC' }), /the batch would fail: .*exceeds balance/)
  t.match(await refusal('metamask_batch', { chain: 'local', account: owner.address, calls: [transfer], token: 'USDC', deadline: 1 }), /has passed/)
  t.equal(await client.getTransactionCount({ address: runner }), nonceBefore, 'the runner sent nothing')

  // The good one still goes through.
  const accepted = await use('submit', { chain: 'local', call: executed.call, payment: executed.payment })
  t.equal((await untilSettled(accepted.id)).stage, 'done')
})

/** The arguments of a `redeemDelegations` call: its contexts, modes and batches. */
const redemptionArgs = (data: Hex) => {
  const decoded = decodeFunctionData({ abi: delegationManagerAbi, data })
  if (decoded.functionName !== 'redeemDelegations') throw new Error('not a redemption')
  return decoded.args
}
const redeemAll = (...datas: Hex[]) => {
  const parts = datas.map(redemptionArgs)
  const args = [parts.flatMap((part) => part[0]), parts.flatMap((part) => part[1]), parts.flatMap((part) => part[2])] as const
  return encodeFunctionData({ abi: delegationManagerAbi, functionName: 'redeemDelegations', args: args as never })
}

/** A fresh account holding 20 USDC and no ETH, delegated to MetaMask's delegator. */
async function delegatedAccount(): Promise<PrivateKeyAccount> {
  const account = privateKeyToAccount(generatePrivateKey())
  await mintUsdc(deployment.rpcUrl, deployment, account.address, 20_000_000n)
  await delegate(account)
  return account
}

// Issue 43, points 2 and 3: the Runner is every payment-first delegation's only redeemer, so a
// client holding another account's signed delegation (it saw metamask_execute's result) can only
// reach it through Bruno. Before: a redemption of both groups in one call was not read as the
// account's (two contexts), landed first, and voided the account's own relay, which was then blamed;
// two redemptions of the calls group passed the shared LimitedCallsEnforcer (1, then 2 ≤ 2) and
// paid a friend twice for one signed transfer, the account's payment never made.
t.test('a hostile client holding an account\'s signed delegation cannot run it, or void its payment', async (t) => {
  const victim = await delegatedAccount()
  const friend = privateKeyToAccount(generatePrivateKey()).address
  const batch = await use('metamask_batch', { chain: 'local', account: victim.address, calls: [encodeTransfer({ token: usdc, to: friend, amount: 1_000_000n })], token: 'USDC' })
  const executed = await use('metamask_execute', { chain: 'local', typedData: batch.typedData, batches: batch.batches, signature: await sign(victim, batch.typedData) })
  const hostileKey = generatePrivateKey()
  await mintUsdc(deployment.rpcUrl, deployment, privateKeyToAccount(hostileKey).address, 20_000_000n)
  const hostilePayment = async () => {
    const signed = await signTransfer(hostileKey, { address: usdc, name: 'USD Coin', version: '2', chainId: deployment.chainId }, payee, 2_000_000n)
    return { token: usdc, authorization: signed.message, signature: signed.signature }
  }
  const hostile = new Client({ name: 'hostile', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } })
  await hostile.connect(new StreamableHTTPClientTransport(new URL(`${bruno.mcpUrl}/bruno`)))
  t.teardown(() => hostile.close())
  const refusedTo = async (name: string, args: Record<string, unknown>) => {
    const result = await hostile.callTool({ name, arguments: { chain: 'local', ...args } })
    t.equal(result.isError, true, `${name} refused`)
    return (result.content as { text: string }[])[0]!.text
  }
  const rest = async (path: string, body: unknown) => {
    const response = await fetch(`${bruno.server.url}/local/v1/${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
    return { status: response.status, json: (await response.json()) as { error: { code: string; message: string } } }
  }
  const runnerNonce = await client.getTransactionCount({ address: runner })
  const manager = metaMaskContracts.delegationManager
  const bothGroups = { to: manager, data: redeemAll(executed.payment.batch, executed.call.data) }
  const callsTwice = { to: manager, data: redeemAll(executed.call.data, executed.call.data) }
  const notOne = /refused: the call goes to MetaMask's DelegationManager but is not one payment-first redemption \(it redeems 2 delegation chains, not 1\)/
  for (const call of [bothGroups, callsTwice]) {
    t.match(await refusedTo('submit', { call, payment: await hostilePayment() }), notOne, 'over MCP, paid by the hostile client\'s own signed transfer')
    t.match(await refusedTo('submit', { call, payment: executed.payment }), notOne, 'over MCP, with the account\'s own payment batch')
    t.match(await refusedTo('quote', { call, token: 'USDC', payment: 'authorization' }), notOne, 'quote refuses it before anything is signed')
    const overRest = await rest('submit', { call, payment: await hostilePayment() })
    t.equal(overRest.status, 422)
    t.match(overRest.json.error.message, notOne, 'over REST')
  }
  // The calls alone, paid by anything but their own payment batch: on chain they would fail unpaid-for (the
  // enforcer runs them only after their payment), and that failure would be charged to someone else.
  const unpaid = /a MetaMask delegation's calls run only after its own payment batch, in the same relay: pay with the payment metamask_execute returned/
  t.match(await refusedTo('submit', { call: executed.call, payment: await hostilePayment() }), unpaid)
  t.match(await refusedTo('quote', { call: executed.call, token: 'USDC', payment: 'authorization' }), unpaid)
  t.match((await rest('submit', { call: executed.call, payment: await hostilePayment() })).json.error.message, unpaid)
  t.equal(await client.getTransactionCount({ address: runner }), runnerNonce, 'the runner sent nothing')

  // The account's own relay runs, once, with its payment; it is not refused afterwards.
  const before = await usdcOf(victim.address)
  const accepted = await use('submit', { chain: 'local', call: executed.call, payment: executed.payment })
  const status = await untilSettled(accepted.id)
  t.equal(status.stage, 'done', status.reason)
  t.equal(await usdcOf(friend), 1_000_000n, 'the friend got the one signed transfer, once')
  t.equal(before - (await usdcOf(victim.address)), 1_000_000n + BigInt(status.outcome.chargedBaseUnits), 'the account paid its transfer and the charge')
  const next = await use('metamask_batch', { chain: 'local', account: victim.address, calls: [encodeTransfer({ token: usdc, to: friend, amount: 1n })], token: 'USDC' })
  t.ok(next.typedData, 'the account may relay again')
})

// Issue 43, point 4: the runner keys a MetaMask relay's payer by the delegating account (as submit
// and the store do), not by `call.to`, the DelegationManager every MetaMask relay goes to: two
// accounts' relays are sent together, neither held behind the other.
t.test('two MetaMask accounts\' relays are in flight at once', async (t) => {
  const testClient = createTestClient({ mode: 'anvil', chain, transport })
  const accounts = [await delegatedAccount(), await delegatedAccount()]
  const prepared = []
  for (const account of accounts) {
    const batch = await use('metamask_batch', { chain: 'local', account: account.address, calls: [encodeTransfer({ token: usdc, to: payee, amount: 1n })], token: 'USDC' })
    prepared.push(await use('metamask_execute', { chain: 'local', typedData: batch.typedData, batches: batch.batches, signature: await sign(account, batch.typedData) }))
  }
  await testClient.setAutomine(false)
  t.teardown(() => testClient.setAutomine(true))
  const ids: string[] = []
  for (const executed of prepared) ids.push((await use('submit', { chain: 'local', call: executed.call, payment: executed.payment })).id)
  const sent = await Promise.all(ids.map((id) => waitFor(() => use('status', { id }), (view: any) => view.transaction !== undefined, `${id} sent with no block mined`, 15_000)))
  t.equal(new Set(sent.map((view) => view.transaction.hash)).size, 2, 'two transactions in flight, one per account')
  await testClient.setAutomine(true)
  await testClient.mine({ blocks: 1 })
  for (const id of ids) t.equal((await untilSettled(id)).stage, 'done')
})

// Issue 43, point 6: the devnet raised relay.maxRevertGas to 600,000 for every payer because
// MetaMask's payment phase needs it; 29 fresh payers then each voided a payment carrying the
// calldata that bound allowed (2.09× what they spent). The bound now stays 300,000 and a batch gets
// its own payment phase's excess over a signed transfer's on top: MetaMask's relays above run at it.
t.test('a signed-transfer payer gets the default revert bound, whatever the metamask group needs', async (t) => {
  t.equal(bruno.config.networks[0]!.relay.maxRevertGas, 300_000, 'the devnet keeps the default')
  const key = generatePrivateKey()
  await mintUsdc(deployment.rpcUrl, deployment, privateKeyToAccount(key).address, 20_000_000n)
  const signed = await signTransfer(key, { address: usdc, name: 'USD Coin', version: '2', chainId: deployment.chainId }, payee, 5_000_000n)
  // 10 KB: its revert would cost ≈ 431,000 gas at EIP-7623's floor — within 600,000, over 300,000.
  const call = { to: privateKeyToAccount(generatePrivateKey()).address, data: `0x${'a5'.repeat(10_240)}` }
  const response = await fetch(`${bruno.server.url}/local/v1/submit`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ call, payment: { token: usdc, authorization: signed.message, signature: signed.signature } }),
  })
  t.equal(response.status, 422)
  t.match(((await response.json()) as { error: { message: string } }).error.message, /would revert and still cost 4\d{5} gas .*, over the 300000 this relay risks on a payment/)
})

t.test('a MetaMask-delegated account pays by signed transfer while the Runner\'s owner lists its delegation (the devnet does), over MCP and REST; refused once unlisted (issue 46, point 1)', async (t) => {
  const account = privateKeyToAccount(generatePrivateKey())
  await mintUsdc(deployment.rpcUrl, deployment, account.address, 20_000_000n)
  await delegate(account)
  const listed = async (allowed: boolean) => {
    const data = encodeFunctionData({ abi: runnerAbi, functionName: 'setPayerCode', args: [keccak256(delegatedCode as Hex), allowed] })
    const receipt = await client.waitForTransactionReceipt({ hash: await sponsor.sendTransaction({ to: deployment.runner.contract, data }) })
    if (receipt.status !== 'success') throw new Error('setPayerCode reverted')
  }
  const notListed = `from ${account.address} cannot pay by signed transfer: the payer ${account.address} has code (a contract, or an account delegated by EIP-7702) that is not on the Runner's list of wallets that may pay by signed transfer`
  t.equal(await client.readContract({ address: deployment.runner.contract, abi: runnerAbi, functionName: 'payerCodeAllowed', args: [keccak256(delegatedCode as Hex)] }), true, 'the devnet\'s MetaMask group listed its delegation')
  for (const binding of ['mcp', 'rest'] as const) {
    const friend = privateKeyToAccount(generatePrivateKey()).address
    // The call is the account's own signed transfer too: the token checks both signatures by the delegator's ERC-1271.
    const transfer = await use('transfer_authorization', { chain: 'local', from: account.address, to: friend, token: 'USDC', amount: '1' })
    const encoded = await use('transfer_authorization_call', { chain: 'local', typedData: transfer.typedData, signature: await sign(account, transfer.typedData) })
    const quote = await use('quote', { chain: 'local', call: transfer.quoteCall, token: 'USDC', payment: 'authorization' })
    const prepared = await use('payment_authorization', { chain: 'local', from: account.address, token: 'USDC', amount: quote.amount })
    const request = { call: encoded.call, payment: { ...prepared.payment, signature: await sign(account, prepared.typedData) } }
    const before = await usdcOf(account.address)
    const id = await submitBy(binding, request)
    const status = await untilSettled(id)
    t.equal(status.stage, 'done', `${binding}: ${status.reason ?? 'done'}`)
    t.equal(status.outcome.callSucceeded, true)
    t.equal(await usdcOf(friend), 1_000_000n, `${binding}: the friend got 1 USDC`)
    t.ok(BigInt(status.outcome.refundedBaseUnits) > 0n, `${binding}: the rest of the payment came back`)
    t.equal(before - (await usdcOf(account.address)), 1_000_000n + BigInt(status.outcome.chargedBaseUnits), `${binding}: the account paid the transfer and the charge, no more`)
  }
  await listed(false)
  t.teardown(() => listed(true))
  t.match(await refusal('payment_authorization', { chain: 'local', from: account.address, token: 'USDC', amount: '1' }), notListed, 'unlisted: refused before anything is signed')
})
