import t from 'tap'
import { BaseError, createPublicClient, createTestClient, createWalletClient, decodeErrorResult, encodeFunctionData, erc20Abi, getAddress, http, parseAbi, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { DEVNET_CHAIN_ID, devnetChain } from '../core/devnet/chain.ts'
import { paymentFirstEnforcerAbi } from '../contracts/abi.ts'
import { compileTypedFixture } from './fixtures/solidityFixture.ts'
import { encodeTransfer } from '../core/chain/erc20Calls.ts'
import { startAnvil } from '../core/devnet/anvil.ts'
import { deployDevnet } from '../core/devnet/deploy.ts'
import { mintUsdc, setEthBalance } from '../core/devnet/fund.ts'
import { executionOf } from '../plugins/metamask/batch.ts'
import { metaMaskContracts, paymentFirstEnforcer } from '../plugins/metamask/contracts.ts'
import { delegationManagerAbi } from '../plugins/metamask/abi.ts'
import {
  BATCH_MODE,
  batchHash,
  delegationHash,
  delegationTypedData,
  encodeExecutions,
  paymentFirstDelegation,
  permissionContext,
  signedDelegation,
  type Delegation,
  type Execution,
} from '../plugins/metamask/delegation.ts'

// Bruno's PaymentFirstEnforcer under MetaMask's real DelegationManager v1.3.0: a delegation with its
// one caveat runs its payment batch, in its account's payment phase, then its calls batch in the same
// transaction, each exactly as hashed, once, before its deadline — and nothing else. The redeemer
// here is a test contract that answers `paying()` as the Runner does, with whatever account the test
// names, so each order can be tried in and out of the payment phase, in one transaction or two.

const anvil = await startAnvil()
t.teardown(() => anvil.stop())
// The devnet builds MetaMask's contracts and Bruno's enforcer (the metamask group's devnet hook).
const deployment = await deployDevnet(anvil.rpcUrl)
const transport = http(anvil.rpcUrl)
const client = createPublicClient({ chain: devnetChain(), transport })
const chain = createTestClient({ mode: 'anvil', chain: devnetChain(), transport })
const usdc = deployment.usdc
const manager = metaMaskContracts.delegationManager
const sender = privateKeyToAccount(generatePrivateKey())
await setEthBalance(anvil.rpcUrl, sender.address, 10n ** 18n)
const wallet = createWalletClient({ account: sender, chain: devnetChain(), transport })
const redeemerAbi = parseAbi(['function redeem(address manager, bytes[] datas, address[] payingAs)', 'function paying() view returns (address)'])
const redeemerArtifact = compileTypedFixture('PaymentPhaseRedeemer', redeemerAbi)
const redeemer = { address: getAddress((await client.waitForTransactionReceipt({ hash: await wallet.deployContract({ abi: redeemerAbi, bytecode: redeemerArtifact.bytecode }) })).contractAddress!) }
const payee = privateKeyToAccount(generatePrivateKey()).address
const usdcOf = (address: Hex) => client.readContract({ address: usdc, abi: erc20Abi, functionName: 'balanceOf', args: [address] })
const now = async () => (await client.getBlock()).timestamp

let salt = 1n
/** A fresh account delegated to MetaMask's delegator, holding USDC, and its signed payment-first delegation to `redeemer`. */
async function delegated(options: { deadline?: bigint; terms?: Hex } = {}) {
  const owner = privateKeyToAccount(generatePrivateKey())
  await chain.setCode({ address: owner.address, bytecode: `0xef0100${metaMaskContracts.delegator.slice(2)}` })
  await mintUsdc(anvil.rpcUrl, deployment, owner.address, 10_000_000n)
  const friend = privateKeyToAccount(generatePrivateKey()).address
  const payment = [executionOf(encodeTransfer({ token: usdc, to: payee, amount: 1_000n }))]
  const calls = [executionOf(encodeTransfer({ token: usdc, to: friend, amount: 2_000n }))]
  const built = paymentFirstDelegation({ account: owner.address, runner: redeemer.address, leg: payment[0]!, calls, deadline: options.deadline ?? (await now()) + 600n, salt: salt++ })
  const unsigned = options.terms ? { ...built, caveats: [{ ...built.caveats[0]!, terms: options.terms }] } : built
  const typed = delegationTypedData(DEVNET_CHAIN_ID, unsigned)
  const signed = signedDelegation(unsigned, await owner.signTypedData({ ...typed, message: { ...typed.message, salt: unsigned.salt } } as never))
  return { owner, friend, payment, calls, delegation: signed }
}

const context = permissionContext

/** `redeemDelegations` of `delegation`, once per batch, in one call to the manager. */
const managerCall = (delegation: Delegation, batches: readonly (readonly Execution[])[], mode: Hex = BATCH_MODE) =>
  encodeFunctionData({
    abi: delegationManagerAbi,
    functionName: 'redeemDelegations',
    args: [batches.map(() => context(delegation)), batches.map(() => mode), batches.map(encodeExecutions)],
  })
/** The redeemer's calls to the manager, in one transaction, each while `paying()` answers its account. */
const inOneTransaction = (...calls: readonly { data: Hex; payingAs: Hex }[]) =>
  encodeFunctionData({ abi: redeemerAbi, functionName: 'redeem', args: [manager, calls.map((call) => call.data), calls.map((call) => call.payingAs)] })
/** One manager call redeeming `delegation` once per batch, in its account's payment phase (or `payingAs`'s). */
const redemption = (delegation: Delegation, batches: readonly (readonly Execution[])[], mode: Hex = BATCH_MODE, payingAs: Hex = delegation.delegator) =>
  inOneTransaction({ data: managerCall(delegation, batches, mode), payingAs })
const redeem = async (data: Hex) => {
  const receipt = await client.waitForTransactionReceipt({ hash: await wallet.sendTransaction({ to: redeemer.address, data, gas: 2_000_000n }) })
  if (receipt.status !== 'success') throw new Error('reverted')
}
/** The enforcer's error a redemption reverts with, by name and arguments. */
const refusal = async (data: Hex) => {
  try {
    await client.call({ account: sender.address, to: redeemer.address, data })
  } catch (error) {
    const raw = (error as BaseError).walk((cause) => typeof (cause as { data?: unknown }).data === 'string') as { data?: Hex } | null
    const decoded = decodeErrorResult({ abi: paymentFirstEnforcerAbi, data: raw!.data! })
    return { name: decoded.errorName, args: decoded.args ?? [] }
  }
  return 'ran'
}
const redemptions = (delegation: Delegation, by: Hex = manager) =>
  client.readContract({ address: paymentFirstEnforcer, abi: paymentFirstEnforcerAbi, functionName: 'redemptions', args: [by, delegationHash(delegation)] })

t.test('the payment, then the calls, in one transaction: both run, as hashed; counted twice, and nothing runs after', async (t) => {
  const { owner, friend, payment, calls, delegation } = await delegated()
  const payeeBefore = await usdcOf(payee)
  await redeem(redemption(delegation, [payment, calls]))
  t.equal(await usdcOf(payee), payeeBefore + 1_000n, 'the payment ran')
  t.equal(await usdcOf(friend), 2_000n, 'then the calls')
  t.equal(await usdcOf(owner.address), 10_000_000n - 3_000n)
  t.equal(await redemptions(delegation), 2n)
  t.same(await refusal(redemption(delegation, [payment])), { name: 'RedeemedTwice', args: [] }, 'the payment again: refused')
  t.same(await refusal(redemption(delegation, [calls])), { name: 'RedeemedTwice', args: [] }, 'the calls again: refused')
})

t.test('the calls first, or a batch other than the one pinned next, are WrongBatch: nothing runs', async (t) => {
  const { friend, payment, calls, delegation } = await delegated()
  t.same(await refusal(redemption(delegation, [calls])), { name: 'WrongBatch', args: [batchHash(payment), batchHash(calls)] }, 'the calls before the payment')
  t.same(await refusal(redemption(delegation, [calls, payment])), { name: 'WrongBatch', args: [batchHash(payment), batchHash(calls)] }, 'swapped')
  t.same(await refusal(redemption(delegation, [payment, payment])), { name: 'WrongBatch', args: [batchHash(calls), batchHash(payment)] }, 'the payment twice')
  const other = [executionOf(encodeTransfer({ token: usdc, to: friend, amount: 2_001n }))]
  t.same(await refusal(redemption(delegation, [payment, other])), { name: 'WrongBatch', args: [batchHash(calls), batchHash(other)] }, 'calls one unit off')
  t.equal(await redemptions(delegation), 0n)
  t.equal(await usdcOf(friend), 0n)
})

t.test('calls in a later transaction than their payment never run: NotPaidInThisTransaction', async (t) => {
  const { friend, payment, calls, delegation } = await delegated()
  await redeem(redemption(delegation, [payment]))
  t.equal(await redemptions(delegation), 1n, 'the payment counted')
  t.same(await refusal(redemption(delegation, [calls])), { name: 'NotPaidInThisTransaction', args: [] })
  t.equal(await usdcOf(friend), 0n)
})

t.test('the calls follow their own delegation\'s payment, not the last one made: another payment between is NotPaidInThisTransaction', async (t) => {
  const first = await delegated()
  const second = await delegated()
  const paying = (of: typeof first) => of.owner.address
  t.same(
    await refusal(inOneTransaction({ data: managerCall(first.delegation, [first.payment]), payingAs: paying(first) }, { data: managerCall(first.delegation, [first.calls]), payingAs: paying(first) })),
    'ran',
    'its own payment, then its calls, in two manager calls of one transaction: they run',
  )
  const between = inOneTransaction(
    { data: managerCall(first.delegation, [first.payment]), payingAs: paying(first) },
    { data: managerCall(second.delegation, [second.payment]), payingAs: paying(second) },
    { data: managerCall(first.delegation, [first.calls]), payingAs: paying(first) },
  )
  t.same(await refusal(between), { name: 'NotPaidInThisTransaction', args: [] })
})

t.test('a deadline passed, another mode, terms of another length: refused before anything runs', async (t) => {
  const deadline = (await now()) - 1n
  const late = await delegated({ deadline })
  const expired = await refusal(redemption(late.delegation, [late.payment]))
  t.match(expired, { name: 'DelegationExpired' })
  t.same(expired, { name: 'DelegationExpired', args: [deadline] }, 'names the deadline')
  const onTime = await delegated()
  const single = `0x${'00'.repeat(32)}` as Hex
  t.same(await refusal(redemption(onTime.delegation, [onTime.payment], single)), { name: 'NotBatchMode', args: [single] })
  const tryMode = `0x0101${'00'.repeat(30)}` as Hex
  t.same(await refusal(redemption(onTime.delegation, [onTime.payment], tryMode)), { name: 'NotBatchMode', args: [tryMode] }, 'a batch that goes on past a failure')
  const short = await delegated({ terms: `0x${'11'.repeat(64)}` })
  t.same(await refusal(redemption(short.delegation, [short.payment])), { name: 'TermsNotThreeWords', args: [] })
  const long = await delegated({ terms: `${onTime.delegation.caveats[0]!.terms}00` })
  t.same(await refusal(redemption(long.delegation, [long.payment])), { name: 'TermsNotThreeWords', args: [] })
})

t.test('the deadline itself is still on time: the bound is inclusive', async (t) => {
  // One reading of the clock: the block mined next is stamped with the signed deadline exactly.
  const deadline = (await now()) + 30n
  const { payment, calls, delegation, friend } = await delegated({ deadline })
  await chain.setNextBlockTimestamp({ timestamp: deadline })
  await redeem(redemption(delegation, [payment, calls]))
  t.equal(await usdcOf(friend), 2_000n)
})

t.test('a payment outside its account\'s payment phase is NotPaymentPhase: no relayed call can spend it', async (t) => {
  const { owner, friend, payment, calls, delegation } = await delegated()
  const zero = '0x0000000000000000000000000000000000000000'
  t.same(await refusal(redemption(delegation, [payment], BATCH_MODE, zero)), { name: 'NotPaymentPhase', args: [zero] }, 'outside any payment phase (a relayed call)')
  t.same(await refusal(redemption(delegation, [payment], BATCH_MODE, friend)), { name: 'NotPaymentPhase', args: [friend] }, "in another account's payment phase")
  t.equal(await redemptions(delegation), 0n, 'nothing counted')
  await redeem(redemption(delegation, [payment, calls], BATCH_MODE, owner.address))
  t.equal(await usdcOf(friend), 2_000n, 'in its own: it runs, then the calls')
})

t.test('a stranger calling the hook itself counts only under its own name: the manager\'s count is untouched', async (t) => {
  const { friend, payment, calls, delegation } = await delegated()
  // The stranger: a contract (the test redeemer) calling the enforcer's hook directly, naming itself
  // the redeemer and answering paying() with the account, as a hostile redeemer would.
  const hook = encodeFunctionData({
    abi: paymentFirstEnforcerAbi,
    functionName: 'beforeHook',
    args: [delegation.caveats[0]!.terms, '0x', BATCH_MODE, encodeExecutions(payment), delegationHash(delegation), delegation.delegator, redeemer.address],
  })
  await redeem(encodeFunctionData({ abi: redeemerAbi, functionName: 'redeem', args: [paymentFirstEnforcer, [hook], [delegation.delegator]] }))
  t.equal(await redemptions(delegation, redeemer.address), 1n, 'its own count')
  t.equal(await redemptions(delegation), 0n, 'the manager\'s: none')
  await redeem(redemption(delegation, [payment, calls]))
  t.equal(await usdcOf(friend), 2_000n, 'the account\'s own redemptions run as signed')
})
