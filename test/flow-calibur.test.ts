import t, { type Test } from 'tap'
import {
  createPublicClient,
  createWalletClient,
  erc20Abi,
  formatUnits,
  getAddress,
  http,
  pad,
  parseUnits,
  type Address,
  type Hex,
  type PrivateKeyAccount,
} from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { devnetChain } from '../core/devnet/chain.ts'
import { mintUsdc } from '../core/devnet/fund.ts'
import { fakeNetwork } from './unit/fakeChain.ts'
import { readWeiPerBaseUnit } from '../core/chain/tokenPrice.ts'
import { encodeTransfer } from '../core/chain/erc20Calls.ts'
import { encodeSignedExecute } from '../plugins/calibur/executeCalldata.ts'
import { ownCallsBatch, paymentBatch } from '../plugins/calibur/paymentFirstBatch.ts'
import { caliburTypedData, type CaliburCall } from '../plugins/calibur/typedData.ts'
import { startDevnetBruno } from './fixtures/devnetBruno.ts'
import { RawMcpClient } from './fixtures/mcpHttp.ts'
import { waitFor } from './fixtures/waitFor.ts'
import { CALIBUR_ADDRESS } from '../plugins/calibur/networkOptions.ts'

// Flows 1 and 3 of DESIGN §7 through MCP, as an agent runs them: helpers' calls → calibur_batch →
// the account's key signs the typed data as it came → calibur_execute → submit → status until done.

const bruno = await startDevnetBruno(t, { groups: ['bruno', 'calibur', 'erc20', 'uniswap'] })
const { deployment } = bruno
const chain = devnetChain(deployment.chainId)
const transport = http(deployment.rpcUrl)
const client = createPublicClient({ chain, transport, pollingInterval: 50 })
const mcp = new RawMcpClient(`${bruno.mcpUrl}/bruno,calibur,erc20,uniswap`)
const network = bruno.config.networks[0]!
const payee = getAddress(network.payee)
const usdc = deployment.usdc
const runner = deployment.runner.operator.address
// The deployer (anvil #0) sends the type-4 delegations: 7702 lets anyone carry an account's authorization.
const sponsor = createWalletClient({ account: privateKeyToAccount(deployment.deployer.privateKey), chain, transport })
const delegatedCode = `0xef0100${CALIBUR_ADDRESS.slice(2).toLowerCase()}`

const usdcOf = (address: Address) => client.readContract({ address: usdc, abi: erc20Abi, functionName: 'balanceOf', args: [address] })

async function delegate(account: PrivateKeyAccount): Promise<void> {
  const authorization = await sponsor.signAuthorization({ account, contractAddress: CALIBUR_ADDRESS })
  const hash = await sponsor.sendTransaction({ to: sponsor.account.address, authorizationList: [authorization] })
  const receipt = await client.waitForTransactionReceipt({ hash })
  if (receipt.status !== 'success') throw new Error('delegation reverted')
}

async function untilSettled(id: string): Promise<any> {
  return waitFor(() => mcp.call('status', { id }), (status) => status.stage === 'done' || status.stage === 'failed', `submission ${id} settled`, 30_000)
}

// The signer sees the typed data exactly as the tool returned it (JSON, decimal strings).
const sign = (account: PrivateKeyAccount, typedData: unknown) => account.signTypedData(typedData as never)

// What the runner paid, in USDC base units at the pool's price now (for the report).
async function costInUsdc(wei: bigint): Promise<string> {
  const price = await readWeiPerBaseUnit(fakeNetwork(client, network), usdc)
  return formatUnits((wei * price.denominator) / price.numerator, 6)
}

/** Runs a prepared batch to done; returns what the runner's transaction did. */
async function relayBatch(t: Test, account: PrivateKeyAccount, batch: any) {
  const signature = await sign(account, batch.typedData)
  const paymentSignature = await sign(account, batch.paymentTypedData)
  const executed = await mcp.call('calibur_execute', { chain: 'local', paymentTypedData: batch.paymentTypedData, paymentSignature, typedData: batch.typedData, signature })
  t.equal(executed.call.to, account.address, 'the runner calls the account')
  t.same(
    { token: executed.payment.token, amountBaseUnits: executed.payment.amountBaseUnits },
    { token: usdc, amountBaseUnits: batch.payment.amountBaseUnits },
    'the payment is the payment batch\'s',
  )
  t.match(executed.payment.batch, /^0xc3c16ee4/, 'the payment batch is Calibur\'s signed execute')
  t.match(executed.next, /submit/)
  const accepted = await mcp.call('submit', { chain: 'local', call: executed.call, payment: executed.payment })
  const status = await untilSettled(accepted.id)
  t.equal(status.stage, 'done', status.reason)
  const receipt = await client.getTransactionReceipt({ hash: status.transaction.hash })
  t.equal(receipt.status, 'success')
  const fee = receipt.gasUsed * receipt.effectiveGasPrice
  // What the runner signed: the limit submit and the runner priced. The batch's estimate must cover it.
  const signed = await client.getTransaction({ hash: status.transaction.hash })
  t.ok(BigInt(batch.gas.estimated) >= signed.gas, `the estimate ${batch.gas.estimated} covers the signed limit ${signed.gas}`)
  t.equal(status.outcome.callSucceeded, true, 'the calls ran')
  t.equal(status.outcome.paidBaseUnits, batch.payment.amountBaseUnits, 'the payee received the leg')
  t.equal(BigInt(status.outcome.chargedBaseUnits) + BigInt(status.outcome.refundedBaseUnits), BigInt(batch.payment.amountBaseUnits), 'and refunded what it did not keep')
  t.ok(BigInt(status.outcome.refundedBaseUnits) > 0n, 'the worst case was not reached: some came back')
  t.comment(
    `gas: estimated ${batch.gas.estimated} (owner path ${batch.gas.ownerPath}), signed limit ${signed.gas}, used ${receipt.gasUsed}; ` +
      `payment leg ${batch.payment.amount} USDC vs actual cost ${await costInUsdc(fee)} USDC`,
  )
  t.ok(BigInt(batch.gas.estimated) >= receipt.gasUsed, 'the estimate covers the gas used')
  return { status, receipt, fee, executed, signature, paymentSignature }
}

t.test('the calibur group is listed with its two tools', async (t) => {
  const names = (await mcp.listTools()).map((tool) => tool.name)
  t.ok(names.includes('calibur_batch') && names.includes('calibur_execute'))
  t.ok(names.indexOf('calibur_batch') > names.indexOf('status'), 'after the bruno group')
})

const demo = privateKeyToAccount(deployment.demoAccounts[0]!.privateKey)
let doneBatch: any
let doneSignature: Hex
let donePaymentSignature: Hex

t.test('flow 1: a delegated account sends 1 USDC to a friend through a signed Calibur batch', async (t) => {
  await delegate(demo)
  t.equal(await client.getCode({ address: demo.address }), delegatedCode)
  const friend = privateKeyToAccount(generatePrivateKey()).address

  for (const round of ['first use of nonce key 0', 'key 0 warm']) {
    const transfer = await mcp.call('erc20_transfer', { chain: 'local', token: 'USDC', to: friend, amount: '1' })
    const batch = await mcp.call('calibur_batch', { chain: 'local', account: demo.address, calls: transfer.calls, token: 'USDC' })
    t.equal(batch.calls.length, 1, `${round}: the account's own call`)
    t.same(batch.calls[0], transfer.calls[0])
    const [leg, ...more] = batch.paymentTypedData.message.batchedCall.calls
    t.equal(more.length, 0, 'the payment batch only pays')
    t.equal(getAddress(leg.to), usdc, 'the payment batch transfers the token')
    t.same(batch.typedData.message.batchedCall.calls, transfer.calls, 'the batch of calls holds the account\'s calls alone')
    t.equal(batch.typedData.message.batchedCall.revertOnFailure, true, 'all or nothing')
    t.equal(BigInt(batch.typedData.message.nonce), BigInt(batch.paymentTypedData.message.nonce) + 1n, 'the calls come at the nonce after the payment')
    t.equal(getAddress(batch.typedData.message.executor), deployment.runner.contract, 'only the Runner may run them')
    t.same(batch.approvalsAdded, [])
    t.equal(batch.payment.payee, payee)
    t.match(batch.summary, /USDC/)
    t.equal(batch.typedData.domain.verifyingContract, demo.address)

    const before = { payee: await usdcOf(payee), friend: await usdcOf(friend), account: await usdcOf(demo.address), runner: await client.getBalance({ address: runner }) }
    const { fee, signature, paymentSignature, status } = await relayBatch(t, demo, batch)
    const charged = BigInt(status.outcome.chargedBaseUnits)
    t.equal((await usdcOf(payee)) - before.payee, charged, 'the payee kept the charge')
    t.equal(before.runner - (await client.getBalance({ address: runner })), fee, 'the runner spent only the gas')
    t.equal((await usdcOf(friend)) - before.friend, 1_000_000n, 'the friend got exactly 1 USDC')
    t.equal(before.account - (await usdcOf(demo.address)), 1_000_000n + charged, 'the account paid 1 USDC and the charge: the rest of the payment came back')
    doneBatch = batch
    doneSignature = signature
    donePaymentSignature = paymentSignature
  }
})

t.test('flow 3: a USDC-only account with no ETH swaps USDC to ETH, paying in USDC', async (t) => {
  const account = privateKeyToAccount(generatePrivateKey())
  await mintUsdc(deployment.rpcUrl, deployment, account.address, 50_000_000n)
  await delegate(account)
  t.equal(await client.getBalance({ address: account.address }), 0n, 'no ETH')

  const swap = await mcp.call('uniswap_swap_to_eth', { chain: 'local', token: 'USDC', amount: '10', recipient: account.address })
  const batch = await mcp.call('calibur_batch', { chain: 'local', account: account.address, calls: swap.calls, approvals: swap.approvals, token: 'USDC' })
  t.same(batch.approvalsAdded, swap.approvals, 'the router had no allowance: approve added')
  t.equal(batch.calls.length, 2, 'approve, swap')
  t.same(batch.calls[1], swap.calls[0])
  t.match(batch.summary, /approve 0x.{4}….{4} for 10 USDC/)
  const { status } = await relayBatch(t, account, batch)
  const eth = await client.getBalance({ address: account.address })
  t.ok(eth >= BigInt(swap.minimumOut.wei), `the account got ${formatUnits(eth, 18)} ETH, at least the minimum ${swap.minimumOut.eth}`)
  t.equal(await usdcOf(account.address), 50_000_000n - 10_000_000n - BigInt(status.outcome.chargedBaseUnits))
  // The swap clears and restores storage (the router's WETH, the pool's lock): the chain refunds gas (EIP-3529) that
  // the Runner cannot see, so the charge is above cost + markup here, within the quarter the ledger allows for it.
  const entry = (await bruno.ledger()).find((line) => line.hash === status.transaction.hash)!
  t.comment(`flow 3 (a swap): charged ${entry.atCost!.chargedWei} wei at the signed rate; spent ${entry.spentWei} wei: ${(Number(entry.atCost!.chargedWei) / Number(entry.spentWei)).toFixed(4)} × cost`)
})

t.test('delegating first, through the tools: calibur_batch and calibur_execute take the account\'s authorization', async (t) => {
  const account = privateKeyToAccount(generatePrivateKey())
  const friend = privateKeyToAccount(generatePrivateKey()).address
  await mintUsdc(deployment.rpcUrl, deployment, account.address, 20_000_000n)
  const transfer = await mcp.call('erc20_transfer', { chain: 'local', token: 'USDC', to: friend, amount: '1' })
  const authorize = async (signer: PrivateKeyAccount, nonce: number) => {
    const signed = await signer.signAuthorization({ contractAddress: CALIBUR_ADDRESS, chainId: deployment.chainId, nonce })
    return [{ chainId: signed.chainId, address: signed.address, nonce: signed.nonce, r: signed.r, s: signed.s, yParity: signed.yParity! }]
  }
  const batchWith = (authorizationList: unknown) =>
    mcp.callTool('calibur_batch', { chain: 'local', account: account.address, calls: transfer.calls, token: 'USDC', authorizationList })

  // Refused: the nonce the account would use were it sending itself, and someone else's authorization.
  let result = await batchWith(await authorize(account, 1))
  t.equal(result.isError, true)
  t.match(result.content[0].text, /carries nonce 1; the account's EOA nonce is 0/)
  result = await batchWith(await authorize(demo, 0))
  t.match(result.content[0].text, /is signed by .*, not by the account/)

  const authorizationList = await authorize(account, 0)
  const batch = await mcp.call('calibur_batch', { chain: 'local', account: account.address, calls: transfer.calls, token: 'USDC', authorizationList })
  t.same(batch.authorizationList, authorizationList)
  t.equal(batch.typedData.domain.salt, pad(CALIBUR_ADDRESS, { size: 32 }).toLowerCase(), 'the salt Calibur will have')
  t.match(batch.summary, /delegated to Calibur in the same transaction/)
  const signature = await sign(account, batch.typedData)
  const paymentSignature = await sign(account, batch.paymentTypedData)
  const executed = await mcp.call('calibur_execute', { chain: 'local', paymentTypedData: batch.paymentTypedData, paymentSignature, typedData: batch.typedData, signature, authorizationList })
  t.same(executed.authorizationList, authorizationList)
  t.match(executed.next, /authorizationList/)
  const accepted = await mcp.call('submit', { chain: 'local', call: executed.call, payment: executed.payment, authorizationList: executed.authorizationList })
  const status = await untilSettled(accepted.id)
  t.equal(status.stage, 'done', status.reason)
  const receipt = await client.getTransactionReceipt({ hash: status.transaction.hash })
  const signed = await client.getTransaction({ hash: status.transaction.hash })
  t.ok(BigInt(batch.gas.estimated) >= signed.gas, `the estimate ${batch.gas.estimated} covers the signed limit ${signed.gas}`)
  t.comment(
    `gas: delegation + batch estimated ${batch.gas.estimated} (owner path ${batch.gas.ownerPath}), signed limit ${signed.gas}, ` +
      `used ${receipt.gasUsed}; payment leg ${batch.payment.amount} USDC vs actual cost ${await costInUsdc(receipt.gasUsed * receipt.effectiveGasPrice)} USDC`,
  )
  t.equal(await client.getCode({ address: account.address }), delegatedCode, 'delegated to Calibur by that transaction')
  t.equal(await usdcOf(friend), 1_000_000n)
  t.equal(await usdcOf(account.address), 20_000_000n - 1_000_000n - BigInt(status.outcome.chargedBaseUnits))
})

t.test('delegating first, the wallet\'s way: typed data from the pure encoders, quoted, one transaction', async (t) => {
  const account = privateKeyToAccount(generatePrivateKey())
  const friend = privateKeyToAccount(generatePrivateKey()).address
  await mintUsdc(deployment.rpcUrl, deployment, account.address, 20_000_000n)
  const transfer = encodeTransfer({ token: usdc, to: friend, amount: 1_000_000n })

  // calibur_batch reads the account's domain and nonce from its code: not there yet.
  const refused = await mcp.callTool('calibur_batch', { chain: 'local', account: account.address, calls: [transfer], token: 'USDC' })
  t.equal(refused.isError, true)
  t.match(refused.content[0].text, /not delegated to Calibur.*authorizationList/)

  // The runner sends the transaction, so the authorization's nonce is the account's current one.
  const signed = await account.signAuthorization({ contractAddress: CALIBUR_ADDRESS, chainId: deployment.chainId, nonce: 0 })
  const authorizationList = [{ chainId: signed.chainId, address: signed.address, nonce: signed.nonce, r: signed.r, s: signed.s, yParity: signed.yParity! }]
  // The wallet builds the batch from the domain's facts: salt = Calibur's address, verifyingContract = the account;
  // the payment batch names the Runner its executor, so that only the Runner runs it.
  const domain = { chainId: deployment.chainId, account: account.address, salt: pad(CALIBUR_ADDRESS, { size: 32 }) }
  const deadline = BigInt(Math.floor(Date.now() / 1000) + 600)
  const callsTypedData = caliburTypedData({ domain, batch: ownCallsBatch([transfer as CaliburCall]), nonce: 1n, deadline })
  const call = { to: account.address, data: encodeSignedExecute({ message: callsTypedData.message, signature: await sign(account, callsTypedData) }) }
  const paymentFor = async (amount: bigint) => {
    const typedData = caliburTypedData({ domain, batch: paymentBatch(encodeTransfer({ token: usdc, to: payee, amount }) as CaliburCall), nonce: 0n, deadline, executor: deployment.runner.contract })
    return encodeSignedExecute({ message: typedData.message, signature: await sign(account, typedData) })
  }
  // Quoted with a provisional payment (quote measures the call with its authorization), then signed with the quoted amount.
  const quote = await mcp.call('quote', { chain: 'local', call, paymentBatch: await paymentFor(1n), authorizationList, token: 'USDC', payment: 'batch' })
  const amount = BigInt(quote.amountBaseUnits)
  const accepted = await mcp.call('submit', { chain: 'local', call, authorizationList, payment: { token: usdc, amountBaseUnits: quote.amountBaseUnits, batch: await paymentFor(amount) } })
  const status = await untilSettled(accepted.id)
  t.equal(status.stage, 'done', status.reason)
  const receipt = await client.getTransactionReceipt({ hash: status.transaction.hash })
  t.comment(`gas: delegation + batch quoted ${quote.gas}, used ${receipt.gasUsed}; paid ${quote.amount} USDC`)
  t.equal(await client.getCode({ address: account.address }), delegatedCode, 'delegated to Calibur by that transaction')
  t.equal(await usdcOf(friend), 1_000_000n)
  t.equal(await usdcOf(account.address), 20_000_000n - 1_000_000n - BigInt(status.outcome.chargedBaseUnits), 'the charge, the rest of the payment refunded')
})

t.test('a payment batch any executor may run: a stranger could run it first, so calibur_execute and submit refuse it (issue 43, point 5)', async (t) => {
  const account = privateKeyToAccount(generatePrivateKey())
  await mintUsdc(deployment.rpcUrl, deployment, account.address, 20_000_000n)
  await delegate(account)
  const transfer = await mcp.call('erc20_transfer', { chain: 'local', token: 'USDC', to: privateKeyToAccount(generatePrivateKey()).address, amount: '1' })
  const batch = await mcp.call('calibur_batch', { chain: 'local', account: account.address, calls: transfer.calls, token: 'USDC' })
  t.equal(getAddress(batch.paymentTypedData.message.executor), deployment.runner.contract, 'calibur_batch pins the payment to the Runner')
  const anyone = structuredClone(batch.paymentTypedData)
  anyone.message.executor = '0x0000000000000000000000000000000000000000'
  const [pinnedSignature, openSignature, signature] = await Promise.all([sign(account, batch.paymentTypedData), sign(account, anyone), sign(account, batch.typedData)])
  const stranger = privateKeyToAccount(generatePrivateKey()).address
  const strangerRuns = (message: unknown, paymentSignature: Hex) =>
    client.call({ account: stranger, to: account.address, data: encodeSignedExecute({ message: message as never, signature: paymentSignature }) }).then(
      () => 'paid',
      () => 'reverted',
    )
  // What the refusal guards against: the open batch pays when anyone sends it; the pinned one does not.
  t.equal(await strangerRuns(anyone.message, openSignature), 'paid', 'a stranger could run the open payment batch')
  t.equal(await strangerRuns(batch.paymentTypedData.message, pinnedSignature), 'reverted', 'nor the pinned one')
  const refusal = `refused: the Calibur payment batch of ${account.address} can be run by anyone, not only by Bruno's Runner: whoever holds it could run it first (the payee would keep the payment, your calls would not run, and the relay would fail). Nothing was sent; sign a payment batch that only the Runner can run, as calibur_batch builds it`
  const executed = await mcp.callTool('calibur_execute', { chain: 'local', paymentTypedData: anyone, paymentSignature: openSignature, typedData: batch.typedData, signature })
  t.equal(executed.isError, true)
  t.equal(executed.content[0].text, refusal, 'calibur_execute: before anything reaches submit')
  // Built by hand past calibur_execute: submit refuses it the same way, and stores nothing.
  const call = { to: account.address, data: encodeSignedExecute({ message: batch.typedData.message, signature }) }
  const payment = { token: usdc, amountBaseUnits: batch.payment.amountBaseUnits, batch: encodeSignedExecute({ message: anyone.message, signature: openSignature }) }
  const submitted = await mcp.callTool('submit', { chain: 'local', call, payment })
  t.equal(submitted.isError, true)
  t.equal(submitted.content[0].text, refusal, 'submit, on MCP')
  const rest = await fetch(`${bruno.server.url}/local/v1/submit`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ call, payment }) })
  t.equal(rest.status, 422)
  t.match(await rest.json(), { error: { message: refusal } }, 'submit, on REST')
  t.equal(await usdcOf(account.address), 20_000_000n, 'nothing was taken')
  // The pinned pair is relayed.
  const pinned = await mcp.call('submit', { chain: 'local', call, payment: { ...payment, batch: encodeSignedExecute({ message: batch.paymentTypedData.message, signature: pinnedSignature }) } })
  t.equal((await untilSettled(pinned.id)).stage, 'done')
})

t.test('two calibur_batch pairs on one nonce with different calls: the second is refused naming the first; the first again answers the first (issue 43, point 10)', async (t) => {
  const account = privateKeyToAccount(generatePrivateKey())
  await mintUsdc(deployment.rpcUrl, deployment, account.address, 20_000_000n)
  await delegate(account)
  const [alice, bob] = [privateKeyToAccount(generatePrivateKey()).address, privateKeyToAccount(generatePrivateKey()).address]
  const pairTo = async (friend: Address) => {
    const transfer = await mcp.call('erc20_transfer', { chain: 'local', token: 'USDC', to: friend, amount: '1' })
    const batch = await mcp.call('calibur_batch', { chain: 'local', account: account.address, calls: transfer.calls, token: 'USDC' })
    const paymentSignature = await sign(account, batch.paymentTypedData)
    const executed = await mcp.call('calibur_execute', { chain: 'local', paymentTypedData: batch.paymentTypedData, paymentSignature, typedData: batch.typedData, signature: await sign(account, batch.typedData) })
    return { nonce: batch.nonce, submit: { chain: 'local', call: executed.call, payment: executed.payment } }
  }
  const first = await pairTo(alice)
  const second = await pairTo(bob)
  t.equal(second.nonce, first.nonce, 'both pairs are signed on the same nonce')
  const accepted = await mcp.call('submit', first.submit)
  const spentBy = (spent: string) =>
    new RegExp(`^refused: the payment's nonce \\(\\S+\\) ${spent} by the submission ${accepted.id} with other calls: a signed batch's nonce pays once, for the calls signed with it\\. Nothing was taken; sign a new batch \\(calibur_batch\\) for these calls, or ask status with that id$`)
  const whileActive = await mcp.callTool('submit', second.submit)
  t.equal(whileActive.isError, true, 'the second pair, while the first is active: refused')
  t.match(whileActive.content[0].text, spentBy('is already being spent \\((waiting|sending|confirming)\\)'))
  const done = await untilSettled(accepted.id)
  t.equal(done.stage, 'done', done.reason)
  const onceDone = await mcp.callTool('submit', second.submit)
  t.equal(onceDone.isError, true, 'the second pair, once the first is done: refused, not answered with the first\'s done')
  t.match(onceDone.content[0].text, spentBy('was already spent'))
  const again = await mcp.call('submit', first.submit)
  t.same({ id: again.id, stage: again.stage }, { id: accepted.id, stage: 'done' }, 'the first pair again: the first answers, done')
  t.equal(await usdcOf(alice), 1_000_000n, 'the first pair\'s call ran')
  t.equal(await usdcOf(bob), 0n, 'the second pair\'s call never ran')
})

t.test('refusals: nothing reaches the runner', async (t) => {
  const account = privateKeyToAccount(deployment.demoAccounts[1]!.privateKey)
  await delegate(account)
  const nonceBefore = await client.getTransactionCount({ address: runner })
  const transfer = await mcp.call('erc20_transfer', { chain: 'local', token: 'USDC', to: demo.address, amount: '1' })
  const batch = await mcp.call('calibur_batch', { chain: 'local', account: account.address, calls: transfer.calls, token: 'USDC' })
  const signature = await sign(account, batch.typedData)
  const paymentSignature = await sign(account, batch.paymentTypedData)
  const execute = (paymentTypedData: unknown, paymentSignature: string, typedData: unknown, signature: string) =>
    mcp.callTool('calibur_execute', { chain: 'local', paymentTypedData, paymentSignature, typedData, signature })

  // A signature whose r is not on the curve (all zero) recovers to nothing.
  let result = await execute(batch.paymentTypedData, paymentSignature, batch.typedData, `0x${'00'.repeat(64)}1b`)
  t.equal(result.isError, true)
  t.match(result.content[0].text, /bad signature|recovers to/)
  t.comment(result.content[0].text)

  result = await execute(batch.paymentTypedData, await sign(demo, batch.paymentTypedData), batch.typedData, signature)
  t.equal(result.isError, true)
  t.match(result.content[0].text, new RegExp(`payment batch's signature recovers to ${demo.address}, not the account`))
  result = await execute(batch.paymentTypedData, paymentSignature, batch.typedData, await sign(demo, batch.typedData))
  t.match(result.content[0].text, new RegExp(`calls batch's signature recovers to ${demo.address}, not the account`))

  // The message changed after signing: the signature no longer recovers to the account.
  const tampered = structuredClone(batch.paymentTypedData)
  tampered.message.batchedCall.calls[0].data = encodeTransfer({ token: usdc, to: payee, amount: BigInt(batch.payment.amountBaseUnits) + 1n }).data
  result = await execute(tampered, paymentSignature, batch.typedData, signature)
  t.equal(result.isError, true)
  t.match(result.content[0].text, /not the account/)

  // The done batches of flow 1, again.
  result = await execute(doneBatch.paymentTypedData, donePaymentSignature, doneBatch.typedData, doneSignature)
  t.equal(result.isError, true)
  t.match(result.content[0].text, /used already/)

  // Batches whose deadline passes before they are executed.
  const soon = Math.floor(Date.now() / 1000) + 2
  const expiring = await mcp.call('calibur_batch', { chain: 'local', account: account.address, calls: transfer.calls, token: 'USDC', deadline: soon })
  const expiringSignatures = [await sign(account, expiring.paymentTypedData), await sign(account, expiring.typedData)] as const
  // Bruno compares the deadline with its own clock: wait for the clock to pass it.
  await waitFor(async () => Math.floor(Date.now() / 1000), (now) => now > soon, `the clock past the deadline ${soon}`, 10_000, 100)
  result = await execute(expiring.paymentTypedData, expiringSignatures[0], expiring.typedData, expiringSignatures[1])
  t.equal(result.isError, true)
  t.match(result.content[0].text, /deadline .* has passed/)

  result = await mcp.callTool('calibur_batch', { chain: 'local', account: account.address, calls: [{ ...transfer.calls[0], chainId: 1 }], token: 'USDC' })
  t.match(result.content[0].text, /is for chain 1/)
  result = await mcp.callTool('calibur_batch', { chain: 'local', account: account.address, calls: transfer.calls, token: 'USDC', deadline: 1 })
  t.match(result.content[0].text, /has passed/)

  // A batch that cannot run: refused with the token's reason before anything is signed.
  const tooMuch = await mcp.call('erc20_transfer', { chain: 'local', token: 'USDC', to: demo.address, amount: '1000000' })
  result = await mcp.callTool('calibur_batch', { chain: 'local', account: account.address, calls: tooMuch.calls, token: 'USDC' })
  t.equal(result.isError, true)
  t.match(result.content[0].text, /the batch would fail: .*exceeds balance/)

  // A payment batch that does more than pay, or pays nothing; the calls out of order; the payment as one batch with the calls.
  const paysAndCalls = structuredClone(batch.paymentTypedData)
  paysAndCalls.message.batchedCall.calls.push(transfer.calls[0])
  result = await execute(paysAndCalls, await sign(account, paysAndCalls), batch.typedData, signature)
  t.match(result.content[0].text, /not payment-only: it has 2 calls, not 1/)
  const noPayment = structuredClone(batch.paymentTypedData)
  noPayment.message.batchedCall.calls[0] = transfer.calls[0]
  result = await execute(noPayment, await sign(account, noPayment), batch.typedData, signature)
  t.match(result.content[0].text, /not payment-only: it pays 0x[0-9a-fA-F]{40}, not the payee/)
  const lenient = structuredClone(batch.paymentTypedData)
  lenient.message.batchedCall.revertOnFailure = false
  result = await execute(lenient, await sign(account, lenient), batch.typedData, signature)
  t.match(result.content[0].text, /not payment-only: it does not revert on failure/)
  const sameNonce = structuredClone(batch.typedData)
  sameNonce.message.nonce = batch.paymentTypedData.message.nonce
  result = await execute(batch.paymentTypedData, paymentSignature, sameNonce, await sign(account, sameNonce))
  t.match(result.content[0].text, /must be signed at key 0, seq \d+, right after the payment batch's/)
  // submit reads the signed calldata the same way: the old single batch (payment leg, then the calls) is refused there.
  const single = caliburTypedData({
    domain: { chainId: deployment.chainId, account: account.address, salt: pad(CALIBUR_ADDRESS, { size: 32 }) },
    batch: { calls: [encodeTransfer({ token: usdc, to: payee, amount: 1_000_000n }) as CaliburCall, ...transfer.calls], revertOnFailure: false },
    nonce: BigInt(batch.nonce),
    deadline: BigInt(batch.deadline),
  })
  const singleData = encodeSignedExecute({ message: single.message, signature: await sign(account, single) })
  result = await mcp.callTool('submit', { chain: 'local', call: { to: account.address, data: singleData }, payment: { token: usdc, amountBaseUnits: '1000000', batch: singleData } })
  t.equal(result.isError, true)
  t.match(result.content[0].text, /right after the payment batch's/)
  const callsAlone = await mcp.call('calibur_execute', { chain: 'local', paymentTypedData: batch.paymentTypedData, paymentSignature, typedData: batch.typedData, signature })
  result = await mcp.callTool('submit', { chain: 'local', call: callsAlone.call, payment: { token: usdc, amountBaseUnits: callsAlone.payment.amountBaseUnits, batch: singleData } })
  t.match(result.content[0].text, /payment batch is not payment-only: it has 2 calls|right after the payment batch's/)

  t.equal(await client.getTransactionCount({ address: runner }), nonceBefore, 'the runner sent nothing')

  // The good one still goes through, and a builder's transactionRequest fields are accepted.
  const request = { ...transfer.calls[0], value: '0x0', chainId: deployment.chainId, gas: '0x5208', from: account.address, nonce: 7, type: 'eip1559' }
  const fromBuilder = await mcp.call('calibur_batch', { chain: 'local', account: account.address, calls: [request], token: 'USDC' })
  t.same(fromBuilder.calls[0], transfer.calls[0], 'the builder\'s extra fields are dropped')
  t.equal(parseUnits(batch.payment.amount, 6).toString(), batch.payment.amountBaseUnits)

  // An allowance that suffices adds no approve; one that is short does.
  const spender = '0x2222222222222222222222222222222222222222'
  const wallet = createWalletClient({ account, chain, transport })
  await client.waitForTransactionReceipt({ hash: await wallet.writeContract({ address: usdc, abi: erc20Abi, functionName: 'approve', args: [spender, 5n] }) })
  const enough = await mcp.call('calibur_batch', { chain: 'local', account: account.address, calls: transfer.calls, approvals: [{ token: usdc, spender, amountBaseUnits: '5' }], token: 'USDC' })
  t.same(enough.approvalsAdded, [])
  t.equal(enough.calls.length, 1)
  const short = await mcp.call('calibur_batch', { chain: 'local', account: account.address, calls: transfer.calls, approvals: [{ token: usdc, spender, amountBaseUnits: '6' }], token: 'USDC' })
  t.same(short.approvalsAdded, [{ token: usdc, spender, amountBaseUnits: '6' }])
  t.equal(short.calls.length, 2)
  t.match(short.summary, /approve 0x2222…2222 for 0.000006 USDC/)
})
