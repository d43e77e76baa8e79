// The simple7702 group's own tests, as a third party writes them: nothing but Bruno's exports
// (`bruno/testing`, `bruno/devnet`) and viem, run with `node --import tsx --test` against an
// installed Bruno (CI runs them from Bruno's packed tarball: test/package.test.ts).
import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { mintUsdc } from 'bruno/devnet'
import { serveOnDevnet } from 'bruno/testing'
import { createWalletClient, encodeFunctionData, erc20Abi, http, parseAbi } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'

const group = fileURLToPath(new URL('..', import.meta.url))
const served = await serveOnDevnet({ plugins: ['.'], dir: group, groups: ['bruno', 'simple7702'] })
after(() => served.stop())
const mcp = served.mcp()
const { deployment } = served.devnet
// The group's options on this chain, as its devnet hook gave them.
const { implementation, gate } = served.config.plugins[0].options
const usdcOf = (address) => served.client.readContract({ address: deployment.usdc, abi: erc20Abi, functionName: 'balanceOf', args: [address] })

// simple7702_execute of the batch's two operations, each signed by the account's own key as it came.
async function executedBy(account, batch, authorizationList) {
  const [paymentSignature, signature] = [await account.signTypedData(batch.paymentTypedData), await account.signTypedData(batch.typedData)]
  return mcp.call('simple7702_execute', { chain: 'local', paymentTypedData: batch.paymentTypedData, paymentSignature, typedData: batch.typedData, signature, authorizationList })
}

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
  const executed = await executedBy(account, batch, authorizationList)
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

test('a stranger holding the signed operations cannot run the payment first: the RunnerGate refuses it outside the Runner\'s payment phase', async () => {
  const account = privateKeyToAccount(generatePrivateKey())
  await mintUsdc(served.devnet.rpcUrl, deployment, account.address, 20_000_000n)
  const signed = await account.signAuthorization({ contractAddress: implementation, chainId: deployment.chainId, nonce: 0 })
  const authorizationList = [{ chainId: signed.chainId, address: signed.address, nonce: signed.nonce, r: signed.r, s: signed.s, yParity: signed.yParity }]
  const friend = privateKeyToAccount(generatePrivateKey()).address
  const call = { to: deployment.usdc, value: '0', data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [friend, 1_000_000n] }) }
  const batch = await mcp.call('simple7702_batch', { chain: 'local', account: account.address, calls: [call], token: 'USDC', authorizationList })
  assert.equal(batch.paymentTypedData.message.paymasterAndData.slice(0, 42), gate.toLowerCase(), 'the payment operation\'s paymaster is the gate')
  const executed = await executedBy(account, batch, authorizationList)
  // The stranger delegates the account with its signed authorization and bundles the payment operation itself.
  const stranger = createWalletClient({ account: privateKeyToAccount(deployment.demoAccounts[0].privateKey), transport: http(served.devnet.rpcUrl) })
  const entryPoint = executed.call.to
  const hash = await stranger.sendTransaction({ chain: null, to: entryPoint, data: executed.payment.batch, gas: 1_000_000n, authorizationList: [{ ...signed }] })
  const receipt = await served.client.waitForTransactionReceipt({ hash })
  assert.equal(receipt.status, 'reverted', 'the stranger\'s bundle reverts whole')
  const nonceOf = () => served.client.readContract({ address: entryPoint, abi: parseAbi(['function getNonce(address, uint192) view returns (uint256)']), functionName: 'getNonce', args: [account.address, 0n] })
  assert.equal(await nonceOf(), 0n, 'the payment operation\'s nonce is unspent')
  assert.equal(await usdcOf(account.address), 20_000_000n, 'nothing paid')
  // The account is delegated now (the stranger's transaction carried its authorization): submit without it.
  const status = await settled((await mcp.call('submit', { chain: 'local', call: executed.call, payment: executed.payment })).id)
  assert.equal(status.stage, 'done', status.reason)
  assert.equal(await usdcOf(friend), 1_000_000n)
  assert.equal(await nonceOf(), 2n)
  assert.deepEqual(await served.violations(), [], 'the runner was paid at least what it spent')
})
