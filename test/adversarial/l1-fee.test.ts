import t, { type Test } from 'tap'
import { createPublicClient, createWalletClient, encodeFunctionData, http, parseUnits, type Address, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { devnetChain } from '../../core/devnet/chain.ts'
import { GAS_PRICE_ORACLE, L1_FEE_HEADROOM_BPS } from '../../core/chain/l1DataFee.ts'
import { weiToToken } from '../../core/charge/pricing.ts'
import { waitFor } from '../fixtures/waitFor.ts'
import { compileAdversaries, ratio, relayTools, startHarness, unsignedOf, valueWei, type Submitted } from './harness.ts'

// Issue 12, part 2: the L1 data fee on OP-stack chains. What anvil 1.7.1 does with
// `--network optimism` is pinned by the first test: it has no GasPriceOracle predeploy (no code at
// 0x42…0F), its receipts carry no `l1Fee`, and it charges none (the sender's balance falls by
// exactly gas used × effective gas price). So the L1 fee is played by a stand-in oracle placed at the
// predeploy (Adversaries.sol: `(unsigned length + 68) × perByte`, perByte in slot 0), and what an
// OP-stack chain would charge the runner is that oracle's answer for the included transaction at
// its block: spent = gas used × effective price + that L1 fee, per submission, ≤ the value received.

const contracts = compileAdversaries()
const SINK: Address = '0x000000000000000000000000000000000000a005'
/** Wei per byte of the unsigned transaction: with ~100 KB of calldata, the L1 fee is about the L2 gas's worth. */
const PER_BYTE = 45_000_000_000n
let oracleCodeBefore: Hex | undefined
const h = await startHarness(t, {
  anvilArgs: ['--network', 'optimism'],
  holdRunner: true,
  stuckAfterMs: 1_000,
  pollMs: 100,
  // ~100 KB of calldata, whose revert would cost 4M gas: relay.maxRevertGas (test/adversarial/revert-cost.test.ts)
  // is raised to the transaction cap, so that what is tested here is the L1 fee.
  configure: (config) => ({ ...config, networks: [{ ...config.networks[0]!, l1DataFee: 'op-stack' as const, relay: { ...config.networks[0]!.relay, maxRevertGas: 16_777_216 } }] }),
  before: async (rpcUrl) => {
    oracleCodeBefore = await createPublicClient({ transport: http(rpcUrl) }).getCode({ address: GAS_PRICE_ORACLE })
  },
})
await h.place(GAS_PRICE_ORACLE, contracts.GasPriceOracleStandIn!.code)
await h.place(SINK, contracts.Sink!.code)
const setPerByte = (wei: bigint) => h.store(GAS_PRICE_ORACLE, 0n, wei)
await setPerByte(PER_BYTE)
const price = await h.price()
const { quote, submit, submitLeast, trySubmit, status, signedFor, lookedAt } = relayTools(h)
const oracleAbi = contracts.GasPriceOracleStandIn!.abi

/** ~100 KB of calldata (no zero byte) to a contract that only counts it. */
const bigCall = { to: SINK, data: encodeFunctionData({ abi: contracts.Sink!.abi, functionName: 'take', args: [`0x${'ab'.repeat(100_000)}`] }) }
const payers = [await h.payer(), await h.payer(), await h.payer(), await h.payer()]

/** The L1 fee an OP-stack chain charges for a signed transaction in a block: the oracle's answer there. */
const l1FeeAt = (raw: Hex, blockNumber: bigint) =>
  h.client.readContract({ address: GAS_PRICE_ORACLE, abi: oracleAbi, functionName: 'getL1Fee', args: [unsignedOf(raw)], blockNumber }) as Promise<bigint>

/** The included transaction of `sent`: gas plus the L1 fee charged in its block ≤ the value received. */
async function checkLedger(t: Test, sent: Submitted, label: string) {
  const signed = signedFor(sent)
  const included = (await h.ledger()).filter((entry) => signed.some((transaction) => transaction.hash === entry.hash))
  t.equal(included.length, 1, `${label}: one of its ${signed.length} signed transaction(s) was included`)
  const entry = included[0]!
  t.equal(entry.status, 'success')
  const raw = signed.find((transaction) => transaction.hash === entry.hash)!
  const l1Fee = await l1FeeAt(raw.raw, entry.blockNumber)
  const spent = entry.spentWei + l1Fee
  const worst = raw.gas * raw.maxFeePerGas + l1Fee
  t.comment(
    `ledger ${label}: spent ${spent} wei (L2 ${entry.spentWei} + L1 ${l1Fee}), kept ${entry.charged} of ${entry.received} USDC units = ${entry.keptWei} wei, spent/kept ${ratio(spent, entry.keptWei)}; ` +
      `signed worst case at the L1 fee charged ${worst} wei vs payment ${valueWei(sent.amount, price)} wei`,
  )
  return { spent, entry, l1Fee, worst }
}

t.test('anvil 1.7.1 --network optimism: no GasPriceOracle, no l1Fee in receipts, none charged', async (t) => {
  t.equal(oracleCodeBefore, undefined, 'no code at the GasPriceOracle predeploy 0x420000000000000000000000000000000000000F')
  // anvil's dev account #5: a plain transaction with 10 KB of calldata (the stand-in oracle is in place
  // by now: anvil does not consult it either).
  const account = privateKeyToAccount('0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba')
  const wallet = createWalletClient({ account, chain: devnetChain(h.deployment.chainId), transport: http(h.rpcUrl) })
  const before = await h.client.getBalance({ address: account.address })
  const hash = await wallet.sendTransaction({ to: SINK, data: encodeFunctionData({ abi: contracts.Sink!.abi, functionName: 'take', args: [`0x${'cd'.repeat(10_000)}`] }) })
  const receipt = await h.client.waitForTransactionReceipt({ hash, pollingInterval: 50 })
  const raw = (await h.client.request({ method: 'eth_getTransactionReceipt', params: [hash] } as never)) as Record<string, unknown>
  t.notOk('l1Fee' in raw || 'l1GasUsed' in raw || 'l1GasPrice' in raw, `the receipt has no L1 fields (${Object.keys(raw).join(', ')})`)
  const after = await h.client.getBalance({ address: account.address })
  t.equal(before - after, receipt.gasUsed * receipt.effectiveGasPrice, 'the sender paid gas used × effective price and nothing more')
})

t.test('the L1 fee rises between submit and send: not sent while the payment does not cover it', async (t) => {
  const quoted = await quote(bigCall)
  const l2 = BigInt(quoted.gas) * BigInt(quoted.feePerGasWei)
  const l1 = BigInt(quoted.costWei) - l2
  t.ok(l1 >= 100_000n * PER_BYTE, `the quote's cost ${quoted.costWei} wei = L2 ${l2} + L1 ${l1}: the L1 fee of 100 KB is in it`)
  const sent = await submit(payers[0]!.key, bigCall, BigInt(quoted.amountBaseUnits))
  t.equal((await status(sent)).stage, 'waiting')
  // L1's fees triple before the runner first looks.
  await setPerByte(3n * PER_BYTE)
  h.recorder.allow('eth_getTransactionCount')
  const waiting = await waitFor(() => status(sent), (s) => /no longer covers/.test(s.reason ?? ''), 'held by its cover', 15_000)
  t.equal(waiting.stage, 'waiting')
  t.match(waiting.reason, /^waiting: the payment no longer covers the most the runner could pay at current fees \(\d+ wei\)$/)
  await lookedAt(sent, 2)
  t.equal(signedFor(sent).length, 0, 'nothing signed while the L1 fee is past the payment (two more looks)')
  await setPerByte(PER_BYTE)
  const done = await waitFor(() => status(sent), (s) => s.stage === 'done' || s.stage === 'failed', 'done', 15_000)
  t.equal(done.stage, 'done', done.reason)
  const { spent, entry } = await checkLedger(t, sent, 'L1 fee x3 between submit and send, sent when it fell')
  t.ok(spent <= entry.keptWei, `spent ${spent} wei (incl. L1) ≤ kept ${entry.keptWei} wei`)
})

t.test('quote and submit price the L1 fee: L2-only cover refused, L2 + L1 accepted and sent', async (t) => {
  const quoted = await quote(bigCall)
  const least = await submitLeast(payers[1]!.key, bigCall)
  // The refusal names the worst case: gas, max fee and the L1 fee.
  const terms = /, ([\d.]+) USDC \((\d+) gas at up to (\d+) wei plus an L1 data fee of (\d+) wei\)/.exec(least.refusal)
  t.ok(terms, `the refusal names the L1 fee: ${least.refusal}`)
  const [gas, maxFee, l1] = [BigInt(terms![2]!), BigInt(terms![3]!), BigInt(terms![4]!)]
  t.ok(l1 > 0n, `L1 data fee ${l1} wei (oracle × ${10_000n + L1_FEE_HEADROOM_BPS} / 10000)`)
  t.ok(BigInt(quoted.amountBaseUnits) >= least.amount - least.amount / 500n, `the quote (${quoted.amount}) covers what submit requires (${least.amount - least.amount / 500n})`)
  // A payment worth the L2 worst case and 10% more, but short of L2 + L1: refused.
  const l2Only = weiToToken((gas * maxFee * 11n) / 10n, price)
  t.ok(l2Only < least.amount, `${l2Only} units cover the L2 worst case with 10% to spare but not the L1 fee`)
  const refused = await trySubmit(payers[2]!.key, bigCall, l2Only)
  t.equal(refused.isError, true, 'refused at submit')
  t.match(refused.content[0].text, /is below the most the runner could pay for it now, .* plus an L1 data fee of \d+ wei/)
  // The least payment covering both (the one submitted above) is accepted and sent.
  const done = await waitFor(() => status(least), (s) => s.stage === 'done' || s.stage === 'failed', 'done', 15_000)
  t.equal(done.stage, 'done', done.reason)
  t.equal(done.outcome.callSucceeded, true, 'the 100 KB call ran')
  const { spent, entry, worst } = await checkLedger(t, least, 'least payment covering L2 + L1, ~100 KB calldata')
  t.ok(worst <= valueWei(least.amount, price), `signed worst case incl. the L1 fee charged ${worst} wei ≤ the payment's ${valueWei(least.amount, price)} wei`)
  t.ok(spent <= entry.keptWei, `spent ${spent} wei (incl. L1) ≤ kept ${entry.keptWei} wei`)
})

t.test('the L1 fee rises by half while the transaction is pending: the runner cancels it rather than be included at a loss', async (t) => {
  // The runner prices the L1 fee at the oracle's answer + 25%; nothing it signs bounds the L1 fee
  // charged at inclusion. Here the transaction waits (no block) while L1's fees rise 50% (L1's base
  // fee and blob base fee may each rise 12.5% per L1 block: four L1 blocks, under a minute). Each pass
  // the runner re-reads the L1 fee of the bytes it signed; past the payment's cover, it takes the
  // nonce back with a 0-value self-transfer (21,000 gas, capped at the payment's value).
  h.allowCancellations(1)
  await h.testClient.setAutomine(false)
  const sent = await submitLeast(payers[3]!.key, bigCall)
  const sending = await waitFor(() => status(sent), (s) => s.stage === 'sending', 'sent', 10_000)
  await setPerByte((3n * PER_BYTE) / 2n)
  const cancelling = await waitFor(() => status(sent), (s) => /L1 data fee rose/.test(s.reason ?? ''), 'the cancellation', 10_000)
  t.match(cancelling.reason, /its L1 data fee rose to \d+ wei while it waited, past what the payment covers/)
  // The cancellation is stored before it is broadcast: mine once the node holds it.
  await waitFor(() => h.client.getTransaction({ hash: cancelling.transaction.hash }).catch(() => undefined), (found) => found !== undefined, 'the node to hold the cancellation', 10_000)
  await h.mineAtBaseFee(sending.transaction ? signedFor(sent).at(-1)!.maxFeePerGas : 0n)
  const failed = await waitFor(() => status(sent), (s) => s.stage === 'done' || s.stage === 'failed', 'settled', 15_000)
  t.equal(failed.stage, 'failed', 'the relay was not included')
  t.match(failed.reason, /^cancelled: its L1 data fee rose/)
  const signed = signedFor(sent)
  const entries = await h.ledger()
  t.same(entries.filter((entry) => signed.some((transaction) => transaction.hash === entry.hash)), [], 'no relay of it was included at the risen L1 fee')
  const cancel = entries.find((entry) => entry.kind === 'cancel' && entry.hash === failed.transaction.hash)
  t.ok(cancel, 'the cancellation was')
  t.ok(cancel!.spentWei <= valueWei(sent.amount, price), `the cancellation cost ${cancel!.spentWei} wei ≤ the payment's ${valueWei(sent.amount, price)} wei it could not earn`)
  t.comment(`ledger least payment, L1 fee +50% while pending: cancelled for ${cancel!.spentWei} wei (21,000 gas), payment worth ${valueWei(sent.amount, price)} wei`)
  await h.testClient.setAutomine(true)
})

t.test('the least payment on an OP-stack chain: sent, not cancelled at its first look, and paid for', async (t) => {
  // Issue 27, point 8: submit priced the L1 fee of the unsigned transaction (at nonce 0), the runner's
  // look prices the signed bytes it holds, ~67 bytes longer: a payment of exactly the least submit
  // accepts was cancelled at the first look. ~1 KB of calldata, so that the L1 fee is small beside the
  // gas and the signature's bytes are far past the least payment's rounding.
  await setPerByte(PER_BYTE)
  const call = { to: SINK, data: encodeFunctionData({ abi: contracts.Sink!.abi, functionName: 'take', args: [`0x${'cd'.repeat(1_000)}`] }) }
  const payer = await h.payer()
  const quoted = await quote(call)
  // Held in the pool, so that the runner looks at it in flight before it is included.
  await h.testClient.setAutomine(false)
  t.teardown(() => h.testClient.setAutomine(true))
  // The least submit accepts: each refusal names the least for its payment's bytes (a payment's
  // amount, nonce and signature move the calldata's gas by a few units), which the next one pays.
  let amount = 1n
  let priced = { gas: 0n, maxFee: 0n, l1: 0n }
  let accepted: Submitted | undefined
  for (let attempt = 0; attempt < 8 && !accepted; attempt++) {
    const payment = await h.payment(payer.key, amount)
    const result = await h.mcp.callTool('submit', { chain: h.config.networks[0]!.name, call, payment })
    if (!result.isError) {
      accepted = { id: result.structuredContent.id, paymentNonce: payment.authorization.nonce as Hex, amount }
      break
    }
    const terms = /below the most the runner could pay for it now, ([\d.]+) USDC \((\d+) gas at up to (\d+) wei plus an L1 data fee of (\d+) wei\)/.exec(result.content[0].text)
    t.ok(terms, `refused with the least amount: ${result.content[0].text}`)
    if (!terms) return
    amount = parseUnits(terms[1]!, 6)
    priced = { gas: BigInt(terms[2]!), maxFee: BigInt(terms[3]!), l1: BigInt(terms[4]!) }
  }
  t.ok(accepted, `a payment of the least named was accepted (${amount} units)`)
  if (!accepted) return
  const sent = accepted
  t.ok(amount <= BigInt(quoted.amountBaseUnits), `the least accepted (${amount}) is at most the quote (${quoted.amountBaseUnits})`)
  const sending = await waitFor(() => status(sent), (s) => s.stage === 'sending', 'sent', 15_000)
  // `sending` is stored before the broadcast: wait for the node to be handed it.
  const raw = (await waitFor(async () => signedFor(sent).at(-1), (signed) => signed !== undefined, 'its broadcast', 15_000))!
  t.equal(raw.hash, sending.transaction.hash)
  // Two looks at it in flight (each reads the oracle for its signed bytes), or the cancellation.
  const needle = raw.raw.slice(2).toLowerCase()
  const looks = () => h.recorder.trace.filter(({ request }) => (request as { method?: string }).method === 'eth_call' && JSON.stringify(request).toLowerCase().includes(needle)).length
  const looked = await waitFor(
    async () => ({ looks: looks(), status: await status(sent) }),
    (seen) => seen.looks >= 2 || /L1 data fee rose/.test(seen.status.reason ?? ''),
    'two looks at it in flight',
    15_000,
  )
  const oracleOnSigned = (await h.client.readContract({ address: GAS_PRICE_ORACLE, abi: oracleAbi, functionName: 'getL1Fee', args: [raw.raw] })) as bigint
  const looksAt = oracleOnSigned + (oracleOnSigned * L1_FEE_HEADROOM_BPS + 9_999n) / 10_000n
  t.comment(
    `quoted ${quoted.amountBaseUnits} units; least accepted ${amount} units = ${priced.gas} gas at up to ${priced.maxFee} wei + an L1 fee of ${priced.l1} wei priced at submit; ` +
      `signed ${(raw.raw.length - 2) / 2} bytes, ${raw.gas} gas at up to ${raw.maxFeePerGas} wei, nonce ${raw.nonce}; the look's L1 fee of its signed bytes ${looksAt} wei`,
  )
  t.notMatch(looked.status.reason ?? '', /L1 data fee rose/, 'not cancelled at its first look')
  t.ok(looksAt <= priced.l1, `the L1 fee of the signed bytes (${looksAt} wei) is within what submit priced (${priced.l1} wei)`)
  await h.mineAtBaseFee(raw.maxFeePerGas)
  const done = await waitFor(() => status(sent), (s) => s.stage === 'done' || s.stage === 'failed', 'done', 15_000)
  t.equal(done.stage, 'done', done.reason)
  t.equal(done.outcome?.callSucceeded, true, 'the call ran')
  const { spent, entry, l1Fee, worst } = await checkLedger(t, sent, 'the least accepted payment, ~1 KB calldata')
  t.comment(`included: ${entry.gasUsed} gas used of ${entry.gasLimit}, L1 fee charged ${l1Fee} wei (priced ${priced.l1} at submit)`)
  t.ok(worst <= valueWei(sent.amount, price), `signed worst case incl. the L1 fee charged ${worst} wei ≤ the payment's ${valueWei(sent.amount, price)} wei`)
  t.ok(spent <= entry.keptWei, `spent ${spent} wei (incl. L1) ≤ kept ${entry.keptWei} wei`)
})
