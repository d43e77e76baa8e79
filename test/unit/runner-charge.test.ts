import t from 'tap'
import { getAddress, zeroAddress } from 'viem'
import { encodeRunnerCall, type RunnerRelay } from '../../core/relay/runnerCall.ts'
import { estimateCharge, expectedCharge, refundCap, REFUND_GAS_MARGIN, refundUnderItsGas, runnerCharge } from '../../core/relay/runnerCharge.ts'
import { calldataGas } from '../../core/relay/runnerTransaction.ts'

// The charge the runner signs (core/relay/runnerCharge.ts): its figures from a relay, a price and a fee, each rounded
// the runner's way.

const a = (n: number) => getAddress(`0x${n.toString(16).padStart(40, '0')}`)
const relay: RunnerRelay = {
  form: 'authorization',
  call: { to: zeroAddress, data: '0x' },
  payment: {
    token: a(0xc0),
    authorization: { from: a(0xa1), to: a(0xb0), value: '1000000', validAfter: '0', validBefore: '4000000000', nonce: `0x${'ab'.repeat(32)}` },
    signature: `0x${'11'.repeat(32)}${'22'.repeat(32)}1b`,
  },
  payee: a(0xb0),
}
// 3,000 base units (USDC: 0.003) per 10^12 wei: 3,000,000,000 per ether, exactly.
const price = { numerator: 1_000_000_000n, denominator: 3n }

t.test('runnerCharge: base gas from the calldata with its own figures at their dearest, the floor, the price rounded up, the L1 fee as priced', async (t) => {
  const charge = runnerCharge({ relay, callGas: 0n, authorizationGas: 25_000n, l1FeeWei: 1_000n, weiPerBaseUnit: price, markupBps: 500, refundGas: 7_023n })
  const calldata = calldataGas(encodeRunnerCall(relay, 0n, { ...charge, baseGas: 0xffffffn, floorGas: 0xffffffn }))
  t.equal(charge.baseGas, 21_000n + calldata + 25_000n)
  t.equal(charge.floorGas, 21_000n + (10n * calldata) / 4n)
  t.ok(calldataGas(encodeRunnerCall(relay, 0n, charge)) <= calldata, 'the real figures cost no more calldata than the ones counted')
  t.equal(charge.unitsPerEther, 3_000_000_000n)
  t.equal(charge.l1FeeWei, 1_000n, 'the L1 fee as the runner priced it (readL1DataFee has added its headroom)')
  t.equal(charge.markupBps, 500n)
  t.equal(charge.refundGas, 7_023n)
  const odd = runnerCharge({ relay, callGas: 0n, authorizationGas: 0n, l1FeeWei: 1_001n, weiPerBaseUnit: { numerator: 7n, denominator: 1n }, markupBps: 0, refundGas: 1n })
  t.equal(odd.unitsPerEther, 142_857_142_857_142_858n, '10^18 / 7 rounded up: never a unit per ether less than the price')
})

t.test('the estimate charge costs at least the real one in calldata; refundCap adds the margin, none for no refund', async (t) => {
  const real = runnerCharge({ relay, callGas: 0n, authorizationGas: 0n, l1FeeWei: 123_456_789_000n, weiPerBaseUnit: price, markupBps: 500, refundGas: 7_023n })
  t.ok(calldataGas(encodeRunnerCall(relay, 0n, estimateCharge(7_023n, 500))) >= calldataGas(encodeRunnerCall(relay, 0n, real)))
  t.equal(refundCap(0n), 0n, 'a payee that made no refund: none asked')
  t.equal(refundCap(6_773n), 6_773n + REFUND_GAS_MARGIN)
})

t.test('expectedCharge runs the Runner\'s formula ahead: the floor, the fee, the price, the markup, never above the payment', async (t) => {
  const charge = { baseGas: 30_000n, floorGas: 50_000n, l1FeeWei: 0n, unitsPerEther: 3_000_000_000n, markupBps: 500n, refundGas: 7_023n }
  // 140,000 gas at 1.1 gwei: 1.54e14 wei = 462,000 units; + 5 % = 485,100.
  t.equal(expectedCharge(charge, 140_000n, 1_100_000_000n, 1_000_000n), 485_100n)
  t.equal(expectedCharge(charge, 10_000n, 1_100_000_000n, 1_000_000n), 173_250n, 'below the floor: the floor (50,000 gas: 165,000 units, + 5 %)')
  t.equal(expectedCharge({ ...charge, l1FeeWei: 10n ** 14n }, 140_000n, 1_100_000_000n, 1_000_000n), 800_100n, 'an L1 fee of 1e14 wei: 300,000 units more, + 5 %')
  t.equal(expectedCharge(charge, 140_000n, 1_100_000_000n, 400_000n), 400_000n, 'never above the payment')
  t.equal(expectedCharge({ ...charge, refundGas: 0n }, 140_000n, 1_100_000_000n, 1_000_000n), 1_000_000n, 'no refund: the whole payment')
  t.equal(expectedCharge({ ...charge, unitsPerEther: 1n }, 1n, 1n, 10n), 2n, 'a fraction of a unit is one; its markup one more')
})

t.test('refundUnderItsGas: a refund worth no more than its own gas is kept, one worth more is made; no refund asked, none to weigh', async (t) => {
  // 3,000 units per 10^12 wei: at 1 gwei, 10,000 gas of refund cost 10^13 wei = 30,000 units.
  const charge = runnerCharge({ relay, callGas: 0n, authorizationGas: 0n, l1FeeWei: 0n, weiPerBaseUnit: price, markupBps: 0, refundGas: 10_000n })
  const fee = 1_000_000_000n
  const charged = expectedCharge(charge, 100_000n, fee, 10n ** 9n)
  t.equal(refundUnderItsGas(charge, 100_000n, fee, charged + 30_000n, price), true, 'a refund of 30,000 units, worth exactly its gas: kept')
  t.equal(refundUnderItsGas(charge, 100_000n, fee, charged + 30_001n, price), false, '30,001 units: made')
  t.equal(refundUnderItsGas({ ...charge, refundGas: 0n }, 100_000n, fee, 1n, price), false, 'no refund asked')
})
