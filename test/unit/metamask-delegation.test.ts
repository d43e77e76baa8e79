import t from 'tap'
import { decodeFunctionData, encodeAbiParameters, encodeFunctionData, getAddress, numberToHex, type Hex } from 'viem'
import { metaMaskContracts } from '../../plugins/metamask/contracts.ts'
import { delegationManagerAbi } from '../../plugins/metamask/abi.ts'
import {
  BATCH_MODE,
  CALLS_GROUP,
  delegationHash,
  encodeRedemption,
  PAYMENT_GROUP,
  paymentFirstDelegation,
  readPaymentFirstDelegation,
  readRedemption,
  ROOT_AUTHORITY,
  type Delegation,
} from '../../plugins/metamask/delegation.ts'

// The payment-first delegation's encoders and readers, chain-free: what metamask_batch builds is
// what submit reads back, and every way a delegation can differ is named. (test/flow-metamask.test.ts
// runs them against MetaMask's own contracts.)

const a = (n: number) => getAddress(`0x${n.toString(16).padStart(40, '0')}`)
const runner = a(0xb0b)
const account = a(0xacc)
const leg = { target: a(0x05dc), value: 0n, callData: '0xa9059cbb' as Hex }
const calls = [{ target: a(0xf00d), value: 1n, callData: '0x12345678' as Hex }, { target: a(0xbeef), value: 0n, callData: '0x' as Hex }]
const delegation = paymentFirstDelegation({ account, runner, leg, calls, deadline: 1_800_000_000n, salt: 42n })
const signed: Delegation = { ...delegation, signature: `0x${'ab'.repeat(65)}` }

t.test('paymentFirstDelegation: to the Runner, root authority, the pair of groups and the deadline; read back whole', async (t) => {
  t.match(delegation, { delegate: runner, delegator: account, authority: ROOT_AUTHORITY, salt: 42n, signature: '0x' })
  t.same(delegation.caveats.map((caveat) => caveat.enforcer), [metaMaskContracts.logicalOrWrapper, metaMaskContracts.timestamp])
  t.equal(delegation.caveats[1]!.terms, numberToHex(1_800_000_001n, { size: 32 }), 'the timestamp bound is exclusive: deadline + 1, no "after"')
  t.same(readPaymentFirstDelegation(delegation, runner), { leg, calls, deadline: 1_800_000_000n })
  t.not(delegationHash(delegation), delegationHash({ ...delegation, salt: 43n }), 'the salt makes it another delegation')
  t.equal(delegationHash(delegation), delegationHash(signed), 'the signature is not hashed')
})

t.test('readPaymentFirstDelegation names each way a delegation is not the payment-first one', async (t) => {
  t.match(readPaymentFirstDelegation({ ...delegation, delegate: a(1) }, runner), /^it delegates to 0x0+1, not to Bruno's Runner/)
  t.equal(readPaymentFirstDelegation({ ...delegation, authority: `0x${'00'.repeat(32)}` }, runner), 'it is not a root delegation (authority must be 2²⁵⁶−1)')
  t.equal(readPaymentFirstDelegation({ ...delegation, caveats: delegation.caveats.slice(0, 1) }, runner), 'its caveats are not the payment-first pair of groups and a deadline')
  t.equal(readPaymentFirstDelegation({ ...delegation, caveats: [...delegation.caveats].reverse() }, runner), 'its caveats are not the payment-first pair of groups and a deadline')
  const noDeadline = { ...delegation, caveats: [delegation.caveats[0]!, { ...delegation.caveats[1]!, terms: numberToHex(1n << 128n, { size: 32 }) }] }
  t.equal(readPaymentFirstDelegation(noDeadline, runner), 'its deadline caveat does not end it at a time (TimestampEnforcer: no "after", a "before")')
  // Groups that let the payment run twice, or pin two calls in the payment group.
  const twice = paymentFirstDelegation({ account, runner, leg, calls, deadline: 1n, salt: 1n })
  const groupsOf = (limits: [bigint, bigint], paymentCalls = [leg]) => {
    const caveats = (executions: readonly typeof leg[], limit: bigint) => [
      { enforcer: metaMaskContracts.exactExecutionBatch, terms: encodeAbiParameters([{ type: 'tuple[]', components: [{ name: 'target', type: 'address' }, { name: 'value', type: 'uint256' }, { name: 'callData', type: 'bytes' }] }], [executions]), args: '0x' as Hex },
      { enforcer: metaMaskContracts.limitedCalls, terms: numberToHex(limit, { size: 32 }), args: '0x' as Hex },
    ]
    const terms = encodeAbiParameters(
      [{ type: 'tuple[]', components: [{ name: 'caveats', type: 'tuple[]', components: [{ name: 'enforcer', type: 'address' }, { name: 'terms', type: 'bytes' }, { name: 'args', type: 'bytes' }] }] }],
      [[{ caveats: caveats(paymentCalls, limits[0]) }, { caveats: caveats(calls, limits[1]) }]],
    )
    return { ...twice, caveats: [{ ...twice.caveats[0]!, terms }, twice.caveats[1]!] }
  }
  t.same(readPaymentFirstDelegation(groupsOf([1n, 2n]), runner), { leg, calls, deadline: 1n }, 'the groups as built read back')
  t.equal(readPaymentFirstDelegation(groupsOf([2n, 2n]), runner), 'its groups allow 2 and 2 redemptions, not 1 (the payment) and 2 (the calls, after it)')
  t.equal(readPaymentFirstDelegation(groupsOf([1n, 3n]), runner), 'its groups allow 1 and 3 redemptions, not 1 (the payment) and 2 (the calls, after it)')
  t.equal(readPaymentFirstDelegation(groupsOf([1n, 2n], [leg, leg]), runner), 'its payment group pins 2 calls, not 1')
})

t.test('encodeRedemption / readRedemption: one delegation, its group picked in the wrapper\'s arguments (not signed), the batch', async (t) => {
  const payment = encodeRedemption(signed, PAYMENT_GROUP, [leg])
  const callsData = encodeRedemption(signed, CALLS_GROUP, calls)
  t.equal(payment.slice(0, 10), '0xcef6d209', 'redeemDelegations')
  t.same(readRedemption(payment), { delegation: signed, group: PAYMENT_GROUP, executions: [leg] })
  t.same(readRedemption(callsData), { delegation: signed, group: CALLS_GROUP, executions: calls })
  t.equal(readRedemption('0xa9059cbb'), undefined, 'not a redemption at all')
  const two = encodeFunctionData({ abi: delegationManagerAbi, functionName: 'redeemDelegations', args: [[], [], []] })
  t.equal(readRedemption(two), 'it redeems 0 delegation chains, not 1')
  const [contexts, , executions] = decodeFunctionData({ abi: delegationManagerAbi, data: callsData }).args as readonly [readonly Hex[], readonly Hex[], readonly Hex[]]
  const tryMode = encodeFunctionData({ abi: delegationManagerAbi, functionName: 'redeemDelegations', args: [contexts, [`0x0101${'00'.repeat(30)}`], executions] })
  t.match(readRedemption(tryMode), /^its mode is 0x0101/, 'a batch whose failures do not revert is refused')
  const garbled = encodeFunctionData({ abi: delegationManagerAbi, functionName: 'redeemDelegations', args: [['0x1234'], [BATCH_MODE], ['0x']] })
  t.equal(readRedemption(garbled), 'its delegation, caveat arguments or batch do not decode')
})
