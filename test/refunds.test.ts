import t, { type Test } from 'tap'
import { createPublicClient, encodeFunctionData, erc20Abi, getAddress, http, parseSignature, zeroAddress, type Address, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { mintUsdc } from '../core/devnet/fund.ts'
import { eip3009Abi } from '../plugins/3009/abi.ts'
import { startDevnetBruno } from './fixtures/devnetBruno.ts'
import { RawMcpClient } from './fixtures/mcpHttp.ts'
import { signTransfer } from './fixtures/signedTransfer.ts'
import { waitFor } from './fixtures/waitFor.ts'

// Issue 32 through the relay: the devnet's payee is its PayeeVault, so every relay signs a charge and the payer gets
// back, in the same transaction, what the relay did not cost. Per transaction, from the runner ledger: what the
// payee kept is worth at least what the runner spent, and at most the markup (5 %) and 1 % more.

const bruno = await startDevnetBruno(t, { groups: ['bruno', '3009'], refunds: true })
const { deployment } = bruno
const client = createPublicClient({ transport: http(deployment.rpcUrl) })
const mcp = new RawMcpClient(`${bruno.mcpUrl}/bruno,3009`)
const payee = getAddress(bruno.config.networks[0]!.payee)
const usdc = deployment.usdc
const token = { address: usdc, name: 'USD Coin', version: '2', chainId: deployment.chainId }
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

async function checkLedger(t: Test, hash: Hex, label: string) {
  const entry = (await bruno.ledger()).find((line) => line.hash === hash)!
  t.ok(entry.refunded > 0n, `${label}: ${entry.refunded} of ${entry.received} refunded`)
  t.equal(entry.charged + entry.refunded, entry.received)
  t.ok(entry.keptWei >= entry.spentWei, `${label}: kept ${entry.keptWei} wei ≥ spent ${entry.spentWei} wei`)
  const ratio = Number(entry.keptWei) / Number(entry.spentWei)
  t.ok(ratio <= 1.06, `${label}: kept ÷ spent = ${ratio.toFixed(4)}, at most 1 + 5 % markup + 1 %`)
  t.comment(`${label}: paid ${entry.received}, charged ${entry.charged}, refunded ${entry.refunded} (USDC base units); spent ${entry.spentWei} wei, kept ${entry.keptWei} wei, ratio ${ratio.toFixed(4)}`)
  return entry
}

t.test('flow 2 with a call: the payer pays the gift and the charge; the rest comes back in the same transaction', async (t) => {
  const key = generatePrivateKey()
  const account = privateKeyToAccount(key).address
  const friend = privateKeyToAccount(generatePrivateKey()).address
  await mintUsdc(deployment.rpcUrl, deployment, account, 50_000_000n)
  const gift = await signTransfer(key, token, friend, 10_000_000n)
  const { v, r, s } = parseSignature(gift.signature)
  const call = {
    to: usdc,
    data: encodeFunctionData({
      abi: eip3009Abi,
      functionName: 'transferWithAuthorization',
      args: [account, friend, 10_000_000n, 0n, BigInt(gift.message.validBefore), gift.message.nonce, Number(v), r, s],
    }),
  }
  const vaultBefore = await balance(payee)
  const { quote, status } = await relayPaidBySignedTransfer(key, call)
  t.equal(status.stage, 'done', status.reason)
  const { paidBaseUnits, chargedBaseUnits, refundedBaseUnits } = status.outcome
  t.equal(paidBaseUnits, quote.amountBaseUnits, 'the quoted payment arrived')
  t.equal(BigInt(chargedBaseUnits) + BigInt(refundedBaseUnits), BigInt(paidBaseUnits), 'status: charged and refunded make the payment')
  t.equal(await balance(account), 50_000_000n - 10_000_000n - BigInt(chargedBaseUnits), 'the account paid the gift and the charge only')
  t.equal((await balance(payee)) - vaultBefore, BigInt(chargedBaseUnits), 'the vault kept the charge')
  const entry = await checkLedger(t, status.transaction.hash, 'flow 2, a call')
  t.equal(entry.charged.toString(), chargedBaseUnits)
})

t.test('flow 2 without a call: the payment alone is refunded too', async (t) => {
  const key = generatePrivateKey()
  await mintUsdc(deployment.rpcUrl, deployment, privateKeyToAccount(key).address, 50_000_000n)
  const { status } = await relayPaidBySignedTransfer(key, { to: zeroAddress, data: '0x' })
  t.equal(status.stage, 'done', status.reason)
  t.ok(BigInt(status.outcome.refundedBaseUnits) > 0n)
  await checkLedger(t, status.transaction.hash, 'flow 2, no call')
})
