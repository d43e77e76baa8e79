// The hello group's own tests, as a third party writes them: nothing but Bruno's exports
// (`bruno/testing`, `bruno/devnet`) and viem, run with `node --import tsx --test` against an
// installed Bruno (CI runs them from Bruno's packed tarball: test/package.test.ts).
import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { mintUsdc } from 'bruno/devnet'
import { serveOnDevnet } from 'bruno/testing'
import { decodeEventLog, parseAbi } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'

// This folder is the group: its package.json names index.ts; its devnet hook deploys a guestbook.
const group = fileURLToPath(new URL('..', import.meta.url))
const served = await serveOnDevnet({ plugins: ['.'], dir: group, groups: ['bruno', 'calibur', 'hello'] })
after(() => served.stop())
const mcp = served.mcp(['bruno', 'calibur', 'hello'])
const { deployment } = served.devnet

test('hello_greet greets a token the chain is configured with', async () => {
  const greeting = await mcp.call('hello_greet', { chain: 'local', token: 'USDC' })
  assert.match(JSON.stringify(greeting), /Hello/)
})

test('a guestbook signature relayed through Calibur ends done, paid in USDC, the runner no poorer', async () => {
  const key = generatePrivateKey()
  const account = privateKeyToAccount(key)
  await mintUsdc(served.devnet.rpcUrl, deployment, account.address, 20_000_000n)
  // An agent's account: USDC, no ETH; delegated to Calibur (where the deployment says it is) in the runner's own transaction.
  const { delegates } = JSON.parse(await mcp.readResource('bruno://local/config'))
  const calibur = delegates.find((delegate) => delegate.name === 'Calibur').address
  const authorization = await account.signAuthorization({ contractAddress: calibur, chainId: deployment.chainId, nonce: 0 })
  const authorizationList = [{ chainId: authorization.chainId, address: authorization.address, nonce: authorization.nonce, r: authorization.r, s: authorization.s, yParity: authorization.yParity }]
  const { calls } = await mcp.call('hello_sign_guestbook', { chain: 'local', message: 'gm from a packed Bruno' })
  const batch = await mcp.call('calibur_batch', { chain: 'local', account: account.address, calls, token: 'USDC', authorizationList })
  const executed = await mcp.call('calibur_execute', {
    chain: 'local',
    paymentTypedData: batch.paymentTypedData,
    paymentSignature: await account.signTypedData(batch.paymentTypedData),
    typedData: batch.typedData,
    signature: await account.signTypedData(batch.typedData),
    authorizationList,
  })
  const accepted = await mcp.call('submit', { chain: 'local', call: executed.call, payment: executed.payment, authorizationList })
  let status = accepted
  for (let tries = 0; status.stage !== 'done' && status.stage !== 'failed' && tries < 200; tries++) {
    await new Promise((resolve) => setTimeout(resolve, 100))
    status = await mcp.call('status', { id: accepted.id })
  }
  assert.equal(status.stage, 'done', status.reason)
  assert.equal(status.outcome.callSucceeded, true)
  const receipt = await served.client.getTransactionReceipt({ hash: status.transaction.hash })
  const signed = receipt.logs
    .filter((log) => log.address.toLowerCase() === calls[0].to.toLowerCase())
    .map((log) => decodeEventLog({ abi: parseAbi(['event Signed(address indexed by, string message)']), data: log.data, topics: log.topics }))
  assert.deepEqual(signed.map((event) => event.args), [{ by: account.address, message: 'gm from a packed Bruno' }])
  assert.deepEqual(await served.violations(), [], 'every runner transaction was paid at least its cost')
})
