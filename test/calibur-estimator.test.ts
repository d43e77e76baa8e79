import t from 'tap'
import { concat, createPublicClient, createWalletClient, http, type Address, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { devnetChain } from '../core/devnet/chain.ts'
import { mintUsdc } from '../core/devnet/fund.ts'
import { encodeTransfer } from '../core/chain/erc20Calls.ts'
import { startDevnetBruno } from './fixtures/devnetBruno.ts'
import { RawMcpClient } from './fixtures/mcpHttp.ts'
import { waitFor } from './fixtures/waitFor.ts'
import { signedBatches } from './fixtures/caliburSignatures.ts'
import { CALIBUR_ADDRESS } from '../plugins/calibur/networkOptions.ts'

// calibur_batch estimates, before the batch is signed, the gas limit submit will price. Across batch
// sizes (1 to 64 calls) and call sizes (a 68-byte ERC-20 transfer, the same with 192 more bytes of
// data), the estimate must cover what the runner signed and what the transaction used: a shortfall
// means a payment that submit refuses, or a leg priced below the gas.

// Up to 64 calls of 260 bytes: 30 KB of calldata, whose revert would cost 800k gas, over the default
// relay.maxRevertGas (300,000). Measuring estimates, not that bound: it is raised here.
const bruno = await startDevnetBruno(t, {
  groups: ['bruno', 'calibur'],
  pollMs: 100,
  configure: (config) => ({ ...config, networks: config.networks.map((network) => ({ ...network, relay: { ...network.relay, maxRevertGas: 2_000_000 } })) }),
})
const { deployment } = bruno
const chain = devnetChain(deployment.chainId)
const transport = http(deployment.rpcUrl)
const client = createPublicClient({ chain, transport, pollingInterval: 50 })
const sponsor = createWalletClient({ account: privateKeyToAccount(deployment.deployer.privateKey), chain, transport })
const mcp = new RawMcpClient(`${bruno.mcpUrl}/bruno,calibur`)

const account = privateKeyToAccount(generatePrivateKey())
await mintUsdc(deployment.rpcUrl, deployment, account.address, 1_000_000_000n)
const delegation = await sponsor.signAuthorization({ account, contractAddress: CALIBUR_ADDRESS })
await client.waitForTransactionReceipt({ hash: await sponsor.sendTransaction({ to: sponsor.account.address, authorizationList: [delegation] }) })

// Each call pays a fresh recipient (a cold account and a zero balance slot: the dearest transfer).
function calls(count: number, extraBytes: number): { to: Address; value: string; data: Hex }[] {
  return Array.from({ length: count }, () => {
    const transfer = encodeTransfer({ token: deployment.usdc, to: privateKeyToAccount(generatePrivateKey()).address, amount: 1n })
    const data = transfer.data as Hex
    return { to: transfer.to as Address, value: '0', data: extraBytes > 0 ? concat([data, `0x${'ab'.repeat(extraBytes)}`]) : data }
  })
}

const rows: string[] = []
for (const extraBytes of [0, 192]) {
  for (const count of [1, 2, 8, 16, 32, 64]) {
    t.test(`${count} call(s) of ${68 + extraBytes} bytes`, async (t) => {
      const batch = await mcp.call('calibur_batch', { chain: 'local', account: account.address, calls: calls(count, extraBytes), token: 'USDC' })
      const executed = await mcp.call('calibur_execute', { chain: 'local', ...(await signedBatches(account, batch)) })
      const accepted = await mcp.call('submit', { chain: 'local', call: executed.call, payment: executed.payment })
      const status = await waitFor(() => mcp.call('status', { id: accepted.id }), (view: any) => view.stage === 'done' || view.stage === 'failed', 'the batch to settle', 30_000)
      t.equal(status.stage, 'done', status.reason)
      t.equal(status.outcome.callSucceeded, true, 'every call ran')
      const [sent, receipt] = await Promise.all([client.getTransaction({ hash: status.transaction.hash }), client.getTransactionReceipt({ hash: status.transaction.hash })])
      const estimated = BigInt(batch.gas.estimated)
      t.ok(estimated >= receipt.gasUsed, `estimate ${estimated} ≥ gas used ${receipt.gasUsed}`)
      t.ok(estimated >= sent.gas, `estimate ${estimated} ≥ the limit the runner signed ${sent.gas}`)
      rows.push(
        `${String(count).padStart(2)} × ${68 + extraBytes} B: estimated ${estimated}, signed ${sent.gas}, used ${receipt.gasUsed}; ` +
          `estimate ÷ used ${(Number(estimated) / Number(receipt.gasUsed)).toFixed(3)}, estimate ÷ signed ${(Number(estimated) / Number(sent.gas)).toFixed(3)}`,
      )
    })
  }
}
t.teardown(() => {
  for (const row of rows) console.log(`# ${row}`)
})
