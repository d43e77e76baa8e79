import { mkdirSync, writeFileSync } from 'node:fs'
import { ExactEvmScheme } from '@x402/evm/exact/client'
import { decodePaymentResponseHeader, wrapFetchWithPaymentFromConfig } from '@x402/fetch'
import { createPublicClient, createTestClient, createWalletClient, http, zeroAddress, type Address, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import { devnetChain } from '../core/devnet/chain.ts'
import { DEVNET_TREASURY } from '../config/devnet.ts'
import type { DevnetDeployment } from '../core/devnet/deploy.ts'
import { McpToolClient } from '../core/testing/mcpClient.ts'
import { devnetPricing, runnerLedger } from '../core/testing/runnerLedger.ts'
import { CALIBUR_ADDRESS } from '../plugins/calibur/networkOptions.ts'
import { metaMaskContracts } from '../plugins/metamask/contracts.ts'
import { executeCaliburBatch } from '../test/fixtures/caliburExecute.ts'
import { signTransfer } from '../test/fixtures/signedTransfer.ts'
import { machine } from './machine.ts'
import { startServerChild } from './processes.ts'
import { giftCall, withRelayDevnet, type Payer } from './relay.ts'

/**
 * `npm run bench:refunds [-- --smoke]`: issue 32's figures — what a user pays per flow before and
 * after the relay charges what a transaction cost, at the same fees, and the gas the refund adds.
 *
 * One fresh devnet (bench/relay.ts's: anvil, the contracts, fresh accounts holding only USDC); Bruno
 * in a child process, twice in turn on it: **before**, its payee an account (the treasury: a payee
 * that refunds nothing keeps every payment whole, as every payee did before issue 32), then
 * **after**, its payee the Runner's PayeeVault (the devnet's default: the rest of each payment goes
 * back in the same transaction). Each flow runs `rounds` times in each, each time on a fresh account
 * paying a fresh address, through MCP as an agent would (x402 through the official client). Every block the relays land in
 * has a base fee of exactly 1 gwei (`anvil_setNextBlockBaseFeePerGas`, and one mined block before
 * each quote so that the quote reads it too): the two runs see the same fees. Per flow, medians:
 * what the user paid (the payment signed; before, all of it was kept), what it was charged and
 * refunded after, the gas used each way (their difference: what the refund adds, the settlement's
 * arithmetic and the charge's calldata included), and what the runner kept ÷ spent after.
 */

const smoke = process.argv.includes('--smoke')
const rounds = smoke ? 1 : 5
const log = (line: string) => process.stdout.write(`${line}\n`)
const GROUPS = 'bruno,3009,calibur,erc20,uniswap,metamask'
const ONE_GWEI = 1_000_000_000n

/** One relay as it settled: the payment, what was kept and refunded (base units), its gas, and the runner's wei spent and kept. */
interface Relayed {
  readonly paid: bigint
  readonly charged: bigint
  readonly refunded: bigint
  readonly gasUsed: bigint
  readonly spentWei: bigint
  readonly keptWei: bigint
}

interface Flow {
  readonly name: string
  /** Runs the flow once for `payer` against the Bruno at `url`; returns the settled status's transaction hash. */
  run(url: string, payer: PrivateKeyAccount): Promise<Hex>
}

await withRelayDevnet(2 * 6 * rounds, log, async (devnet) => {
  const { deployment } = devnet
  const transport = http(devnet.rpcUrl)
  const client = createPublicClient({ chain: devnetChain(), transport, pollingInterval: 50 })
  const testClient = createTestClient({ mode: 'anvil', transport })
  const sponsor = createWalletClient({ account: privateKeyToAccount(deployment.deployer.privateKey), chain: devnetChain(), transport })
  const usdc = { address: deployment.usdc, name: 'USD Coin', version: '2', chainId: deployment.chainId }

  /** The next block, and the one after (where the relay lands), at 1 gwei: the quote reads the first, the relay pays the second. */
  const steadyFees = async () => {
    await testClient.setNextBlockBaseFeePerGas({ baseFeePerGas: ONE_GWEI })
    await testClient.mine({ blocks: 1 })
    await testClient.setNextBlockBaseFeePerGas({ baseFeePerGas: ONE_GWEI })
  }
  const delegateTo = async (account: PrivateKeyAccount, contractAddress: Address) => {
    const authorization = await sponsor.signAuthorization({ account, contractAddress })
    const receipt = await client.waitForTransactionReceipt({ hash: await sponsor.sendTransaction({ to: sponsor.account.address, authorizationList: [authorization] }) })
    if (receipt.status !== 'success') throw new Error('the delegation reverted')
  }
  const settled = async (mcp: McpToolClient, id: string): Promise<Hex> => {
    for (;;) {
      const status = await mcp.call('status', { id })
      if (status.stage === 'done') return status.transaction.hash
      if (status.stage === 'failed') throw new Error(`submission ${id} failed: ${status.reason}`)
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
  const mcpAt = (url: string) => new McpToolClient(`${url}/mcp/${GROUPS}`)
  const payerOf = (account: PrivateKeyAccount): Payer => ({ key: keyOf.get(account.address)!, address: account.address })

  /** A signed transfer pays for `call` (flow 2): quote, the fee signed to the quoted payee, submit. */
  const paidBySignedTransfer = async (url: string, payer: PrivateKeyAccount, call: { to: Address; data: Hex }) => {
    const mcp = mcpAt(url)
    await steadyFees()
    const quote = await mcp.call('quote', { chain: 'local', call, token: 'USDC', payment: 'authorization' })
    const fee = await signTransfer(payerOf(payer).key, usdc, quote.payee, BigInt(quote.amountBaseUnits))
    const accepted = await mcp.call('submit', { chain: 'local', call, payment: { token: deployment.usdc, authorization: fee.message, signature: fee.signature } })
    return settled(mcp, accepted.id)
  }
  /** A delegated Calibur account signs its payment batch and its calls batch; the relay sends both. */
  const caliburBatch = async (url: string, payer: PrivateKeyAccount, calls: (mcp: McpToolClient) => Promise<Record<string, unknown>>) => {
    const mcp = mcpAt(url)
    await delegateTo(payer, CALIBUR_ADDRESS)
    await steadyFees()
    const batch = await mcp.call('calibur_batch', { chain: 'local', account: payer.address, token: 'USDC', ...(await calls(mcp)) })
    const executed = await executeCaliburBatch(mcp, payer, batch)
    const accepted = await mcp.call('submit', { chain: 'local', call: executed.call, payment: executed.payment })
    return settled(mcp, accepted.id)
  }
  const transferCalls = async (mcp: McpToolClient) => ({ calls: (await mcp.call('erc20_transfer', { chain: 'local', token: 'USDC', to: freshAddress(), amount: '1' })).calls })

  const flows: Flow[] = [
    { name: 'flow 2: signed transfer, a gift (EIP-3009 call)', run: async (url, payer) => paidBySignedTransfer(url, payer, await giftCall(deployment, payerOf(payer), freshAddress())) },
    { name: 'flow 2: signed transfer, the payment alone', run: (url, payer) => paidBySignedTransfer(url, payer, { to: zeroAddress, data: '0x' }) },
    { name: 'flow 1: Calibur batch, 1 USDC transfer', run: (url, payer) => caliburBatch(url, payer, transferCalls) },
    {
      name: 'flow 3: Calibur batch, swap 10 USDC to ETH',
      run: (url, payer) =>
        caliburBatch(url, payer, async (mcp) => {
          const swap = await mcp.call('uniswap_swap_to_eth', { chain: 'local', token: 'USDC', amount: '10', recipient: payer.address })
          return { calls: swap.calls, approvals: swap.approvals }
        }),
    },
    {
      name: 'flow 1: MetaMask delegation, 1 USDC transfer',
      run: async (url, payer) => {
        const mcp = mcpAt(url)
        await delegateTo(payer, metaMaskContracts.delegator)
        await steadyFees()
        const batch = await mcp.call('metamask_batch', { chain: 'local', account: payer.address, token: 'USDC', ...(await transferCalls(mcp)) })
        const executed = await mcp.call('metamask_execute', { chain: 'local', typedData: batch.typedData, batches: batch.batches, signature: await payer.signTypedData(batch.typedData as never) })
        const accepted = await mcp.call('submit', { chain: 'local', call: executed.call, payment: executed.payment })
        return settled(mcp, accepted.id)
      },
    },
    {
      name: 'x402: a gift, one fetch of @x402/fetch',
      run: async (url, payer) => {
        const call = await giftCall(deployment, payerOf(payer), freshAddress())
        const pay = wrapFetchWithPaymentFromConfig(fetch, {
          schemes: [{ network: 'eip155:*', client: new ExactEvmScheme(payer) }],
          spendControls: { allowedAssets: [{ network: `eip155:${deployment.chainId}`, asset: deployment.usdc }] },
        })
        await steadyFees()
        const response = await pay(`${url}/local/v1/x402`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ call }) })
        const answer = decodePaymentResponseHeader(response.headers.get('payment-response') ?? '')
        if (response.status !== 200 || !answer.success) throw new Error(`x402: HTTP ${response.status} ${JSON.stringify(answer)}`)
        return answer.transaction as Hex
      },
    },
  ]

  // Each transfer goes to an address that holds no USDC yet, so that every relay stores the same new balance.
  const freshAddress = () => privateKeyToAccount(generatePrivateKey()).address
  const keyOf = new Map(devnet.payers.map((payer) => [payer.address, payer.key]))
  const accounts = devnet.payers.map((payer) => privateKeyToAccount(payer.key))

  const hashes: Record<string, { before: Hex[]; after: Hex[] }> = Object.fromEntries(flows.map((flow) => [flow.name, { before: [], after: [] }]))
  for (const phase of ['before', 'after'] as const) {
    const network = phase === 'before' ? { BENCH_NETWORK: JSON.stringify({ payee: DEVNET_TREASURY }) } : {}
    const bruno = await startServerChild('bruno', [], { ...process.env, BENCH_DEVNET: JSON.stringify(deployment satisfies DevnetDeployment), BENCH_RPC_URL: devnet.rpcUrl, BENCH_GROUPS: GROUPS, ...network })
    try {
      for (const flow of flows) {
        for (let round = 0; round < rounds; round++) hashes[flow.name]![phase].push(await flow.run(bruno.url, accounts.pop()!))
        log(`  ${phase}: ${flow.name}: ${rounds} relayed`)
      }
    } finally {
      await bruno.stop()
    }
  }

  // What each relay paid, kept and refunded (the Runner's Relayed event), spent, and kept at the pool's price.
  const ledger = new Map((await runnerLedger(devnet.rpcUrl, deployment.runner.operator.address, devnetPricing(deployment))).map((entry) => [entry.hash, entry]))
  const median = (values: readonly bigint[]) => [...values].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))[Math.floor(values.length / 2)]!
  const entriesOf = (list: readonly Hex[]): Relayed[] =>
    list.map((hash) => {
      const entry = ledger.get(hash)
      if (!entry || entry.status !== 'success') throw new Error(`${hash}: no successful runner transaction`)
      return { paid: entry.received, charged: entry.charged, refunded: entry.refunded, gasUsed: entry.gasUsed, spentWei: entry.spentWei, keptWei: entry.keptWei }
    })
  const host = machine()
  const rows = flows.map((flow) => {
    const [before, after] = [entriesOf(hashes[flow.name]!.before), entriesOf(hashes[flow.name]!.after)]
    const beforePaid = median(before.map((each) => each.paid))
    const afterCharged = median(after.map((each) => each.charged))
    const beforeGas = median(before.map((each) => each.gasUsed))
    const afterGas = median(after.map((each) => each.gasUsed))
    return {
      flow: flow.name,
      beforePaid: beforePaid.toString(),
      afterPaid: median(after.map((each) => each.paid)).toString(),
      afterCharged: afterCharged.toString(),
      afterRefunded: median(after.map((each) => each.refunded)).toString(),
      userPaysAfterOverBefore: Number(afterCharged) / Number(beforePaid),
      beforeGas: beforeGas.toString(),
      afterGas: afterGas.toString(),
      refundGas: (afterGas - beforeGas).toString(),
      // Per relay after, what the payee kept (at the pool's price in its block) ÷ what the runner spent; the median.
      keptOverSpent: Number(median(after.map((each) => (each.keptWei * 1_000_000n) / each.spentWei))) / 1_000_000,
    }
  })
  log(`\nBruno refunds bench${smoke ? ' (smoke)' : ''}: ${host.cpu}, ${host.cores} cores, Node ${host.node}, commit ${host.commit}; ${rounds} relay(s) per flow and way, base fee 1 gwei`)
  log('| flow | before: paid, all kept | after: paid | after: charged | after: refunded | user pays after ÷ before | gas before | gas after | the refund adds | kept ÷ spent after |')
  log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|')
  for (const row of rows) {
    log(`| ${row.flow} | ${row.beforePaid} | ${row.afterPaid} | ${row.afterCharged} | ${row.afterRefunded} | ${row.userPaysAfterOverBefore.toFixed(3)} | ${row.beforeGas} | ${row.afterGas} | ${row.refundGas} | ${row.keptOverSpent.toFixed(4)} |`)
  }
  mkdirSync(new URL('./out/', import.meta.url), { recursive: true })
  writeFileSync(new URL('./out/refunds.json', import.meta.url), `${JSON.stringify({ host, rounds, baseFeeGwei: 1, rows }, null, 2)}\n`)
})
