import t from 'tap'
import { createPublicClient, createTestClient, createWalletClient, encodeFunctionData, erc20Abi, getAddress, http, parseAbi, zeroAddress, type Address, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { devnetChain } from '../core/devnet/chain.ts'
import { mintUsdc } from '../core/devnet/fund.ts'
import { CALIBUR_ADDRESS } from '../plugins/calibur/networkOptions.ts'
import { chargedAtCost, startDevnetBruno } from './fixtures/devnetBruno.ts'
import { RawMcpClient } from './fixtures/mcpHttp.ts'
import { executeCaliburBatch } from './fixtures/caliburExecute.ts'
import { giftCall } from './fixtures/giftCall.ts'
import { signTransfer } from './fixtures/signedTransfer.ts'
import { waitFor } from './fixtures/waitFor.ts'

// Issue 32 through the relay: the devnet's payee is its PayeeVault, so every relay signs a charge and the payer gets
// back, in the same transaction, what the relay did not cost. Per transaction, from the runner ledger: what the
// payee kept is worth at least what the runner spent, and at most the markup (5 %) and 1 % more.

const bruno = await startDevnetBruno(t, { groups: ['bruno', '3009', 'calibur', 'erc20'] })
const { deployment } = bruno
const client = createPublicClient({ transport: http(deployment.rpcUrl) })
const testClient = createTestClient({ mode: 'anvil', transport: http(deployment.rpcUrl) })
const mcp = new RawMcpClient(`${bruno.mcpUrl}/bruno,3009,calibur,erc20`)
const payee = getAddress(bruno.config.networks[0]!.payee)
const usdc = deployment.usdc
const token = { address: usdc, name: 'USD Coin', version: '2', chainId: deployment.chainId }
const blacklistAbi = parseAbi(['function updateBlacklister(address)', 'function blacklist(address)', 'function isBlacklisted(address) view returns (bool)'])
const balance = (address: Address) => client.readContract({ address: usdc, abi: erc20Abi, functionName: 'balanceOf', args: [address] })

t.equal(payee, deployment.payeeVault, "the payee is the devnet's vault")

/** A USDC-only account that pays `quote`'s amount by signed transfer for `call` (none: a payment alone), and the settled status. */
async function relayPaidBySignedTransfer(key: Hex, call: { to: Address; data: Hex }) {
  const quote = await mcp.call('quote', { chain: 'local', call, token: 'USDC', payment: 'authorization' })
  const fee = await signTransfer(key, token, payee, BigInt(quote.amountBaseUnits))
  const accepted = await mcp.call('submit', { chain: 'local', call, payment: { token: usdc, authorization: fee.message, signature: fee.signature } })
  const status = await waitFor(() => mcp.call('status', { id: accepted.id }), (s) => s.stage === 'done' || s.stage === 'failed', `submission ${accepted.id} settled`, 30_000)
  return { quote, status }
}


t.test('flow 2 with a call: the payer pays the gift and the charge; the rest comes back in the same transaction', async (t) => {
  const { key, account: signer, friend, call } = await giftCall(deployment, 50_000_000n, 10_000_000n)
  const account = signer.address
  const vaultBefore = await balance(payee)
  const { quote, status } = await relayPaidBySignedTransfer(key, call)
  t.equal(status.stage, 'done', status.reason)
  const { paidBaseUnits, chargedBaseUnits, refundedBaseUnits } = status.outcome
  // The quote's expected charge, at the fees it saw, against what was charged at the fees paid (the devnet's base fee
  // moves little between the two): within a tenth.
  const [expected, charged] = [Number(quote.expectedChargeBaseUnits), Number(chargedBaseUnits)]
  t.ok(expected < Number(quote.amountBaseUnits), `the quote expected ${expected} of at most ${quote.amountBaseUnits}`)
  t.ok(Math.abs(charged - expected) <= expected / 10, `charged ${charged}, expected ${expected}: within a tenth`)
  t.equal(paidBaseUnits, quote.amountBaseUnits, 'the quoted payment arrived')
  t.equal(BigInt(chargedBaseUnits) + BigInt(refundedBaseUnits), BigInt(paidBaseUnits), 'status: charged and refunded make the payment')
  t.equal(await balance(friend), 10_000_000n, 'the call ran: the friend has the gift')
  t.equal(await balance(account), 50_000_000n - 10_000_000n - BigInt(chargedBaseUnits), 'the account paid the gift and the charge only')
  t.equal((await balance(payee)) - vaultBefore, BigInt(chargedBaseUnits), 'the vault kept the charge')
  const entry = await chargedAtCost(t, bruno, status.transaction.hash, 'flow 2, a call')
  t.equal(entry.charged.toString(), chargedBaseUnits)
})

t.test('flow 2 without a call: the payment alone is refunded too', async (t) => {
  const key = generatePrivateKey()
  await mintUsdc(deployment.rpcUrl, deployment, privateKeyToAccount(key).address, 50_000_000n)
  const { quote, status } = await relayPaidBySignedTransfer(key, { to: zeroAddress, data: '0x' })
  t.equal(status.stage, 'done', status.reason)
  const [expected, charged] = [Number(quote.expectedChargeBaseUnits), Number(status.outcome.chargedBaseUnits)]
  t.ok(Math.abs(charged - expected) <= expected / 10, `charged ${charged}, expected ${expected}: within a tenth`)
  t.ok(BigInt(status.outcome.refundedBaseUnits) > 0n)
  await chargedAtCost(t, bruno, status.transaction.hash, 'flow 2, no call')
})

t.test('a Calibur batch from a USDC-only account that delegates in the same transaction: its authorization is charged, the rest refunded', async (t) => {
  const account = privateKeyToAccount(generatePrivateKey())
  const friend = privateKeyToAccount(generatePrivateKey()).address
  await mintUsdc(deployment.rpcUrl, deployment, account.address, 20_000_000n)
  const signed = await account.signAuthorization({ contractAddress: CALIBUR_ADDRESS, chainId: deployment.chainId, nonce: 0 })
  const authorizationList = [{ chainId: signed.chainId, address: signed.address, nonce: signed.nonce, r: signed.r, s: signed.s, yParity: signed.yParity! }]
  const transfer = await mcp.call('erc20_transfer', { chain: 'local', token: 'USDC', to: friend, amount: '1' })
  const batch = await mcp.call('calibur_batch', { chain: 'local', account: account.address, calls: transfer.calls, token: 'USDC', authorizationList })
  const executed = await executeCaliburBatch(mcp, account, batch, authorizationList)
  const accepted = await mcp.call('submit', { chain: 'local', call: executed.call, payment: executed.payment, authorizationList: executed.authorizationList })
  const status = await waitFor(() => mcp.call('status', { id: accepted.id }), (s) => s.stage === 'done' || s.stage === 'failed', `submission ${accepted.id} settled`, 30_000)
  t.equal(status.stage, 'done', status.reason)
  t.equal(status.outcome.callSucceeded, true)
  t.equal(await balance(friend), 1_000_000n)
  t.equal(await balance(account.address), 20_000_000n - 1_000_000n - BigInt(status.outcome.chargedBaseUnits), 'the account paid its transfer and the charge only')
  // anvil refunds 12,500 of an authorization's 25,000 even to an account that is empty (nonce 0, no ETH), where geth
  // refunds only an account that exists (`state.Exist`): the Runner counts the 25,000 a production node charges, and
  // the ledger's ceiling counts them too.
  await chargedAtCost(t, bruno, status.transaction.hash, 'Calibur, delegating in the same transaction')

  // Delegated now: its next batch carries no authorization.
  const next = await mcp.call('calibur_batch', { chain: 'local', account: account.address, calls: transfer.calls, token: 'USDC' })
  const nextExecuted = await executeCaliburBatch(mcp, account, next)
  const quoted = await mcp.call('quote', { chain: 'local', call: nextExecuted.call, token: 'USDC', payment: 'batch', paymentBatch: nextExecuted.payment.batch })
  const again = await mcp.call('submit', { chain: 'local', call: nextExecuted.call, payment: nextExecuted.payment })
  const nextStatus = await waitFor(() => mcp.call('status', { id: again.id }), (s) => s.stage === 'done' || s.stage === 'failed', `submission ${again.id} settled`, 30_000)
  t.equal(nextStatus.stage, 'done', nextStatus.reason)
  await chargedAtCost(t, bruno, nextStatus.transaction.hash, 'Calibur, delegated before')
  const [expected, charged] = [Number(quoted.expectedChargeBaseUnits), Number(nextStatus.outcome.chargedBaseUnits)]
  t.ok(Math.abs(charged - expected) <= expected / 10, `a batch quote: charged ${charged}, expected ${expected}: within a tenth`)
  // calibur_batch says what it expects before anything is signed, as quote does after it (issue 47: the review shows it).
  for (const [prepared, settled, what] of [[batch, status, 'delegating in the same transaction'], [next, nextStatus, 'delegated before']] as const) {
    const [before, actual] = [Number(prepared.payment.expectedChargeBaseUnits), Number(settled.outcome.chargedBaseUnits)]
    // Before signing, the calls' gas is the signed path's allowance (SPEC §6): the estimate errs high, never low.
    t.ok(actual <= before && before <= actual * 1.2, `calibur_batch, ${what}: charged ${actual}, expected ${before} before signing: not below, at most a fifth above`)
  }
})

t.test('a base fee that rises 15 % between signing and inclusion is charged as paid: never below cost', async (t) => {
  const { key, call } = await giftCall(deployment, 50_000_000n, 10_000_000n)
  const quote = await mcp.call('quote', { chain: 'local', call, token: 'USDC', payment: 'authorization' })
  const fee = await signTransfer(key, token, payee, BigInt(quote.amountBaseUnits))
  await testClient.setAutomine(false)
  let hash: Hex
  try {
    const accepted = await mcp.call('submit', { chain: 'local', call, payment: { token: usdc, authorization: fee.message, signature: fee.signature } })
    const sent = await waitFor(() => mcp.call('status', { id: accepted.id }), (s) => s.stage === 'sending', `submission ${accepted.id} sent`, 20_000)
    hash = sent.transaction.hash
    // Signed at the latest base fee (its max fee 1.2 × that + the tip); included at 1.15 × it.
    const { baseFeePerGas } = await client.getBlock({ blockTag: 'latest' })
    await testClient.setNextBlockBaseFeePerGas({ baseFeePerGas: (baseFeePerGas! * 115n) / 100n })
    await testClient.mine({ blocks: 1 })
  } finally {
    await testClient.setAutomine(true)
  }
  const receipt = await client.getTransactionReceipt({ hash })
  const signed = await client.getTransaction({ hash })
  t.ok(receipt.effectiveGasPrice > (signed.maxFeePerGas! * 90n) / 100n, `included at ${receipt.effectiveGasPrice} wei per gas, near its max fee ${signed.maxFeePerGas}`)
  await chargedAtCost(t, bruno, hash, 'flow 2, the base fee up 15 % after signing')
})

t.test('a payer whose own call makes its refund impossible (USDC blacklists it): the payee keeps the whole payment, nothing reverts', async (t) => {
  const account = privateKeyToAccount(generatePrivateKey())
  await mintUsdc(deployment.rpcUrl, deployment, account.address, 20_000_000n)
  const owner = createWalletClient({ account: privateKeyToAccount(deployment.deployer.privateKey), transport: http(deployment.rpcUrl), chain: devnetChain() })
  await client.waitForTransactionReceipt({ hash: await owner.writeContract({ address: usdc, abi: blacklistAbi, functionName: 'updateBlacklister', args: [account.address] }) })
  const delegation = await owner.signAuthorization({ account, contractAddress: CALIBUR_ADDRESS, chainId: deployment.chainId })
  await client.waitForTransactionReceipt({ hash: await owner.sendTransaction({ to: owner.account.address, authorizationList: [delegation] }) })
  // The account's one call blacklists itself, after its payment went in: USDC refuses any transfer to it from then on.
  const calls = [{ to: usdc, value: '0', data: encodeFunctionData({ abi: blacklistAbi, functionName: 'blacklist', args: [account.address] }) }]
  const batch = await mcp.call('calibur_batch', { chain: 'local', account: account.address, calls, token: 'USDC' })
  const executed = await executeCaliburBatch(mcp, account, batch)
  const vaultBefore = await balance(payee)
  const accepted = await mcp.call('submit', { chain: 'local', call: executed.call, payment: executed.payment })
  const status = await waitFor(() => mcp.call('status', { id: accepted.id }), (s) => s.stage === 'done' || s.stage === 'failed', `submission ${accepted.id} settled`, 30_000)
  t.equal(status.stage, 'done', status.reason)
  t.equal(status.outcome.callSucceeded, true, 'the call ran')
  t.equal(await client.readContract({ address: usdc, abi: blacklistAbi, functionName: 'isBlacklisted', args: [account.address] }), true, 'the account is blacklisted')
  t.same(
    { charged: status.outcome.chargedBaseUnits, refunded: status.outcome.refundedBaseUnits },
    { charged: status.outcome.paidBaseUnits, refunded: '0' },
    'no refund could be made: the payment is kept whole',
  )
  t.equal((await balance(payee)) - vaultBefore, BigInt(status.outcome.paidBaseUnits), 'the vault holds all of it')
  const receipt = await client.getTransactionReceipt({ hash: status.transaction.hash })
  t.equal(receipt.status, 'success', 'the transaction did not revert')
  const entry = (await bruno.ledger()).find((line) => line.hash === status.transaction.hash)!
  t.ok(entry.keptWei >= entry.spentWei, `kept ${entry.keptWei} wei ≥ spent ${entry.spentWei} wei`)
})
