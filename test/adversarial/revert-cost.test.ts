import t from 'tap'
import { encodeFunctionData, erc20Abi, toHex, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { CALIBUR_ADDRESS } from '../../plugins/calibur/networkOptions.ts'
import { startDevnetBruno } from '../fixtures/devnetBruno.ts'
import { RawMcpClient } from '../fixtures/mcpHttp.ts'
import { adversaryChain, ATTACK_FEES, bindings, fundedPayer, ledgerEntry, ledgerLine, runnerCallGas, transferPayment } from './adversary.ts'

// Issue 27, point 3: a runner transaction that reverts in its payment phase still pays its intrinsic gas, and at
// EIP-7623's floor (10 gas a calldata token) 129 KB of calldata cost the runner 5.2M gas for a payment the payer
// voided with one 33-64k-gas front-run. Bruno now refuses, at submit, a transaction whose revert would cost more
// than relay.maxRevertGas (default 300,000), calldata included; what it accepts can lose at most that.

// At the default bound: the devnet raises it to 600,000 for the metamask group (SPEC §6, metamask).
const bruno = await startDevnetBruno(t, {
  groups: ['bruno', 'calibur'],
  pollMs: 100,
  x402HoldSec: 1,
  configure: (config) => ({ ...config, networks: config.networks.map((network) => ({ ...network, relay: { ...network.relay, maxRevertGas: 300_000 } })) }),
})
const { deployment } = bruno
const chain = adversaryChain(bruno)
const mcp = new RawMcpClient(`${bruno.mcpUrl}/bruno`)
const api = bindings(bruno, mcp)
const maxRevertGas = BigInt(bruno.config.networks[0]!.relay.maxRevertGas)
// A call to an address with no code succeeds whatever its data: only the calldata's size matters here.
const sink = privateKeyToAccount(generatePrivateKey()).address
const callWith = (bytes: number) => ({ to: sink, data: toHex(new Uint8Array(bytes).fill(0xa5)) as Hex })

t.test('129 KB of calldata: refused at submit, naming what a revert would cost; nothing is sent', async (t) => {
  const key = generatePrivateKey()
  await fundedPayer(bruno, chain, key, 1_000_000_000n)
  const call = callWith(129_000)
  const quote = await mcp.call('quote', { chain: 'local', call, token: 'USDC', payment: 'authorization' })
  const runnerNonce = await chain.client.getTransactionCount({ address: chain.runner })
  for (const binding of ['mcp', 'rest', 'rpc', 'x402'] as const) {
    const submitted = await api.submit(binding, { call, payment: await transferPayment(bruno, key, BigInt(quote.amountBaseUnits)) })
    t.equal(submitted.accepted, false, `${binding}: refused`)
    if (submitted.accepted) continue
    const cost = /would revert and still cost (\d+) gas/.exec(submitted.message)
    t.ok(cost && BigInt(cost[1]!) > 5_000_000n, `${binding}: a revert would cost ${cost?.[1]} gas: ${submitted.message}`)
    t.match(submitted.message, new RegExp(`over the ${maxRevertGas} this relay risks on a payment: make the call's data smaller`))
  }
  t.equal(await chain.client.getTransactionCount({ address: chain.runner }), runnerNonce, 'the runner sent nothing')
})

t.test('the largest call accepted, its payment voided by a front-run: the revert costs the runner at most maxRevertGas', async (t) => {
  const key = generatePrivateKey()
  const payer = await fundedPayer(bruno, chain, key, 1_000_000_000n, 10n ** 18n)
  // Find the largest calldata accepted, halving the step from 8 KB.
  let accepted = 0
  for (let step = 8_192; step >= 64; step /= 2) {
    const call = callWith(accepted + step)
    const refused = await mcp.callTool('submit', { chain: 'local', call, payment: await transferPayment(bruno, key, 1n) })
    // A payment of 1 unit is always short; the revert bound is checked before it, so its refusal says which.
    if (!/would revert and still cost/.test(refused.content[0].text)) accepted += step
  }
  t.ok(accepted > 4_000, `calls of up to ${accepted} bytes are within the bound`)
  const call = callWith(accepted)
  const quote = await mcp.call('quote', { chain: 'local', call, token: 'USDC', payment: 'authorization' })
  const amount = BigInt(quote.amountBaseUnits)
  const payment = await transferPayment(bruno, key, amount)
  const moveAway = async () =>
    chain.walletOf(payer).sendTransaction({
      to: deployment.usdc,
      data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [privateKeyToAccount(generatePrivateKey()).address, await chain.usdcOf(payer.address)] }),
      gas: 100_000n,
      ...ATTACK_FEES,
    })
  const { value: submitted, hash } = await chain.inOneBlock(() => api.submitAndSend('mcp', { call, payment }), { attack: async () => [await moveAway()] })
  t.ok(submitted.accepted && hash, 'accepted and sent')
  if (!submitted.accepted || !hash) return
  const view = await api.settled('mcp', submitted.id)
  t.equal(view.stage, 'failed')
  t.match(view.reason, /reverted in its payment phase: nothing was paid/)
  const entry = await ledgerEntry(bruno, hash)
  t.equal(entry.status, 'reverted')
  bruno.allowRevertedRunnerTransactions(1)
  const { callGas } = await runnerCallGas(chain, hash)
  t.ok(entry.gasUsed <= maxRevertGas, `the revert cost ${entry.gasUsed} gas ≤ ${maxRevertGas} (${accepted} bytes of calldata, a ${callGas}-gas stipend)`)
  ledgerLine(t, `payment voided, ${accepted} bytes of calldata`, entry)
})

// Issue 43, point 11: calibur_batch priced a batch submit would then refuse for its revert cost (64
// calls of 260 bytes: 806,000 gas), after the wallet had signed both batches. The batch tool now
// makes submit's check, with the same function, before anything is signed.
t.test('a Calibur batch whose revert would cost more than maxRevertGas: refused by calibur_batch, before anything is signed', async (t) => {
  const account = await fundedPayer(bruno, chain, generatePrivateKey(), 100_000_000n)
  await chain.testClient.setCode({ address: account.address, bytecode: `0xef0100${CALIBUR_ADDRESS.slice(2)}` })
  const calibur = new RawMcpClient(`${bruno.mcpUrl}/bruno,calibur`)
  const calls = Array.from({ length: 64 }, () => callWith(260))
  const refused = await calibur.callTool('calibur_batch', { chain: 'local', account: account.address, calls, token: 'USDC' })
  t.equal(refused.isError, true, 'refused')
  t.match(refused.content[0].text, new RegExp(`^refused: if its payment were voided before inclusion, the runner's transaction would revert and still cost \\d+ gas \\(its \\d+ bytes of calldata count at EIP-7623's floor\\), over the ${maxRevertGas + 70_000n} this relay risks on this payment: make the call's data smaller, or split it into several submissions$`))
  const few = await calibur.callTool('calibur_batch', { chain: 'local', account: account.address, calls: calls.slice(0, 4), token: 'USDC' })
  t.notOk(few.isError, 'four of those calls are within the bound')
})
