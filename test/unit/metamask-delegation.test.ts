import t from 'tap'
import { decodeFunctionData, encodeAbiParameters, encodeFunctionData, getAddress, keccak256, type Hex } from 'viem'
import { paymentFirstEnforcer } from '../../plugins/metamask/contracts.ts'
import { delegationManagerAbi } from '../../plugins/metamask/abi.ts'
import {
  BATCH_MODE,
  batchHash,
  decodeBatches,
  delegationHash,
  encodeBatches,
  encodeExecutions,
  encodeRedemption,
  paymentFirstDelegation,
  pinnedBatches,
  readPaymentFirstDelegation,
  readRedemption,
  ROOT_AUTHORITY,
  type Delegation,
} from '../../plugins/metamask/delegation.ts'

// The payment-first delegation's encoders and readers, chain-free: what metamask_batch builds is
// what submit reads back, and every way a delegation can differ is named. (test/flow-metamask.test.ts
// and test/payment-first-enforcer.test.ts run them against MetaMask's own contracts.)

const a = (n: number) => getAddress(`0x${n.toString(16).padStart(40, '0')}`)
const runner = a(0xb0b)
const account = a(0xacc)
const leg = { target: a(0x05dc), value: 0n, callData: '0xa9059cbb' as Hex }
const calls = [{ target: a(0xf00d), value: 1n, callData: '0x12345678' as Hex }, { target: a(0xbeef), value: 0n, callData: '0x' as Hex }]
const delegation = paymentFirstDelegation({ account, runner, leg, calls, deadline: 1_800_000_000n, salt: 42n })
const signed: Delegation = { ...delegation, signature: `0x${'ab'.repeat(65)}` }
const terms = { paymentHash: keccak256(encodeExecutions([leg])), callsHash: keccak256(encodeExecutions(calls)), deadline: 1_800_000_000n }

t.test('paymentFirstDelegation: to the Runner, root authority, one caveat whose terms are the two batches\' hashes and the deadline', async (t) => {
  t.match(delegation, { delegate: runner, delegator: account, authority: ROOT_AUTHORITY, salt: 42n, signature: '0x' })
  t.same(delegation.caveats, [
    { enforcer: paymentFirstEnforcer, terms: encodeAbiParameters([{ type: 'bytes32' }, { type: 'bytes32' }, { type: 'uint256' }], [terms.paymentHash, terms.callsHash, 1_800_000_000n]), args: '0x' },
  ])
  t.equal((delegation.caveats[0]!.terms.length - 2) / 2, 96, '96 bytes of terms')
  const longer = paymentFirstDelegation({ account, runner, leg, calls: [...calls, ...calls, ...calls], deadline: 1_800_000_000n, salt: 42n })
  t.equal(longer.caveats[0]!.terms.length, delegation.caveats[0]!.terms.length, 'whatever the batch: the terms do not grow with it')
  t.same(readPaymentFirstDelegation(delegation, runner), terms)
  t.equal(batchHash([leg]), terms.paymentHash)
  t.not(delegationHash(delegation), delegationHash({ ...delegation, salt: 43n }), 'the salt makes it another delegation')
  t.equal(delegationHash(delegation), delegationHash(signed), 'the signature is not hashed')
})

t.test('readPaymentFirstDelegation names each way a delegation is not the payment-first one', async (t) => {
  t.match(readPaymentFirstDelegation({ ...delegation, delegate: a(1) }, runner), /^it delegates to 0x0+1, not to Bruno's Runner/)
  t.equal(readPaymentFirstDelegation({ ...delegation, authority: `0x${'00'.repeat(32)}` }, runner), 'it is not a root delegation (authority must be 2²⁵⁶−1)')
  const notOne = `its caveats are not the one payment-first caveat (Bruno's enforcer ${paymentFirstEnforcer})`
  t.equal(readPaymentFirstDelegation({ ...delegation, caveats: [] }, runner), notOne)
  t.equal(readPaymentFirstDelegation({ ...delegation, caveats: [...delegation.caveats, ...delegation.caveats] }, runner), notOne)
  t.equal(readPaymentFirstDelegation({ ...delegation, caveats: [{ ...delegation.caveats[0]!, enforcer: a(2) }] }, runner), notOne)
  t.equal(
    readPaymentFirstDelegation({ ...delegation, caveats: [{ ...delegation.caveats[0]!, terms: `${delegation.caveats[0]!.terms}00` }] }, runner),
    "its caveat's terms are not the two batch hashes and the deadline (96 bytes)",
  )
})

t.test('pinnedBatches: the batches must hash to what was signed, the payment one call', async (t) => {
  t.same(pinnedBatches(terms, [leg], calls), { leg, calls })
  t.equal(pinnedBatches(terms, [{ ...leg, value: 1n }], calls), 'the payment batch is not the one the delegation pins (its hash differs)')
  t.equal(pinnedBatches(terms, [leg], calls.slice(1)), 'the calls are not the ones the delegation pins (their hash differs)')
  t.equal(pinnedBatches(terms, calls, [leg]), 'the payment batch is not the one the delegation pins (its hash differs)', 'swapped')
  const twoLegs = { ...terms, paymentHash: batchHash([leg, leg]) }
  t.equal(pinnedBatches(twoLegs, [leg, leg], calls), 'its payment batch holds 2 calls, not 1')
})

t.test('encodeBatches / decodeBatches: the two batches beside the delegation, read back', async (t) => {
  t.same(decodeBatches(encodeBatches([leg], calls)), { payment: [leg], calls })
  t.equal(decodeBatches('0x1234'), undefined)
})

t.test('encodeRedemption / readRedemption: one delegation, no caveat arguments, the batch', async (t) => {
  const payment = encodeRedemption(signed, [leg])
  const callsData = encodeRedemption(signed, calls)
  t.equal(payment.slice(0, 10), '0xcef6d209', 'redeemDelegations')
  t.same(readRedemption(payment), { delegation: signed, executions: [leg] })
  t.same(readRedemption(callsData), { delegation: signed, executions: calls })
  t.equal(readRedemption('0xa9059cbb'), undefined, 'not a redemption at all')
  const two = encodeFunctionData({ abi: delegationManagerAbi, functionName: 'redeemDelegations', args: [[], [], []] })
  t.equal(readRedemption(two), 'it redeems 0 delegation chains, not 1')
  const withArgs = encodeRedemption({ ...signed, caveats: [{ ...signed.caveats[0]!, args: '0x01' }] }, calls)
  t.equal(readRedemption(withArgs), "its caveats carry arguments: a payment-first delegation's take none")
  const [contexts, , executions] = decodeFunctionData({ abi: delegationManagerAbi, data: callsData }).args as readonly [readonly Hex[], readonly Hex[], readonly Hex[]]
  const tryMode = encodeFunctionData({ abi: delegationManagerAbi, functionName: 'redeemDelegations', args: [contexts, [`0x0101${'00'.repeat(30)}`], executions] })
  t.match(readRedemption(tryMode), /^its mode is 0x0101/, 'a batch whose failures do not revert is refused')
  const garbled = encodeFunctionData({ abi: delegationManagerAbi, functionName: 'redeemDelegations', args: [['0x1234'], [BATCH_MODE], ['0x']] })
  t.equal(readRedemption(garbled), 'its delegation or batch does not decode')
})
