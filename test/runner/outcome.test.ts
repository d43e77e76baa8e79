import t from 'tap'
import { concat, encodeFunctionData, erc20Abi, getAddress, parseAbi, toHex, zeroAddress, type Address, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { encodeTransfer } from '../../core/plugin.ts'
import type { Delegate } from '../../core/relay/delegate.ts'
import type { SignedAuthorization } from '../../core/relay/schemas.ts'
import { paymentToken } from '../../core/relay/paymentToken.ts'
import { describeCallFailure } from '../../core/relay/callFailure.ts'
import { relayOfRequest } from '../../core/relay/relayOfRequest.ts'
import { submitCall } from '../../core/relay/submit.ts'
import { encodeSignedExecute } from '../../plugins/calibur/executeCalldata.ts'
import { caliburDelegate, ownCallsBatch, paymentBatch } from '../../plugins/calibur/paymentFirstBatch.ts'
import { caliburTypedData, type CaliburTypedDataParameters } from '../../plugins/calibur/typedData.ts'
import { currentFees, dropTransaction, paymentValue, settledOutcome, startRunnerDevnet, type RunnerDevnet } from './runnerDevnet.ts'
import { CALIBUR_ADDRESS } from '../../plugins/calibur/networkOptions.ts'

// What the runner records once a transaction is included: the call's failure on chain (the payment
// taken all the same) in the token's words or without any, a payment phase that reverted (the one
// loss DESIGN §3 allows: the payer's own doing in the same block), and the pruning of settled
// submissions past the retention period. The races are played in one block: the runner's
// transaction waits in the pool while the test sends a transaction that outbids it (anvil orders a
// block by tip).

const OUTBID = { maxFeePerGas: 200_000_000_000n, maxPriorityFeePerGas: 50_000_000_000n } as const
const wethAbi = parseAbi(['function deposit() payable', 'function transfer(address to, uint256 value) returns (bool)'])

/** An account of the test's with ETH for its own transactions, sending straight to anvil. */
async function funded(devnet: RunnerDevnet, key: Hex) {
  const account = privateKeyToAccount(key)
  await devnet.testClient.setBalance({ address: account.address, value: 10n ** 18n })
  const send = async (to: Address, data: Hex, value = 0n, fees: { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint } = OUTBID) => {
    const nonce = await devnet.client.getTransactionCount({ address: account.address, blockTag: 'pending' })
    const raw = await account.signTransaction({ chainId: devnet.network.chainId, to, data, value, nonce, gas: 200_000n, ...fees, type: 'eip1559' })
    return devnet.client.sendRawTransaction({ serializedTransaction: raw })
  }
  return { account, send }
}

/**
 * A fresh account delegated to the devnet's Calibur-compatible delegate (or, `inTheSameTransaction`, its signed 7702
 * authorization to it, for the relay's transaction to carry), holding 100 USDC, and its signed
 * `execute` of a batch (nonce 0 unless given, no deadline, any executor). The calibur group's reader joins the relay's
 * context as the app registers it: its errors join the relay's words.
 */
async function caliburAccount(devnet: RunnerDevnet, inTheSameTransaction = false) {
  const reader = caliburDelegate({ token: (_chain, token) => paymentToken(devnet.context.network, token) }, () => CALIBUR_ADDRESS)
  ;(devnet.context.delegates as Delegate[]).push(reader)
  const account = privateKeyToAccount((await devnet.payer()).key)
  let authorizationList: SignedAuthorization[] | undefined
  if (inTheSameTransaction) {
    const signed = await account.signAuthorization({ contractAddress: CALIBUR_ADDRESS, chainId: devnet.network.chainId, nonce: 0 })
    authorizationList = [{ chainId: signed.chainId, address: signed.address, nonce: signed.nonce, r: signed.r, s: signed.s, yParity: signed.yParity as 0 | 1 }]
  } else await devnet.testClient.setCode({ address: account.address, bytecode: concat(['0xef0100', CALIBUR_ADDRESS]) })
  const domain = { chainId: devnet.network.chainId, account: account.address, salt: toHex(BigInt(CALIBUR_ADDRESS), { size: 32 }) }
  // Any executor by default; a payment batch names the Runner (submit refuses one anyone could run).
  const signedExecute = async (batch: CaliburTypedDataParameters['batch'], nonce = 0n, executor: Address = zeroAddress) => {
    const typedData = caliburTypedData({ domain, batch, nonce, deadline: 0n, executor })
    return { to: account.address, data: encodeSignedExecute({ message: typedData.message, signature: await account.signTypedData(typedData as never) }) }
  }
  return { account, signedExecute, authorizationList }
}

t.test('a call that fails on chain: done, the payment taken, the call\'s failure in its own words', async (t) => {
  const devnet = await startRunnerDevnet(t)
  const owner = await devnet.payer()
  const payer = await devnet.payer()
  const { send } = await funded(devnet, owner.key)
  const runner = devnet.network.runner.contract as Address
  // The call spends the owner's allowance to the Runner; the owner takes it back in the same block, first.
  await send(devnet.deployment.usdc, encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [runner, 1n] }))
  await devnet.mine()
  const call = { to: devnet.deployment.usdc, data: encodeFunctionData({ abi: erc20Abi, functionName: 'transferFrom', args: [owner.address, owner.address, 1n] }) }
  const a = await devnet.submit(payer, { call })
  await devnet.pass()
  t.equal((await devnet.get(a.id)).stage, 'sending')
  await send(devnet.deployment.usdc, encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [runner, 0n] }))
  await devnet.mine()
  await devnet.pass()
  const done = await devnet.get(a.id)
  t.equal(done.stage, 'done', 'done: the runner was paid')
  t.same(settledOutcome(t, done.outcome), { paidBaseUnits: paymentValue(a), callSucceeded: false, callReason: 'the call reverted: ERC20: transfer amount exceeds allowance' })
  t.equal(done.reason, 'the call failed on chain (the payment was taken): the call reverted: ERC20: transfer amount exceeds allowance')
  t.equal(done.fault, undefined, 'no fault: the runner lost nothing')
})

t.test('a call that fails on chain with an error only a batch reader knows (Calibur\'s): said in that reader\'s words', async (t) => {
  const devnet = await startRunnerDevnet(t)
  const [payer, sender] = [await devnet.payer(), await devnet.payer()]
  // The call: a Calibur account's signed execute of a read, at its nonce 0, for any executor.
  const { account, signedExecute } = await caliburAccount(devnet)
  const read = devnet.readCall(account.address)
  const call = await signedExecute({ calls: [{ to: read.to, value: '0', data: read.data }], revertOnFailure: true })
  const a = await devnet.submit(payer, { call })
  await devnet.pass()
  t.equal((await devnet.get(a.id)).stage, 'sending')
  // Anyone may send that signed execute: sent first in the same block, it leaves the relay's call a used nonce.
  const { send } = await funded(devnet, sender.key)
  await send(call.to, call.data)
  await devnet.mine()
  await devnet.pass()
  const done = await devnet.get(a.id)
  t.equal(done.stage, 'done', 'done: the runner was paid')
  t.same(settledOutcome(t, done.outcome), { paidBaseUnits: paymentValue(a), callSucceeded: false, callReason: 'the batch nonce is not the account\'s current one: it was used already or skips ahead (InvalidNonce)' })
})

for (const delegation of ['delegated before', 'delegated in the same transaction'] as const) {
  t.test(`a batch whose own calls fail on chain, ${delegation}: the Runner keeps their reason (Calibur's CallFailed of the token's), said in the token's words`, async (t) => {
    const devnet = await startRunnerDevnet(t)
    const lender = await devnet.payer()
    // A first-hour account (issue 29, point 5) is delegated by the relay itself: its 7702 authorization rides in the transaction.
    const { account, signedExecute, authorizationList } = await caliburAccount(devnet, delegation === 'delegated in the same transaction')
    const { send } = await funded(devnet, lender.key)
    // The account's own call spends the lender's allowance to it; the lender takes it back a block before the relay is in.
    // At the runner's own fees, so that the node's tip stays where it was (it follows recent blocks' tips).
    await send(devnet.deployment.usdc, encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [account.address, 1n] }), 0n, await currentFees(devnet))
    await devnet.mine()
    const amount = 10_000_000n
    const leg = encodeTransfer({ token: devnet.deployment.usdc, to: devnet.payee, amount })
    const borrow = { to: devnet.deployment.usdc, value: '0', data: encodeFunctionData({ abi: erc20Abi, functionName: 'transferFrom', args: [lender.address, lender.address, 1n] }) }
    const payment = await signedExecute(paymentBatch({ ...leg, to: getAddress(leg.to), data: leg.data as Hex }), 0n, devnet.deployment.runner.contract)
    const view = await submitCall(devnet.context, {
      call: await signedExecute(ownCallsBatch([borrow]), 1n),
      payment: { token: devnet.deployment.usdc, amountBaseUnits: amount.toString(), batch: payment.data },
      ...(authorizationList ? { authorizationList } : {}),
    })
    await devnet.pass()
    const sent = await devnet.get(view.id)
    // The node loses the relay (anvil keeps none back from a block; a real node may) and the lender's revocation is mined
    // alone. Restarted, the runner broadcasts what it has in flight again: the relay is in the next block.
    await dropTransaction(devnet, sent.transaction!.hash)
    const revocation = await send(devnet.deployment.usdc, encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [account.address, 0n] }))
    await devnet.mine()
    await devnet.restart()
    await devnet.pass()
    await devnet.mine()
    await devnet.pass()
    const done = await devnet.get(view.id)
    const [relayed, revoked] = await Promise.all([sent.transaction!.hash, revocation].map((hash) => devnet.client.getTransactionReceipt({ hash })))
    t.equal(relayed!.blockNumber, revoked!.blockNumber + 1n, 'the relay is in the block after the revocation\'s')
    t.equal(done.stage, 'done', 'done: the runner was paid')
    if (authorizationList) t.equal(await devnet.client.getCode({ address: account.address }), concat(['0xef0100', CALIBUR_ADDRESS]).toLowerCase(), 'delegated by the relay\'s transaction')
    t.same(settledOutcome(t, done.outcome), { paidBaseUnits: amount.toString(), callSucceeded: false, callReason: 'the call reverted: ERC20: transfer amount exceeds allowance' })
  })
}

t.test('the replay that says why a batch\'s calls failed runs them after the payment, on an account delegated by the relay\'s own transaction (issue 29, point 5)', async (t) => {
  const devnet = await startRunnerDevnet(t)
  // Not delegated yet: its authorization rides in the relay. It holds 100 USDC, pays 10, then sends 95: only after the payment is that too much.
  const { account, signedExecute, authorizationList } = await caliburAccount(devnet, true)
  t.equal(await devnet.client.getCode({ address: account.address }), undefined, 'no code before the relay')
  const amount = 10_000_000n
  const leg = encodeTransfer({ token: devnet.deployment.usdc, to: devnet.payee, amount })
  const send95 = encodeTransfer({ token: devnet.deployment.usdc, to: devnet.payee, amount: 95_000_000n })
  const payment = await signedExecute(paymentBatch({ ...leg, to: getAddress(leg.to), data: leg.data as Hex }), 0n, devnet.deployment.runner.contract)
  const call = await signedExecute(ownCallsBatch([{ to: getAddress(send95.to), value: '0', data: send95.data as Hex }]), 1n)
  const token = paymentToken(devnet.context.network, 'USDC')
  const requested = relayOfRequest(devnet.context, call, { token: devnet.deployment.usdc, amountBaseUnits: amount.toString(), batch: payment.data }, token)
  t.equal(await describeCallFailure(devnet.context, requested, token), 'the call reverted: ERC20: transfer amount exceeds balance')
  t.ok(authorizationList, 'the account would be delegated by the relay itself')
})

t.test('a call that fails on chain with no revert data: done, paid, and no reason made up', async (t) => {
  const devnet = await startRunnerDevnet(t)
  const [first, second, funder] = [await devnet.payer(), await devnet.payer(), await devnet.payer()]
  const { send } = await funded(devnet, funder.key)
  const runner = devnet.network.runner.contract as Address
  // The Runner holds one wei of WETH; both calls give it away, so the second finds none (WETH9 reverts with no data).
  await send(devnet.deployment.weth, encodeFunctionData({ abi: wethAbi, functionName: 'deposit' }), 1n)
  await send(devnet.deployment.weth, encodeFunctionData({ abi: wethAbi, functionName: 'transfer', args: [runner, 1n] }))
  await devnet.mine()
  const call = { to: devnet.deployment.weth, data: encodeFunctionData({ abi: wethAbi, functionName: 'transfer', args: [funder.address, 1n] }) }
  const a = await devnet.submit(first, { call })
  const b = await devnet.submit(second, { call })
  await devnet.pass()
  await devnet.mine()
  await devnet.pass()
  const [doneA, doneB] = [await devnet.get(a.id), await devnet.get(b.id)]
  t.same([doneA.stage, doneB.stage], ['done', 'done'])
  t.same(settledOutcome(t, doneA.outcome), { paidBaseUnits: paymentValue(a), callSucceeded: true })
  t.same(settledOutcome(t, doneB.outcome), { paidBaseUnits: paymentValue(b), callSucceeded: false }, 'no callReason: the call left none')
  t.equal(doneB.reason, 'the call failed on chain (the payment was taken)')
})

t.test('a payment that reverts on chain (the payer spent the funds first, in the same block): failed, counted as the payer\'s revert', async (t) => {
  const devnet = await startRunnerDevnet(t)
  devnet.allow(1)
  const payer = await devnet.payer()
  const { send } = await funded(devnet, payer.key)
  const a = await devnet.submit(payer)
  await devnet.pass()
  const sent = await devnet.get(a.id)
  await send(devnet.deployment.usdc, encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [devnet.operator, 100_000_000n] }))
  await devnet.mine()
  await devnet.pass()
  const failed = await devnet.get(a.id)
  const receipt = await devnet.client.getTransactionReceipt({ hash: sent.transaction!.hash })
  t.equal(receipt.status, 'reverted')
  t.equal(failed.stage, 'failed')
  t.equal(failed.fault, 'revert')
  t.equal(failed.reason, 'the transaction reverted in its payment phase: nothing was paid')
  t.equal(failed.outcome, undefined, 'no outcome: nothing ran')
  t.equal(failed.blockNumber, receipt.blockNumber.toString())
  t.equal(failed.gasUsed, receipt.gasUsed.toString())
  t.equal(failed.fee, (receipt.gasUsed * receipt.effectiveGasPrice).toString(), 'what the runner paid for it is recorded')
})

t.test('settled submissions past relay.retentionSec are deleted, at most once a minute', async (t) => {
  const devnet = await startRunnerDevnet(t)
  const payer = await devnet.payer()
  const template = await devnet.submit(payer)
  const retentionMs = devnet.network.relay.retentionSec * 1000
  const now = Date.now()
  const settled = async (id: string, stage: 'done' | 'failed' | 'waiting', age: number) => {
    const { identity: _identity, ...rest } = template
    await devnet.store.insert({ ...rest, id, stage, createdAt: now - age, updatedAt: now - age })
  }
  await settled('old-done', 'done', retentionMs + 60_000)
  await settled('old-failed', 'failed', retentionMs + 60_000)
  await settled('recent-done', 'done', retentionMs - 60_000)
  await devnet.pass()
  t.equal(await devnet.store.get('old-done'), undefined, 'done past the retention: deleted')
  t.equal(await devnet.store.get('old-failed'), undefined, 'failed past the retention: deleted')
  t.ok(await devnet.store.get('recent-done'), 'settled within it: kept')
  t.ok(await devnet.store.get(template.id), 'active: kept')
  await settled('old-again', 'done', retentionMs + 60_000)
  await devnet.pass()
  t.ok(await devnet.store.get('old-again'), 'not pruned again within the minute')
})
