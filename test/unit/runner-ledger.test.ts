import t from 'tap'
import { ledgerViolations, type LedgerEntry } from '../../core/testing/runnerLedger.ts'

// The ledger's verdict on one relay, from its figures alone: below cost, and (issue 32) above cost with the markup.

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
  keptWei: 105_000_000_000_000n,
  atCost: { chargedWei: 105_000_000_000_000n, ceilingWei: 106_000_000_000_000n },
}

t.same(ledgerViolations([relay]), [], 'a charge of cost + 5 %: no violation')
t.match(ledgerViolations([{ ...relay, keptWei: relay.spentWei - 1n }]), [/spent 100000000000000 wei and kept a charge worth 99999999999999 wei/], 'below cost')
// A call that clears storage earns a gas refund (EIP-3529) the Runner cannot see: at most a fifth of the gas before it.
t.same(ledgerViolations([{ ...relay, atCost: { chargedWei: 132_500_000_000_000n, ceilingWei: 106_000_000_000_000n } }]), [], 'a quarter above the ceiling: the most a gas refund explains')
t.match(
  ledgerViolations([{ ...relay, atCost: { chargedWei: 132_500_000_000_001n, ceilingWei: 106_000_000_000_000n } }]),
  [/charged 132500000000001 wei at its signed rate, above cost with its markup, 1 % and the most a chain's gas refund can be \(132500000000000 wei\)/],
  'a wei more',
)
const { atCost: _, ...keptWhole } = relay
t.same(ledgerViolations([{ ...keptWhole, refunded: 0n, charged: 600_000n, keptWei: 200_000_000_000_000n }]), [], 'a payment kept whole has no ceiling')
