/**
 * Checking and sending waiting submissions: how a pass's new ones are planned on the lanes
 * (`sendFresh`), whether one may go now (`check`: its deadline, its payment's expiry, its payer's
 * transaction in flight, the exact simulation as its lane signs it, the price), and the send itself
 * (`dispatch`: claimed in the store, signed with the lane's next nonce, stored, then broadcast; the
 * nonce kept only when the node takes it, the node's refusal settling what becomes of the submission).
 */
import { keccak256, type Hex, type SignedAuthorizationList } from 'viem'
import { BroadcastError } from '../chain/networks.ts'
import { ToolError } from '../tool/tool.ts'
import type { RelayContext } from '../relay/context.ts'
import { paymentToken } from '../relay/paymentToken.ts'
import { relayOfRequest } from '../relay/relayOfRequest.ts'
import { prepareRunnerTransaction, RunnerShortOfEth, type Fees, type PreparedRelay } from '../relay/runnerTransaction.ts'
import { StaleEpochError, type SentTransaction, type Submission } from '../store/store.ts'
import { failIfTooLate, hold, holdBehind, SHORT_OF_ETH, waitForSlot } from './holds.ts'
import { anyFence, pickLane, shortOfEth, takesWork, type Lane } from './lanes.ts'
import { payerOf, shortReason, type RunnerState } from './state.ts'

/** A node's refusal of a sender's transaction beyond what its pool keeps per sender (reth and geth: "txpool is full"). */
const POOL_FULL = /txpool is full/i

/**
 * Sends the pass's new submissions. Each is planned, in arrival order, on the least loaded lane with
 * a slot to spare (a payer's later ones on the lane of its first, where they wait behind it); then
 * every lane works through its own at once, in order, so one lane's simulations and round trips
 * never hold another's sends. What a lane could not take after all (found short of ETH, its pool
 * full, its nonce too low) goes, in arrival order, to whichever lane can take it then; what no
 * lane has a slot for waits (`waitForSlot`, holds.ts).
 */
export async function sendFresh(state: RunnerState, fresh: readonly Submission[], owned: readonly Lane[], fees: Fees, payersInFlight: Set<string>): Promise<void> {
  const planned = new Map<Lane, Submission[]>()
  const spare = new Map(owned.map((lane) => [lane, lane.slots]))
  const laneOfPayer = new Map<string, Lane>()
  const left: Submission[] = []
  for (const submission of fresh) {
    const payer = payerOf(submission)
    const lane = laneOfPayer.get(payer) ?? pickLane(owned, (each) => spare.get(each)!)
    if (!lane) {
      left.push(submission)
      continue
    }
    // A payer's later ones, and one whose payer has a transaction in flight, are held, not sent: they take no slot.
    if (!laneOfPayer.has(payer) && !payersInFlight.has(payer)) spare.set(lane, spare.get(lane)! - 1)
    laneOfPayer.set(payer, lane)
    planned.set(lane, [...(planned.get(lane) ?? []), submission])
  }
  const work = await Promise.allSettled(
    [...planned].map(async ([lane, queue]) => {
      for (const submission of queue) {
        if (!takesWork(lane)) left.push(submission)
        else {
          await send(state, lane, submission, fees, payersInFlight)
          if (lane.short !== undefined) left.push(submission)
        }
      }
    }),
  )
  const failed = work.filter((outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected').map((outcome) => outcome.reason)
  if (failed.length > 0) throw failed.find((error) => error instanceof StaleEpochError) ?? failed[0]
  const order = new Map(fresh.map((submission, index) => [submission.id, index]))
  for (const submission of left.sort((a, b) => order.get(a.id)! - order.get(b.id)!)) {
    // Every lane's nonce found too low: nothing more is sent before the next pass reads them afresh.
    if (!owned.some((lane) => lane.nextNonce !== undefined && lane.ownership.held())) break
    // A lane found short of ETH while checking leaves the submission to the next lane.
    for (let lane = pickLane(owned); ; lane = pickLane(owned)) {
      if (!lane) {
        await waitForSlot(state, submission, owned)
        break
      }
      await send(state, lane, submission, fees, payersInFlight)
      if (lane.short === undefined) break
    }
  }
}

/**
 * Sends a waiting submission if it passes its checks (`check`). A fault while checking or sending
 * it (its simulation's data, the chain's answer to it) holds it with its reason; the pass goes on.
 */
async function send(state: RunnerState, lane: Lane, submission: Submission, fees: Fees, payersInFlight: Set<string>): Promise<void> {
  const prepared = await check(state, lane, submission, fees, payersInFlight)
  if (prepared) await dispatch(state, lane, submission, prepared, payersInFlight)
}

/**
 * A waiting submission's checks before a send, each failing one settled or held with its reason:
 * its deadline (failed past it), its payment's expiry (failed within `relay.paymentMarginSec`),
 * its payer's transaction in flight (held), the exact simulation and the price (held). Returns the
 * prepared transaction when it may go, simulated as `lane` sends it. Never throws: a fault holds the submission.
 */
export async function check(state: RunnerState, lane: Lane, submission: Submission, fees: Fees, payersInFlight: Set<string>): Promise<PreparedRelay | undefined> {
  try {
    return await checkOrThrow(state, lane, submission, fees, payersInFlight)
  } catch (error) {
    if (error instanceof StaleEpochError) throw error
    if (error instanceof RunnerShortOfEth) {
      // The lane's ETH, not the submission: it stays waiting, unheld, for a lane that can pay.
      shortOfEth(state, lane, BigInt(state.context.network.config.runner.minBalanceWei), submission.id)
      if (submission.reason !== SHORT_OF_ETH) await state.context.store.update(submission.id, { reason: SHORT_OF_ETH }, anyFence(state))
      return undefined
    }
    await hold(state, submission, `waiting: ${shortReason(error)}`, 'fault')
    state.log.warn({ submission: submission.id, err: error }, 'submission held by a fault')
    return undefined
  }
}

async function checkOrThrow(state: RunnerState, lane: Lane, submission: Submission, fees: Fees, payersInFlight: Set<string>): Promise<PreparedRelay | undefined> {
  if (await failIfTooLate(state, submission)) return undefined
  const payer = payerOf(submission)
  if (payersInFlight.has(payer)) {
    // Simulated at latest, a second payment by the same account would not see the first in flight.
    await holdBehind(state, submission, payer)
    return undefined
  }
  let prepared: PreparedRelay
  try {
    // A call that failed by its own doing last time is measured afresh: the probe alone answers
    // whether it still fails (one simulation), where the stored stipend would try three.
    const byPayer = state.holds.get(submission.id)?.failing?.byPayer ?? false
    const measured = byPayer || submission.callGas === undefined ? undefined : { callGas: BigInt(submission.callGas), refundGas: BigInt(submission.refundGas ?? 0) }
    prepared = await prepare(state, lane, submission, lane.nextNonce!, fees, measured)
  } catch (error) {
    if (!(error instanceof ToolError)) throw error
    // Re-simulated like at submit: a payment or a call that would now fail is not sent; it waits.
    await hold(state, submission, error.message, 'payer')
    return undefined
  }
  if (!prepared.coverage.covered) {
    await hold(state, submission, `waiting: the payment no longer covers the most the runner could pay at current fees (${prepared.coverage.worstCaseWei} wei)`)
    return undefined
  }
  return prepared
}

/**
 * Signs a checked submission's transaction with `lane`'s next nonce, stores it, and broadcasts it;
 * the nonce is kept only when the node takes it. The store takes the send only if the submission
 * is still waiting and its payer has nothing in flight on any lane (`claim`): otherwise nothing is
 * broadcast. A payer with a transaction in flight by now (sent earlier in this pass) waits. A fault
 * holds the submission; a crash after the store keeps the stored bytes for the restart's rebroadcast.
 */
export async function dispatch(state: RunnerState, lane: Lane, submission: Submission, prepared: PreparedRelay, payersInFlight: Set<string>): Promise<void> {
  const { store } = state.context
  const payer = payerOf(submission)
  if (payersInFlight.has(payer)) {
    await holdBehind(state, submission, payer)
    return
  }
  const nonce = lane.nextNonce!
  const fence = lane.fence!
  let refusal: string | undefined
  let transaction: SentTransaction
  try {
    transaction = await sign(state, lane, prepared, nonce, [], Date.now())
    // Stored before it is broadcast: after a crash, the stored bytes are sent again, never new ones;
    // this write reserves the nonce, and is refused if another process has taken the key.
    if (!(await store.claim(submission.id, { stage: 'sending', transaction, reason: null }, fence))) {
      // Sent meanwhile by another process's lane, or its payer's other submission was: this one is not.
      state.log.info({ submission: submission.id, operator: lane.address }, 'not sent: another lane sent it, or a transaction of its payer, first')
      payersInFlight.add(payer)
      return
    }
    refusal = await broadcast(state, transaction.raw)
  } catch (error) {
    // Refused by the store: another process owns the key, and this transaction is never broadcast.
    if (error instanceof StaleEpochError) throw error
    await hold(state, submission, `waiting: ${shortReason(error)}`, 'fault')
    state.log.warn({ submission: submission.id, err: error }, 'submission held by a fault')
    return
  }
  if (refusal) {
    // Not accepted: the nonce is given back, and the transaction is forgotten.
    state.holds.delete(submission.id)
    if (/nonce too low/i.test(refusal)) {
      lane.nextNonce = undefined
      await store.update(submission.id, { stage: 'waiting', transaction: null, reason: `waiting: the node refused the nonce (${refusal}); sent again with a fresh one` }, fence)
    } else if (POOL_FULL.test(refusal)) {
      // The node keeps no more of this key's transactions: nothing more goes on this lane this pass.
      lane.slots = 0
      lane.full = `waiting: the node's pool holds as many of the runner's transactions as it keeps (${refusal}); it goes when one is included`
      await store.update(submission.id, { stage: 'waiting', transaction: null, reason: lane.full }, fence)
    } else if (/insufficient funds/i.test(refusal)) {
      // The lane takes no new work until its balance pays for what it was refused; the other lanes go on.
      shortOfEth(state, lane, BigInt(transaction.gas) * BigInt(transaction.maxFeePerGas), submission.id)
      await store.update(submission.id, { stage: 'waiting', transaction: null, reason: SHORT_OF_ETH }, fence)
    } else {
      await store.update(submission.id, { stage: 'failed', transaction: null, reason: `the node refused the transaction: ${refusal}` }, fence)
    }
    return
  }
  state.holds.delete(submission.id)
  lane.nextNonce = nonce + 1
  lane.slots--
  payersInFlight.add(payer)
  state.log.info({ submission: submission.id, hash: transaction.hash, nonce, operator: lane.address, gas: prepared.gas.toString(), callGas: prepared.callGas.toString() }, 'sent')
}

/**
 * The submission's runner transaction, prepared and simulated exactly as it will be signed. With a
 * stipend and a refund's cap (those measured at submit, or the stuck transaction's) that no longer
 * let the call succeed, both are measured afresh (a send; a replacement keeps them, so it is refused).
 */
export async function prepare(state: RunnerState, lane: Lane, submission: Submission, nonce: number, fees: Fees, measured?: { callGas: bigint; refundGas: bigint }, remeasure = true): Promise<PreparedRelay> {
  const { network } = state.context
  const { request } = submission
  const token = paymentToken(network, request.payment.token)
  const requested = relayOfRequest(state.context, request.call, request.payment, token)
  // Simulated from the lane that signs, as it will be sent (no other lane, no added gas), on its own client.
  const context: RelayContext = { ...state.context, network: { ...state.context.network, client: lane.client }, operator: lane.address, spareOperators: [], laneGas: 0n }
  const prepare = (known: typeof measured) =>
    prepareRunnerTransaction(context, requested.relay, request.authorizationList, { token, amount: requested.amount, nonce, fees, ...known, refusal: 'waiting' })
  try {
    return await prepare(measured)
  } catch (error) {
    if (!(error instanceof ToolError) || measured === undefined || !remeasure) throw error
    return prepare(undefined)
  }
}

export async function sign(state: RunnerState, lane: Lane, prepared: PreparedRelay, nonce: number, earlier: readonly Hex[], firstSentAt: number): Promise<SentTransaction> {
  const { chainId } = state.context.network.config
  const { fees, authorizationList } = prepared
  const raw = await lane.account.signTransaction({
    chainId,
    to: prepared.to,
    data: prepared.data,
    value: 0n,
    gas: prepared.gas,
    nonce,
    maxFeePerGas: fees.maxFeePerGas,
    maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
    ...(authorizationList ? { authorizationList: authorizationList as SignedAuthorizationList, type: 'eip7702' as const } : { type: 'eip1559' as const }),
  })
  const hash = keccak256(raw)
  return {
    from: lane.address,
    hash,
    nonce,
    raw,
    gas: prepared.gas.toString(),
    callGas: prepared.callGas.toString(),
    ...(prepared.charge.refundGas === 0n ? {} : { refundGas: prepared.charge.refundGas.toString() }),
    maxFeePerGas: fees.maxFeePerGas.toString(),
    maxPriorityFeePerGas: fees.maxPriorityFeePerGas.toString(),
    sentAt: Date.now(),
    firstSentAt,
    hashes: [...earlier, hash],
  }
}

/**
 * Hands signed bytes to the node. Returns the node's reason when it answered with a refusal, or
 * `undefined` when it took them — or did not answer (the transaction may be in its pool: the
 * receipt, a replacement or a restart's rebroadcast settles it). "already known" is the node
 * having it, not a refusal.
 */
export async function broadcast(state: RunnerState, raw: Hex): Promise<string | undefined> {
  try {
    await state.context.network.sendRawTransaction(raw)
    return undefined
  } catch (error) {
    const refused = error instanceof BroadcastError && error.code !== undefined
    // A node's refusal is expected (what follows says what it means): its fields, not a stack.
    const logged = refused ? { type: 'BroadcastError', code: error.code, reason: error.reason, endpoint: error.endpoint, chain: error.chain } : error
    state.log.info({ err: logged }, 'broadcast not accepted')
    if (!refused || /already known|known transaction/i.test(error.reason)) return undefined
    // A refusal in no words is a refusal still: an empty reason must not read as "taken".
    return error.reason || `error ${error.code} with no message`
  }
}
