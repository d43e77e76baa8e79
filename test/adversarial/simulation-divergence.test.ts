import t, { type Test } from 'tap'
import { encodeFunctionData, erc20Abi, getAddress, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { encodeTransfer } from '../../core/chain/erc20Calls.ts'
import { encodeSignedExecute } from '../../plugins/calibur/executeCalldata.ts'
import { startDevnetBruno } from '../fixtures/devnetBruno.ts'
import { RawMcpClient } from '../fixtures/mcpHttp.ts'
import {
  adversaryChain,
  bindings,
  compileAdversary,
  divergentAbi,
  expectCallFailedAndPaid,
  fundedPayer,
  HEAVY_ROUNDS,
  transferPayment,
  type Binding,
  type Submitted,
} from './adversary.ts'
import { signedBatches } from '../fixtures/caliburSignatures.ts'
import { CALIBUR_ADDRESS } from '../../plugins/calibur/networkOptions.ts'

// Issue 12, part 1: simulation is not execution. Each call below does heavy work (≈1.1M gas) when it runs as
// simulated and burns every unit of gas it is given when it runs otherwise: by GASPRICE (a simulation without
// fee fields sees 0), NUMBER, TIMESTAMP, COINBASE, BASEFEE (a simulation at latest runs in the latest block;
// the transaction is mined in the next), and by gasleft() (a generous probe stipend against the sized one).
// Each goes through Bruno's real bindings — the EIP-3009 form over MCP, REST and JSON-RPC, and the Calibur
// flow calibur_batch → sign → calibur_execute → submit — and must end in one of the two ways DESIGN §3
// allows: refused at submit because the exact simulation caught it, or sent with the call failing on chain
// and the payment taken, the runner having spent no more than the payment was worth.

const bruno = await startDevnetBruno(t, { groups: ['bruno', 'calibur', 'erc20'], pollMs: 100 })
const { deployment } = bruno
const chain = adversaryChain(bruno)
const artifacts = compileAdversary()
const divergent = await chain.deploy(artifacts.Divergent)
const mcp = new RawMcpClient(`${bruno.mcpUrl}/bruno,calibur`)
const api = bindings(bruno, mcp)
const usdc = deployment.usdc
const payee = getAddress(bruno.config.networks[0]!.payee)

/** A call that diverges between simulation and inclusion: its data is built from the latest block. */
interface Divergence {
  readonly name: string
  readonly expected: 'refused' | 'paid'
  /** The call's data, built right before the batch or the submission (it may read the latest block). */
  data(): Promise<Hex>
  /** What the next block will differ by, changed once the runner's transaction waits in the pool. */
  beforeMine?(): Promise<void>
}

const latest = () => chain.client.getBlock({ blockTag: 'latest' })
const divergences: Divergence[] = [
  {
    name: 'BASEFEE (the call burns unless the block\'s base fee is the latest\'s)',
    expected: 'paid',
    data: async () => encodeFunctionData({ abi: divergentAbi, functionName: 'unlessBaseFee', args: [(await latest()).baseFeePerGas!, HEAVY_ROUNDS] }),
  },
  {
    name: 'GASPRICE (the call burns when the transaction pays for gas)',
    expected: 'refused',
    data: async () => encodeFunctionData({ abi: divergentAbi, functionName: 'onGasPrice', args: [HEAVY_ROUNDS] }),
  },
  {
    name: 'NUMBER (the call burns in any block after the latest)',
    expected: 'paid',
    data: async () => encodeFunctionData({ abi: divergentAbi, functionName: 'afterBlock', args: [(await latest()).number, HEAVY_ROUNDS] }),
  },
  {
    name: 'TIMESTAMP (the call burns in any later second than the latest block\'s)',
    expected: 'paid',
    data: async () => encodeFunctionData({ abi: divergentAbi, functionName: 'afterTime', args: [(await latest()).timestamp, HEAVY_ROUNDS] }),
    beforeMine: async () => chain.testClient.setNextBlockTimestamp({ timestamp: (await latest()).timestamp + 12n }),
  },
  {
    name: 'COINBASE (the call burns unless the latest block\'s builder builds the next)',
    expected: 'paid',
    data: async () => encodeFunctionData({ abi: divergentAbi, functionName: 'unlessCoinbase', args: [(await latest()).miner, HEAVY_ROUNDS] }),
    // Another builder builds the next block, as on any real chain.
    beforeMine: async () => chain.testClient.setCoinbase({ address: privateKeyToAccount(generatePrivateKey()).address }),
  },
  {
    name: 'gasleft() (the call burns when given less than 5M gas: cheap under the probe, burning under its stipend)',
    expected: 'refused',
    data: async () => encodeFunctionData({ abi: divergentAbi, functionName: 'whenGasPlenty', args: [5_000_000n, HEAVY_ROUNDS] }),
  },
]

const tally = { refused: 0, paid: 0 }
const transports: Binding[] = ['mcp', 'rest', 'rpc']
const names: Record<Binding, string> = { mcp: 'MCP submit', rest: 'REST POST /local/v1/submit', rpc: 'JSON-RPC bruno_sendTransaction', x402: 'x402 POST /local/v1/x402' }

/** Refused at submit: the exact simulation (fee fields, latest block, the sized stipend) saw the call fail. */
function expectRefusedInSimulation(t: Test, submitted: Submitted, label: string) {
  t.equal(submitted.accepted, false, `${label}: refused at submit`)
  if (submitted.accepted) return
  t.match(submitted.message, /the call fails in simulation/, `${label}: the refusal says the call fails in simulation`)
  t.match(submitted.message, /Nothing was sent/)
  t.comment(`refused | ${label} | ${submitted.message}`)
  tally.refused++
}

t.test('the EIP-3009 form: a divergent call after a signed transfer, over MCP, REST and JSON-RPC', async (t) => {
  for (const divergence of divergences) {
    for (const binding of transports) {
      const label = `3009 ${divergence.name} via ${names[binding]}`
      await t.test(label, async (t) => {
        const key = generatePrivateKey()
        const payer = await fundedPayer(bruno, chain, key, 100_000_000n)
        const call = { to: divergent, data: await divergence.data() }
        // Priced as a client would: quote, then a signed transfer of the quoted amount.
        const quoted = await mcp.callTool('quote', { chain: 'local', call, token: 'USDC', payment: 'authorization' })
        const amount = quoted.isError ? 50_000_000n : BigInt(quoted.structuredContent.amountBaseUnits)
        const payment = await transferPayment(bruno, key, amount)
        const payeeBefore = await chain.usdcOf(payee)
        const runnerNonce = await chain.client.getTransactionCount({ address: chain.runner })
        const { value: submitted, hash, blockNumber } = await chain.inOneBlock(() => api.submitAndSend(binding, { call, payment }), {
          ...(divergence.beforeMine ? { beforeMine: divergence.beforeMine } : {}),
        })
        if (divergence.expected === 'refused') {
          expectRefusedInSimulation(t, submitted, label)
          t.equal(hash, undefined)
          t.equal(await chain.client.getTransactionCount({ address: chain.runner }), runnerNonce, 'the runner sent nothing')
          t.equal(await chain.usdcOf(payer.address), 100_000_000n, 'the payer kept its USDC')
          return
        }
        t.ok(submitted.accepted, `${label}: accepted (${submitted.accepted ? '' : submitted.message})`)
        if (!submitted.accepted) return
        const view = await api.settled(binding, submitted.id)
        t.equal(BigInt(view.transaction.blockNumber), blockNumber)
        const { charged } = await expectCallFailedAndPaid(t, bruno, view, amount, label)
        t.equal((await chain.usdcOf(payee)) - payeeBefore, charged, 'the payee holds the charge')
        const receipt = await chain.client.getTransactionReceipt({ hash: hash! })
        t.ok(receipt.gasUsed > 1_000_000n, `the burn took the call's whole stipend (${receipt.gasUsed} gas used), and it was paid for`)
        tally.paid++
      })
    }
  }
  await chain.testClient.setCoinbase({ address: '0x0000000000000000000000000000000000000000' })
})

t.test('the Calibur flow: calibur_batch → sign → calibur_execute → submit, with a divergent call in the batch', async (t) => {
  const account = await fundedPayer(bruno, chain, generatePrivateKey(), 500_000_000n)
  await chain.mined(await chain.delegateBy(account, CALIBUR_ADDRESS))
  let index = 0
  for (const divergence of divergences) {
    const binding = transports[index++ % transports.length]!
    const label = `Calibur ${divergence.name}, submitted via ${names[binding]}`
    await t.test(label, async (t) => {
      const calls = [{ to: divergent, value: '0', data: await divergence.data() }]
      const batched = await mcp.callTool('calibur_batch', { chain: 'local', account: account.address, calls, token: 'USDC' })
      t.notOk(batched.isError, `${label}: calibur_batch prepares it (${batched.isError ? batched.content[0].text : ''})`)
      if (batched.isError) return
      const batch = batched.structuredContent
      const executed = await mcp.call('calibur_execute', { chain: 'local', ...(await signedBatches(account, batch)) })
      const amount = BigInt(executed.payment.amountBaseUnits)
      const accountBefore = await chain.usdcOf(account.address)
      const runnerNonce = await chain.client.getTransactionCount({ address: chain.runner })
      const { value: submitted, hash } = await chain.inOneBlock(() => api.submitAndSend(binding, { call: executed.call, payment: executed.payment }), {
        ...(divergence.beforeMine ? { beforeMine: divergence.beforeMine } : {}),
      })
      if (divergence.expected === 'refused') {
        expectRefusedInSimulation(t, submitted, label)
        t.equal(await chain.client.getTransactionCount({ address: chain.runner }), runnerNonce, 'the runner sent nothing')
        t.equal(await chain.usdcOf(account.address), accountBefore, 'the account kept its USDC')
        return
      }
      t.ok(submitted.accepted, `${label}: accepted (${submitted.accepted ? '' : submitted.message})`)
      if (!submitted.accepted) return
      const view = await api.settled(binding, submitted.id)
      const { charged } = await expectCallFailedAndPaid(t, bruno, view, amount, label)
      t.equal(accountBefore - (await chain.usdcOf(account.address)), charged, 'the account paid the charge of its payment leg and nothing else')
      const logs = await chain.client.getContractEvents({ address: divergent, abi: divergentAbi, eventName: 'Worked', blockHash: (await chain.client.getTransactionReceipt({ hash: hash! })).blockHash })
      t.equal(logs.length, 0, 'the batch\'s own call did not run to its end')
      tally.paid++
    })
  }
  await chain.testClient.setCoinbase({ address: '0x0000000000000000000000000000000000000000' })
})

t.test('a call that pays somewhere inside is refused over every binding, naming the two forms to use instead', async (t) => {
  const account = await fundedPayer(bruno, chain, generatePrivateKey(), 20_000_000n)
  await chain.mined(await chain.delegateBy(account, CALIBUR_ADDRESS))
  const runnerNonce = await chain.client.getTransactionCount({ address: chain.runner })
  // The old form: an arbitrary call that pays the payee itself, with a batch payment that is that call again.
  const paysInside = { to: usdc, data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [payee, 5_000_000n] }) }
  const paysInsidePayment = { token: usdc, amountBaseUnits: '5000000', batch: paysInside.data }
  for (const binding of transports) {
    const submitted = await api.submit(binding, { call: paysInside, payment: paysInsidePayment })
    t.equal(submitted.accepted, false, `${names[binding]}: refused`)
    if (submitted.accepted) continue
    t.match(submitted.message, /a call that pays somewhere inside is not accepted/)
    t.match(submitted.message, /\{token, authorization, signature\}, a signed EIP-3009 transfer to the payee/, 'names the signed transfer')
    t.match(submitted.message, /Calibur batches, one that only pays and one of the account's calls \(calibur_batch prepares both; calibur_execute returns the call and payment to submit\)/, 'names calibur_batch')
  }
  t.comment(`refused | pays-inside | ${(await api.submit('mcp', { call: paysInside, payment: paysInsidePayment }) as { message: string }).message}`)

  // The old Calibur layout, signed as the payment batch: the account's call first and the payment last, all or nothing.
  const transfer = encodeTransfer({ token: usdc, to: payee, amount: 1n })
  const batch = await mcp.call('calibur_batch', { chain: 'local', account: account.address, calls: [transfer], token: 'USDC' })
  const executed = await mcp.call('calibur_execute', { chain: 'local', ...(await signedBatches(account, batch)) })
  const typedData = structuredClone(batch.paymentTypedData)
  const [leg, ...others] = typedData.message.batchedCall.calls
  t.equal(others.length, 0, 'calibur_batch\'s payment batch holds the payment alone')
  const own = { to: divergent, value: '0', data: encodeFunctionData({ abi: divergentAbi, functionName: 'afterBlock', args: [(await latest()).number, 10n] }) }
  typedData.message.batchedCall = { calls: [own, leg], revertOnFailure: true }
  const signature = await account.signTypedData(typedData)
  const paymentLast = { token: usdc, amountBaseUnits: batch.payment.amountBaseUnits, batch: encodeSignedExecute({ message: typedData.message, signature }) }
  for (const binding of transports) {
    const submitted = await api.submit(binding, { call: executed.call, payment: paymentLast })
    t.equal(submitted.accepted, false, `payment-last Calibur batch via ${names[binding]}: refused`)
    if (submitted.accepted) continue
    t.match(submitted.message, /the payment batch is not payment-only: it has 2 calls, not 1/)
    t.match(submitted.message, /build both with calibur_batch/)
  }
  t.equal(await chain.client.getTransactionCount({ address: chain.runner }), runnerNonce, 'the runner sent nothing')
})

t.test('tally', async (t) => {
  t.comment(`simulation divergence: ${tally.refused} refused at submit, ${tally.paid} sent with the call failing on chain and the payment taken; no loss`)
  t.equal(tally.refused + tally.paid, divergences.length * transports.length + divergences.length, 'every case ended one of the two allowed ways')
})
