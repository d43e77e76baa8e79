import t from 'tap'
import { createPublicClient, createTestClient, encodeFunctionData, erc20Abi, getAddress, http, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { eip712DomainAbi } from '../../core/chain/tokenDomain.ts'
import { mintUsdc } from '../../core/devnet/fund.ts'
import { caliburDomainFromEip712Domain, caliburTypedData } from '../../plugins/calibur/typedData.ts'
import { encodeSignedExecute } from '../../plugins/calibur/executeCalldata.ts'
import { encodeTransfer } from '../../core/chain/erc20Calls.ts'
import { executionOf } from '../../plugins/metamask/batch.ts'
import { metaMaskContracts } from '../../plugins/metamask/contracts.ts'
import { delegationTypedData, encodeRedemption, paymentFirstDelegation, signedDelegation } from '../../plugins/metamask/delegation.ts'
import { startDevnetBruno } from '../fixtures/devnetBruno.ts'
import { signTransfer } from '../fixtures/signedTransfer.ts'
import { waitFor } from '../fixtures/waitFor.ts'
import { CALIBUR_ADDRESS } from '../../plugins/calibur/networkOptions.ts'

// Two payments for one signed batch (issue 31): a Calibur batch any executor may run is a call a
// signed transfer can pay for, and a second payment for the same batch, accepted while the first is
// in flight, would be charged for a call that can only fail (its nonce spent). The relay keeps one
// active submission per signed batch whatever pays (Delegate.callSpends): the second is refused as
// it is stored, and nothing is taken from it.

const bruno = await startDevnetBruno(t, { groups: ['bruno', 'calibur', 'metamask', '3009'] })
const { deployment } = bruno
const client = createPublicClient({ transport: http(deployment.rpcUrl) })
const chain = createTestClient({ mode: 'anvil', transport: http(deployment.rpcUrl) })
const usdc = deployment.usdc
const usdcDomain = { address: usdc, name: 'USD Coin', version: '2', chainId: deployment.chainId }
const payee = getAddress(bruno.config.networks[0]!.payee)
const usdcOf = (address: Hex) => client.readContract({ address: usdc, abi: erc20Abi, functionName: 'balanceOf', args: [address] })
/** The runner's latest paid relay, as its ledger reads it. */
const lastRelay = async () => (await bruno.ledger()).filter((entry) => entry.received > 0n).at(-1)!
const rest = async (path: string, body: unknown) => {
  const reply = await fetch(`${bruno.server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  return { status: reply.status, body: await reply.json() }
}

t.test('a signed Calibur batch paid twice by signed transfers: the second payment is refused untaken, the batch runs once', async (t) => {
  // The account: delegated to Calibur, holding USDC; its batch gives a friend 1 USDC, for any executor.
  const key = generatePrivateKey()
  const account = privateKeyToAccount(key)
  await mintUsdc(deployment.rpcUrl, deployment, account.address, 10_000_000n)
  await chain.setCode({ address: account.address, bytecode: `0xef0100${CALIBUR_ADDRESS.slice(2)}` })
  const friend = privateKeyToAccount(generatePrivateKey()).address
  const domain = caliburDomainFromEip712Domain(await client.readContract({ address: account.address, abi: eip712DomainAbi, functionName: 'eip712Domain' }))
  const typedData = caliburTypedData({
    domain,
    batch: { calls: [{ to: usdc, value: '0', data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [friend, 1_000_000n] }) }], revertOnFailure: true },
    nonce: 0n,
    deadline: 0n,
  })
  const call = { to: account.address, data: encodeSignedExecute({ message: typedData.message, signature: await account.signTypedData(typedData as never) }) }

  // Its payer: a plain account with USDC, signing two transfers to the payee at the quoted price.
  const payerKey = generatePrivateKey()
  const payer = privateKeyToAccount(payerKey).address
  await mintUsdc(deployment.rpcUrl, deployment, payer, 10_000_000n)
  const quote = await rest('/local/v1/quote', { call, token: 'USDC', payment: 'authorization' })
  t.equal(quote.status, 200, JSON.stringify(quote.body))
  const amount = BigInt(quote.body.amountBaseUnits)
  const paying = async () => {
    const signed = await signTransfer(payerKey, usdcDomain, payee, amount)
    return { token: usdc, authorization: signed.message, signature: signed.signature }
  }

  await chain.setAutomine(false)
  try {
    const first = await rest('/local/v1/submit', { call, payment: await paying() })
    t.equal(first.status, 202, JSON.stringify(first.body))
    const operator = deployment.runner.operator.address
    await waitFor(() => client.getTransactionCount({ address: operator, blockTag: 'pending' }), (count) => count > 0, 'the first in the pool', 15_000)
    const second = await rest('/local/v1/submit', { call, payment: await paying() })
    t.equal(second.status, 422, 'the second payment for the same batch is refused')
    t.equal(second.body.error.code, 'refused')
    t.equal(
      second.body.error.message,
      `refused: the signed batch this submission spends (calibur:local:${account.address}:0) is already being relayed by the submission ${first.body.id}: a signed batch is relayed, and paid for, once. Ask status with that id; nothing was taken`,
    )
  } finally {
    await chain.setAutomine(true)
  }
  await chain.mine({ blocks: 1 })
  const payerBefore = 10_000_000n
  await waitFor(() => usdcOf(friend), (balance) => balance === 1_000_000n, 'the batch ran', 15_000)
  t.equal(await usdcOf(friend), 1_000_000n, 'the batch ran once')
  t.equal(await usdcOf(payer), payerBefore - (await lastRelay()).charged, 'its payer paid once: the charge, the rest of its payment refunded')
})

t.test('a MetaMask delegation paid by its own payment batch, then again by a signed transfer: the second is refused untaken, the calls run once', async (t) => {
  const key = generatePrivateKey()
  const account = privateKeyToAccount(key)
  await mintUsdc(deployment.rpcUrl, deployment, account.address, 20_000_000n)
  await chain.setCode({ address: account.address, bytecode: `0xef0100${metaMaskContracts.delegator.slice(2)}` })
  const friend = privateKeyToAccount(generatePrivateKey()).address
  // Generous: well over what the devnet charges for a MetaMask relay (≈ 2.5 USDC).
  const amount = 8_000_000n
  const leg = executionOf(encodeTransfer({ token: usdc, to: payee, amount }))
  const calls = [executionOf(encodeTransfer({ token: usdc, to: friend, amount: 1_000_000n }))]
  const delegation = paymentFirstDelegation({ account: account.address, runner: deployment.runner.contract, leg, calls, deadline: BigInt(Math.floor(Date.now() / 1000) + 600), salt: 7n })
  const typed = delegationTypedData(deployment.chainId, delegation)
  const signed = signedDelegation(delegation, await account.signTypedData({ ...typed, message: { ...typed.message, salt: delegation.salt } } as never))
  const call = { to: metaMaskContracts.delegationManager, data: encodeRedemption(signed, calls) }
  const own = { token: usdc, amountBaseUnits: amount.toString(), batch: encodeRedemption(signed, [leg]) }

  const payerKey = generatePrivateKey()
  const payer = privateKeyToAccount(payerKey).address
  await mintUsdc(deployment.rpcUrl, deployment, payer, 20_000_000n)
  // A MetaMask delegation's calls run only after its own payment batch (issue 43, point 2): no other
  // payment is even quoted for them.
  const paidByAnother = "refused: a MetaMask delegation's calls run only after its own payment batch, in the same relay: pay with the payment metamask_execute returned (its payment.batch), not with another payment"
  const quote = await rest('/local/v1/quote', { call, token: 'USDC', payment: 'authorization' })
  t.equal(quote.status, 422)
  t.equal(quote.body.error.message, paidByAnother)
  const signedTransfer = await signTransfer(payerKey, usdcDomain, payee, 3_000_000n)

  await chain.setAutomine(false)
  try {
    const first = await rest('/local/v1/submit', { call, payment: own })
    t.equal(first.status, 202, JSON.stringify(first.body))
    const operator = deployment.runner.operator.address
    await waitFor(() => client.getTransactionCount({ address: operator, blockTag: 'pending' }), (count) => count > 0, 'the first in the pool', 15_000)
    const second = await rest('/local/v1/submit', { call, payment: { token: usdc, authorization: signedTransfer.message, signature: signedTransfer.signature } })
    t.equal(second.status, 422, 'the second payment for the same delegation is refused')
    t.equal(second.body.error.message, paidByAnother)
  } finally {
    await chain.setAutomine(true)
  }
  await chain.mine({ blocks: 1 })
  await waitFor(() => usdcOf(friend), (balance) => balance === 1_000_000n, 'the calls ran', 15_000)
  t.equal(await usdcOf(account.address), 20_000_000n - 1_000_000n - (await lastRelay()).charged, 'the account paid its own payment once: the charge, the rest refunded')
  t.equal(await usdcOf(payer), 20_000_000n, 'the second payer paid nothing')
})
