import t from 'tap'
import { encodeAbiParameters, encodeEventTopics, erc20Abi, getAddress, type Address, type Hex, type TransactionReceipt } from 'viem'
import { runnerAbi } from '../../contracts/abi.ts'
import { ledgerEntry, ledgerViolations, type LedgerEntry, type LedgerPricing } from '../../core/testing/runnerLedger.ts'

// The runner ledger (core/testing/runnerLedger.ts), on which every devnet file's "the runner never keeps less than
// it spent" rests: its arithmetic on receipts worked out by hand (issue 44, point 1), then its verdict.

const a = (n: number) => getAddress(`0x${n.toString(16).padStart(40, '0')}`)
const [runnerContract, usdc, weth, operator, payee, payer, target] = [a(0xe0), a(0xc0), a(0x42), a(0x0e), a(0xb0), a(0xa1), a(0x7a)]
const pricing: LedgerPricing = { runnerContract, usdc, weth, factory: a(0xfa), fee: 500, markupBps: 500 }
// 3,000 USDC per ETH: a base unit (10⁻⁶ USDC) is 10¹² / 3 wei.
const usdcPrice = { numerator: 1_000_000_000_000n, denominator: 3_000n }
const GWEI = 1_000_000_000n

type Log = TransactionReceipt['logs'][number]
// A log as a receipt carries it: only the address, topics and data matter to the ledger.
const log = (address: Address, topics: Hex[], data: Hex) => ({ address, topics, data }) as unknown as Log
const transfer = (token: Address, from: Address, to: Address, value: bigint) =>
  log(token, encodeEventTopics({ abi: erc20Abi, eventName: 'Transfer', args: { from, to } }) as Hex[], encodeAbiParameters([{ type: 'uint256' }], [value]))
const relayed = (received: bigint, charged: bigint, refunded: bigint) =>
  log(
    runnerContract,
    encodeEventTopics({ abi: runnerAbi, eventName: 'Relayed', args: { target, payee } }) as Hex[],
    encodeAbiParameters([{ type: 'uint256' }, { type: 'uint256' }, { type: 'uint256' }, { type: 'bool' }, { type: 'bytes' }], [received, charged, refunded, true, '0x']),
  )
const transaction = (input: Hex = '0x', to: Address | null = runnerContract) => ({ hash: `0x${'ab'.repeat(32)}` as Hex, blockNumber: 9n, from: operator, to, value: 0n, input, gas: 150_000n })
const receipt = (logs: Log[], gasUsed = 100_000n) => ({ status: 'success' as const, gasUsed, effectiveGasPrice: GWEI, logs })

t.test('a relay whose payee refunds: received, refunded and kept by the token\'s transfers; kept valued at the pool price; the ceiling at cost + the configured markup + 1 %', async (t) => {
  // 0.6 USDC paid; 0.285 sent back; 0.315 kept = 10.5 × 10¹³ wei at 3,000 USDC/ETH, for 100,000 gas at 1 gwei (10¹⁴ wei).
  const entry = ledgerEntry(transaction(), receipt([transfer(usdc, payer, payee, 600_000n), relayed(600_000n, 315_000n, 285_000n), transfer(usdc, payee, payer, 285_000n)]), operator, usdcPrice, pricing)
  t.strictSame(
    { kind: entry.kind, spentWei: entry.spentWei, received: entry.received, refunded: entry.refunded, charged: entry.charged, chargedByRunner: entry.chargedByRunner, keptWei: entry.keptWei },
    { kind: 'relay', spentWei: 100_000_000_000_000n, received: 600_000n, refunded: 285_000n, charged: 315_000n, chargedByRunner: 315_000n, keptWei: 105_000_000_000_000n },
  )
  t.strictSame(entry.atCost, { chargedWei: 105_000_000_000_000n, ceilingWei: 106_000_000_000_000n }, '10¹⁴ × 1.06')
  t.same(ledgerViolations([entry]), [])
  // A markup of 0 configured: the same charge is 5 % above cost, over 1.01 × cost.
  const unmarked = ledgerEntry(transaction(), receipt([transfer(usdc, payer, payee, 600_000n), relayed(600_000n, 315_000n, 285_000n), transfer(usdc, payee, payer, 285_000n)]), operator, usdcPrice, { ...pricing, markupBps: 0 })
  t.equal(unmarked.atCost!.ceilingWei, 101_000_000_000_000n, 'the ceiling follows the configured markup, not what the runner signed')
})

t.test('a payment kept whole (a payee that refunds nothing): no ceiling; a WETH payment is valued 1:1', async (t) => {
  const kept = ledgerEntry(transaction(), receipt([transfer(usdc, payer, payee, 600_000n), relayed(600_000n, 600_000n, 0n)]), operator, usdcPrice, pricing)
  t.strictSame([kept.charged, kept.keptWei, kept.atCost], [600_000n, 200_000_000_000_000n, undefined])
  const inWeth = ledgerEntry(transaction(), receipt([transfer(weth, payer, payee, 3n * 10n ** 14n), relayed(3n * 10n ** 14n, 3n * 10n ** 14n, 0n)]), operator, usdcPrice, pricing)
  t.strictSame([inWeth.received, inWeth.keptWei], [3n * 10n ** 14n, 3n * 10n ** 14n])
})

t.test('a cancellation: a 0-value self-transfer, nothing received', async (t) => {
  const cancel = ledgerEntry(transaction('0x', operator), receipt([], 21_000n), operator, usdcPrice, pricing)
  t.strictSame([cancel.kind, cancel.spentWei, cancel.received, cancel.keptWei], ['cancel', 21_000n * GWEI, 0n, 0n])
  t.match(ledgerViolations([cancel]), [/paid for 1 cancellation\(s\) \(0 allowed\)/])
})

t.test('a Relayed event that says the payee kept more than the token moved is a violation', async (t) => {
  const overstated = ledgerEntry(transaction(), receipt([transfer(usdc, payer, payee, 600_000n), relayed(600_000n, 400_000n, 200_000n), transfer(usdc, payee, payer, 285_000n)]), operator, usdcPrice, pricing)
  t.equal(overstated.charged, 315_000n, 'the token\'s count')
  t.match(ledgerViolations([overstated]), [/the Runner's Relayed event says the payee kept 400000, the token's transfers only 315000/])
})

// The verdict on one relay, from its figures alone: below cost, and (issue 32) above cost with the markup.
const relay: LedgerEntry = {
  hash: '0x01',
  blockNumber: 1n,
  status: 'success',
  kind: 'relay',
  gasUsed: 100_000n,
  gasLimit: 150_000n,
  spentWei: 100_000_000_000_000n,
  received: 600_000n,
  charged: 315_000n,
  refunded: 285_000n,
  chargedByRunner: 315_000n,
  keptWei: 105_000_000_000_000n,
  atCost: { chargedWei: 105_000_000_000_000n, ceilingWei: 106_000_000_000_000n },
}

t.same(ledgerViolations([relay]), [], 'a charge of cost + 5 %: no violation')
t.match(ledgerViolations([{ ...relay, keptWei: relay.spentWei - 1n }]), [/spent 100000000000000 wei and kept a charge worth 99999999999999 wei/], 'below cost')
// A call that clears storage earns a gas refund (EIP-3529) the Runner cannot see: at most a fifth of the gas before it.
t.same(ledgerViolations([{ ...relay, atCost: { chargedWei: 132_500_000_000_000n, ceilingWei: 106_000_000_000_000n } }]), [], 'a quarter above the ceiling: the most a gas refund explains')
t.match(
  ledgerViolations([{ ...relay, atCost: { chargedWei: 132_500_000_000_001n, ceilingWei: 106_000_000_000_000n } }]),
  [/charged 132500000000001 wei at the pool's price, above cost with the configured markup, 1 % and the most a chain's gas refund can be \(132500000000000 wei\)/],
  'a wei more',
)
const { atCost: _, ...keptWhole } = relay
t.same(ledgerViolations([{ ...keptWhole, refunded: 0n, charged: 600_000n, chargedByRunner: 600_000n, keptWei: 200_000_000_000_000n }]), [], 'a payment kept whole has no ceiling')
