// The simple7702 group's own tests, as a third party writes them: nothing but Bruno's exports
// (`bruno/testing`, `bruno/devnet`) and viem, run with `node --import tsx --test` against an
// installed Bruno (CI runs them from Bruno's packed tarball: test/package.test.ts).
import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { mintUsdc } from 'bruno/devnet'
import { serveOnDevnet } from 'bruno/testing'
import { encodeFunctionData, erc20Abi } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'

const group = fileURLToPath(new URL('..', import.meta.url))
const served = await serveOnDevnet({ plugins: ['.'], dir: group, groups: ['bruno', 'simple7702'] })
after(() => served.stop())
const mcp = served.mcp()
const { deployment } = served.devnet
// The group's options on this chain, as its devnet hook gave them.
const { implementation } = served.config.plugins[0].options
const usdcOf = (address) => served.client.readContract({ address: deployment.usdc, abi: erc20Abi, functionName: 'balanceOf', args: [address] })

async function settled(id) {
  for (let tries = 0; tries < 200; tries++) {
    const status = await mcp.call('status', { id })
    if (status.stage === 'done' || status.stage === 'failed') return status
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`submission ${id} did not settle`)
}

test('an account with USDC and no ETH, delegated in the runner\'s transaction, sends 1 USDC: two operations, the payment first', async () => {
  const account = privateKeyToAccount(generatePrivateKey())
  await mintUsdc(served.devnet.rpcUrl, deployment, account.address, 20_000_000n)
  const friend = privateKeyToAccount(generatePrivateKey()).address
  const signed = await account.signAuthorization({ contractAddress: implementation, chainId: deployment.chainId, nonce: 0 })
  const authorizationList = [{ chainId: signed.chainId, address: signed.address, nonce: signed.nonce, r: signed.r, s: signed.s, yParity: signed.yParity }]
  const call = { to: deployment.usdc, value: '0', data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [friend, 1_000_000n] }) }
  const batch = await mcp.call('simple7702_batch', { chain: 'local', account: account.address, calls: [call], token: 'USDC', authorizationList })
  const executed = await mcp.call('simple7702_execute', {
    chain: 'local',
    paymentTypedData: batch.paymentTypedData,
    paymentSignature: await account.signTypedData(batch.paymentTypedData),
    typedData: batch.typedData,
    signature: await account.signTypedData(batch.typedData),
    authorizationList,
  })
  const status = await settled((await mcp.call('submit', { chain: 'local', call: executed.call, payment: executed.payment, authorizationList })).id)
  assert.equal(status.stage, 'done', status.reason)
  assert.equal(status.outcome.callSucceeded, true)
  assert.equal(await usdcOf(friend), 1_000_000n)
  // The payee (the devnet's PayeeVault) kept the charge and sent the rest of the payment back.
  const { paidBaseUnits, chargedBaseUnits, refundedBaseUnits } = status.outcome
  assert.equal(paidBaseUnits, batch.payment.amountBaseUnits)
  assert.equal(BigInt(chargedBaseUnits) + BigInt(refundedBaseUnits), BigInt(paidBaseUnits))
  assert.equal(await usdcOf(account.address), 20_000_000n - 1_000_000n - BigInt(chargedBaseUnits))
  assert.deepEqual(await served.violations(), [], 'the runner was paid at least what it spent')
})
