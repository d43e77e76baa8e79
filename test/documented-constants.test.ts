import { readFileSync } from 'node:fs'
import type { Static } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import t, { type Test } from 'tap'
import type { Block, PublicClient } from 'viem'
import { NetworkConfig, RelayConfig, RunnerConfig, ServerConfig } from '../config/schema.ts'
import { MAX_JSON_DEPTH } from '../core/http/boundedJson.ts'
import { readFees } from '../core/chain/fees.ts'
import { L1_FEE_HEADROOM_BPS } from '../core/chain/l1DataFee.ts'
import { PRICE_WINDOW_PARTS, PRICE_WINDOW_SEC } from '../core/chain/tokenPrice.ts'
import { MAX_VALUES } from '../core/mcp/complete.ts'
import { DISCOVER_TTL_MS, LIST_TTL_MS } from '../core/mcp/protocol.ts'
import { OPERATOR_READ_INTERVAL_MS } from '../core/operators/sharedRead.ts'
import { AUTHORIZATION_PHASE_GAS } from '../core/relay/quote.ts'
import { MAX_HOLD_MS } from '../core/runner/holds.ts'
import { HOME_REPLICA_MS } from '../core/runner/share.ts'
import { RUNNER_SETTLE_GAS } from '../core/relay/runnerCall.ts'
import { MAX_TRANSACTION_GAS, stipendFor } from '../core/relay/runnerTransaction.ts'
import { MAX_BATCH } from '../core/rest/routes.ts'
import { MAX_VALID_FOR_SEC, validForSecOver } from '../plugins/3009/paymentAuthorization.ts'
import { FIRST_USE_OF_KEY_GAS, PER_CALL_GAS, PER_DATA_BYTE_GAS, SIGNED_PATH_GAS } from '../plugins/calibur/batch.ts'
import { CALIBUR_PAYMENT_GAS } from '../plugins/calibur/paymentFirstBatch.ts'
import { MAX_SLIPPAGE_BPS } from '../plugins/uniswap/swapToEth.ts'

// The figures SPEC.md and README.md state, read out of their sentences and held to the code's own
// constants and defaults (issue 29, point 11: SPEC gave calibur_batch's gas allowance long after
// the code had changed it). Each regex is anchored to the sentence that states the figure, so a
// change to either side — the document's number, its wording, or the code's value — fails here.
// Chain-free: only the documents, the modules' exports and the config schema's defaults.

const read = (file: string) => readFileSync(new URL(`../${file}`, import.meta.url), 'utf8')
// Line breaks and indentation are the documents' layout, not their words.
const docs = { 'SPEC.md': read('SPEC.md').replace(/\s+/g, ' '), 'README.md': read('README.md').replace(/\s+/g, ' ') }
type Doc = keyof typeof docs

// The defaults a config gets when it leaves a field out, filled as config/load.ts fills them.
const relay = Value.Default(RelayConfig, {}) as Static<typeof RelayConfig>
const runner = Value.Default(RunnerConfig, {}) as Partial<Static<typeof RunnerConfig>>
const server = Value.Default(ServerConfig, {}) as Static<typeof ServerConfig>
const network = Value.Default(NetworkConfig, {}) as Partial<Static<typeof NetworkConfig>>

const SUPERSCRIPTS = '⁰¹²³⁴⁵⁶⁷⁸⁹'

/**
 * A figure as the documents write it, as a number in the code's unit: `20,000`; `15M`; a factor
 * (`1.05`); `2²⁴`; `25 %` in basis points; a time (`30 s`, `10 min`, `1 h`, `7 days`) in seconds;
 * `1 MiB` in bytes.
 */
function figure(text: string): number {
  const power = /^(\d+)([⁰¹²³⁴⁵⁶⁷⁸⁹]+)$/.exec(text)
  if (power) return Number(power[1]) ** Number([...power[2]!].map((digit) => SUPERSCRIPTS.indexOf(digit)).join(''))
  const found = /^([\d,]+(?:\.\d+)?) ?(M|%|s|min|h|days|MiB)?$/.exec(text)
  if (!found) throw new Error(`not a figure: "${text}"`)
  const value = Number(found[1]!.replaceAll(',', ''))
  const unit = { M: 1_000_000, '%': 100, s: 1, min: 60, h: 3_600, days: 86_400, MiB: 1_048_576 }[found[2] ?? ''] ?? 1
  return value * unit
}

/** The figures a sentence states, its groups in order; a sentence no longer there fails the test, quoting the pattern. */
function stated(doc: Doc, sentence: RegExp): number[] {
  const found = sentence.exec(docs[doc])
  if (!found) throw new Error(`${doc} no longer says ${sentence}`)
  return found.slice(1).map((group) => figure(group!))
}

/** Asserts the figures a sentence states, naming the sentence. */
function says(t: Test, doc: Doc, sentence: RegExp, expected: readonly number[]): void {
  t.same(stated(doc, sentence), expected, `${doc}: ${sentence.source.replaceAll('\\', '').slice(0, 90)}`)
}

/** Every occurrence's figures, for a figure a document states in several places. */
function statedEach(t: Test, doc: Doc, sentence: RegExp, times: number): number[][] {
  const all = [...docs[doc].matchAll(new RegExp(sentence.source, 'g'))].map((found) => found.slice(1).map((group) => figure(group!)))
  t.equal(all.length, times, `${doc} says it ${times} times: ${sentence}`)
  return all
}

t.test('figure reads the documents\' notations', async (t) => {
  t.same(['20,000', '15M', '1.05', '2²⁴', '25 %', '30 s', '10 min', '1 h', '7 days', '1 MiB'].map(figure), [20_000, 15_000_000, 1.05, 16_777_216, 2_500, 30, 600, 3_600, 604_800, 1_048_576])
  t.throws(() => figure('about 6.6 KB'))
})

t.test('SPEC §6 calibur: calibur_batch\'s gas allowance for the signed paths', async (t) => {
  says(
    t,
    'SPEC.md',
    /plus what each signed path adds \(([\d,]+) each, \+([\d,]+) for the payment on a nonce key's first use, ([\d,]+) per call and ([\d,]+) per byte of call data for the calls/,
    [SIGNED_PATH_GAS, FIRST_USE_OF_KEY_GAS, PER_CALL_GAS, PER_DATA_BYTE_GAS].map(Number),
  )
  // "at least what the real Calibur's signed path adds": the allowance for such a call covers the measure.
  const [measured, bytes] = stated('SPEC.md', /measured at ≈([\d,]+) gas per extra (\d+)-byte call/)
  t.ok(PER_CALL_GAS + BigInt(bytes!) * PER_DATA_BYTE_GAS >= BigInt(measured!), `${PER_CALL_GAS} + ${bytes} × ${PER_DATA_BYTE_GAS} ≥ ${measured}`)
})

t.test('SPEC §6 bruno: the Runner\'s two phases', async (t) => {
  const runnerSol = read('contracts/Runner.sol')
  const constant = (name: string) => Number(new RegExp(`uint256 public constant ${name} = ([\\d_]+);`).exec(runnerSol)![1]!.replaceAll('_', ''))
  says(t, 'SPEC.md', /with at most the delegate's payment gas \(Calibur: ([\d,]+); MetaMask: sized to the delegation\) and its return data\s+copied to at most (\d+) bytes/, [Number(CALIBUR_PAYMENT_GAS), constant('REASON_BYTES')])
  says(t, 'SPEC.md', /the Runner copies at most (\d+) bytes of the call's return data and keeps `SETTLE_GAS` \(([\d,]+)\) for its own settlement/, [constant('REASON_BYTES'), constant('SETTLE_GAS')])
  t.equal(Number(RUNNER_SETTLE_GAS), constant('SETTLE_GAS'), 'the relay counts the settlement the Runner keeps')
})

t.test('SPEC §6 bruno: pricing', async (t) => {
  says(t, 'SPEC.md', /`GasPriceOracle.getL1Fee` of the transaction as it will be signed, \+ (\d+ %)\)/, [Number(L1_FEE_HEADROOM_BPS)])

  // The max fee, from the node's answers: the factor is in readFees' arithmetic, not a constant.
  const [factor] = stated('SPEC.md', /Fees are the node's `eth_maxPriorityFeePerGas` and `([\d.]+) × base fee \+ tip`/)
  const [baseFeePerGas, tip] = [1_000_000_000n, 7n]
  const client = { request: async () => `0x${tip.toString(16)}` } as unknown as PublicClient
  const fees = await readFees(client, { baseFeePerGas } as Block)
  t.same(fees, { maxFeePerGas: (baseFeePerGas * BigInt(Math.round(factor! * 1_000))) / 1_000n + tip, maxPriorityFeePerGas: tip }, `SPEC.md: max fee = ${factor} × base fee + tip`)

  says(t, 'SPEC.md', /× `runner.gasLimitBps` \(default ([\d.]+)\)/, [runner.gasLimitBps! / 10_000])
  says(t, 'SPEC.md', /`relay.maxCallGas` \(default (\d+M), and at most the block's limit and (2[⁰¹²³⁴⁵⁶⁷⁸⁹]+), EIP-7825\)/, [relay.maxCallGas, Number(MAX_TRANSACTION_GAS)])
  const [part, extra] = stated('SPEC.md', /The stipend is what the call used in a probe with `relay.maxCallGas` \(.*?\) plus 1\/(\d+) and ([\d,]+) gas/)
  for (const used of [0n, 160_000n, 1_234_567n]) t.equal(stipendFor(used), used + used / BigInt(part!) + BigInt(extra!), `the stipend for ${used} gas used`)
  says(
    t,
    'SPEC.md',
    /the limit is counted from its stipend, the transfer's ([\d,]+) gas, the calldata \(a placeholder signature\) and the Runner's settlement \(([\d,]+)\)/,
    [AUTHORIZATION_PHASE_GAS, RUNNER_SETTLE_GAS].map(Number),
  )
})

t.test('SPEC §6 bruno: submit\'s checks and admission', async (t) => {
  const { admission } = relay
  says(t, 'SPEC.md', /a paying account may have `account.maxActive` \((\d+)\) submissions active, a client \(the caller's address\) `client.maxActive` \((\d+)\)/, [admission.account.maxActive, admission.client.maxActive])
  says(
    t,
    'SPEC.md',
    /`throttleAfter` times \(account (\d+), client (\d+)\) within `windowSec` \((\d+ h)\) may have one active, and `banAfter` times \((\d+), (\d+)\) is refused until `banSec` \((\d+ h)\)/,
    [admission.account.throttleAfter, admission.client.throttleAfter, admission.windowSec, admission.account.banAfter, admission.client.banAfter, admission.banSec],
  )
  says(t, 'SPEC.md', /40 at once by one payer store (\d+);/, [admission.account.maxActive])
  says(t, 'SPEC.md', /a client may have `atOnce` \((\d+)\) of them under way/, [admission.simulations.atOnce])
  says(t, 'SPEC.md', /has (\d+) quotes or submits being simulated, the most it may have at once/, [admission.simulations.atOnce])
  says(t, 'SPEC.md', /`refusedGasPerMinute` \((\d+M)\) gas within a minute/, [admission.simulations.refusedGasPerMinute])
  says(t, 'SPEC.md', /ran (\d+) gas on the node in the last (\d+) s, the most this relay simulates for refusals/, [admission.simulations.refusedGasPerMinute, 60])

  const least = relay.paymentMarginSec + relay.inclusionSec
  says(t, 'SPEC.md', /at least `relay.paymentMarginSec` \((\d+ s)\) plus `relay.inclusionSec` \((\d+ s)\) ahead/, [relay.paymentMarginSec, relay.inclusionSec])
  says(t, 'SPEC.md', /\(`it must be valid at least (\d+) s more; sign a new one`\)/, [least])
  says(t, 'SPEC.md', /A `validForSec` of `relay.paymentMarginSec` \+ `relay.inclusionSec` \((\d+ s) by default\)/, [least])
  says(t, 'SPEC.md', /so the published minimum is one more \((\d+) by default;/, [validForSecOver(least).minimum!])
  // payment_authorization's and transfer_authorization's: one least validity for the payment and the call.
  for (const stated of statedEach(t, 'SPEC.md', /validForSec\? \((\d+)\.\.(\d+) by default, default relay.quoteTtlSec\)/, 2)) t.same(stated, [validForSecOver(least).minimum!, MAX_VALID_FOR_SEC])
  says(t, 'SPEC.md', /`relay.maxTransactionBytes` \(([\d,]+): geth and reth refuse more\)/, [relay.maxTransactionBytes])
  says(t, 'SPEC.md', /\(`relay.maxRevertGas`, default ([\d,]+):/, [relay.maxRevertGas])
})

t.test('SPEC §6 bruno and README: the price window', async (t) => {
  const window = PRICE_WINDOW_SEC
  says(t, 'SPEC.md', /of each pool's spot price, its\s+time-weighted price over (\d+ s) \(or the pool's history, when younger\) and the time-weighted price of\s+each of that window's (\d+) equal parts/, [window, PRICE_WINDOW_PARTS])
  says(t, 'SPEC.md', /A pool whose ring of observations no longer reaches back (\d+ s) nor to its own first observation/, [window])
  says(t, 'SPEC.md', /its price history covers only the last N s of the (\d+ s) window/, [window])
  says(t, 'SPEC.md', /`bruno_price_window_seconds\{chain,pool\}` \((\d+), or the pool's age while it is younger\)/, [window])
  says(t, 'SPEC.md', /`⌈(\d+) \/ block time⌉` observations/, [window])
  says(t, 'SPEC.md', /and its oldest observation to be (\d+ s) old now/, [window])
  says(t, 'SPEC.md', /younger than the (\d+ s) price window/, [window])
  says(t, 'SPEC.md', /a manipulation held for\s+more than (\d+ s) \(three quarters of the window: every part must move\)/, [(window * (PRICE_WINDOW_PARTS - 1)) / PRICE_WINDOW_PARTS])
  says(t, 'README.md', /the last time-weighted price through each pool covered: (\d+ s), less only for a younger pool/, [window])
})

t.test('SPEC §6 bruno: the runner', async (t) => {
  says(t, 'SPEC.md', /holds it — with its reason in `status` and a backoff of its own, up to (\d+ s) —/, [MAX_HOLD_MS / 1_000])
  says(t, 'SPEC.md', /backs off doubling \(not capped at (\d+ s)\) and fails after `relay.failingHoldSec` \((\d+ s)\) of failing \(`not sent: its payment or call kept failing for (\d+ s):/, [MAX_HOLD_MS / 1_000, relay.failingHoldSec, relay.failingHoldSec])
  says(t, 'SPEC.md', /cancels a transaction still unincluded after `runner.maxSendingMs` \((\d+ min)\)/, [runner.maxSendingMs! / 1_000])
  says(t, 'SPEC.md', /deletes settled submissions `relay.retentionSec` \((\d+ days)\) after they settled/, [relay.retentionSec])
  says(t, 'SPEC.md', /and is any replica's once it has waited (\d+ s) \(`HOME_REPLICA_MS`\)/, [HOME_REPLICA_MS / 1_000])
})

t.test('SPEC §2, §3, §7–§9: transport limits and caching hints', async (t) => {
  says(t, 'SPEC.md', /\*\*Body limit\*\* \(`server.bodyLimit`, default (\d+ MiB)\)/, [server.bodyLimit])
  says(t, 'SPEC.md', /body nested deeper than (\d+) levels/, [MAX_JSON_DEPTH])
  says(t, 'SPEC.md', /`server\/discover` → `supportedVersions`, `capabilities`, `instructions`, `ttlMs: (\d+)`/, [DISCOVER_TTL_MS])
  says(t, 'SPEC.md', /`tools\/list` → `tools`, `ttlMs: (\d+)`/, [LIST_TTL_MS])
  says(t, 'SPEC.md', /`prompts\/list` → `prompts` .*?; modern: `ttlMs: (\d+)`/, [LIST_TTL_MS])
  says(t, 'SPEC.md', /`resources\/templates\/list` → `resourceTemplates` .*?; modern: `ttlMs: (\d+)`/, [LIST_TTL_MS])
  says(t, 'SPEC.md', /Batches hold 1 to (\d+) requests/, [MAX_BATCH])
  says(t, 'SPEC.md', /values that start with what was typed \(any case\), at most (\d+):/, [MAX_VALUES])
  says(t, 'SPEC.md', /`slippageBps` (\d+)–(\d+), default `margins.defaultSlippageBps`/, [0, MAX_SLIPPAGE_BPS])
  // The size the tool list is held to lives in its test, the one place that enforces it.
  const limit = Number(/^const LIMIT = ([\d_]+)$/m.exec(read('test/tool-list-size.test.ts'))![1]!.replaceAll('_', ''))
  says(t, 'SPEC.md', /The full `tools\/list` stays within ([\d,]+) bytes \(`test\/tool-list-size.test.ts`\)/, [limit])
  says(t, 'README.md', /`test\/tool-list-size.test.ts` prints them and holds the default config's five groups to\s+([\d,]+) bytes/, [limit])
})

t.test('SPEC §11 and README: the operator endpoints', async (t) => {
  const everySec = OPERATOR_READ_INTERVAL_MS / 1_000
  says(t, 'SPEC.md', /are shared, at most one read per chain every (\d+ s), concurrent requests waiting on the one in flight, and a read's outcome \(a failure too\) reused until (\d+ s) after it settled/, [everySec, everySec])
  says(t, 'SPEC.md', /a new block shows within (\d+ s)\./, [everySec])
  says(t, 'README.md', /at most one read per chain every \*\*(\d+ s)\*\* \(`OPERATOR_READ_INTERVAL_MS`, core\/operators\/sharedRead.ts\)/, [everySec])
  for (const [sec] of statedEach(t, 'README.md', /at most once per (\d+ s) per chain/, 2)) t.equal(sec, everySec)
  says(t, 'README.md', /`networks\[\]\.maxBlockAgeSec` old \(default (\d+);/, [network.maxBlockAgeSec!])
})
