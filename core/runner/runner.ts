import { randomUUID } from 'node:crypto'
import type { FastifyBaseLogger } from 'fastify'
import { getAddress, keccak256, parseTransaction, type Address, type Hex, type LocalAccount, type Log, type TransactionReceipt, TransactionReceiptNotFoundError } from 'viem'
import { readFees } from '../chain/fees.ts'
import { L1_FEE_HEADROOM_BPS, readL1DataFee, readL1DataFeeOfBytes } from '../chain/l1DataFee.ts'
import { readWeiPerBaseUnit } from '../chain/tokenPrice.ts'
import { ToolError } from '../tool.ts'
import { describeCallFailure } from '../relay/callFailure.ts'
import type { RelayContext } from '../relay/context.ts'
import type { PaymentToken } from '../charge/gasPricer.ts'
import { localOwnership, runnerKeyName, type RunnerOwnership } from '../store/ownership.ts'
import type { LaneFunding } from './laneFunding.ts'
import { nearExpiry, tooLateToSend, waitForSlot } from './holds.ts'
import { checkShort, laneOf, pickLane, readNonce, takenUp, type Lane } from './lanes.ts'
import { broadcast, check, dispatch, prepare, sendFresh, sign } from './send.ts'
import { fallsHere, giveUp, laneShare, standDown } from './share.ts'
import { payerOf, type RunnerState } from './state.ts'
import { paymentToken } from '../relay/paymentToken.ts'
import { relayOfRequest } from '../relay/relayOfRequest.ts'
import { describeRevertData } from '../relay/revertReason.ts'
import { relayedEvent, signedCharge } from '../relay/runnerCall.ts'
import { paymentCovers, tokenToWei, worstCaseWei } from '../charge/pricing.ts'
import type { Fees, PreparedRelay } from '../relay/runnerTransaction.ts'
import type { RelayOutcome, SubmitRequest } from '../relay/schemas.ts'
import { StaleEpochError, type SentTransaction, type Submission } from '../store/store.ts'

/** The longest wait between two passes while the chain keeps failing. */
const MAX_BACKOFF_MS = 30_000
/** How many held submissions one pass re-checks at most: the rest wait for the next, so new ones never wait long. */
const RECHECKS_PER_PASS = 8
/** How many held submissions are re-checked at once. */
const RECHECKS_AT_ONCE = 4
/** How often settled submissions older than `relay.retentionSec` are deleted. */
const PRUNE_EVERY_MS = 60_000

/**
 * Why a relay in flight gives way to a cancellation; `expiring` when for its payment's (or its signed
 * call's) expiry, which its payer chose; `instead` when the relay itself, included, would now cost the runner this much
 * (wei) beyond its payment's worth: a cancellation costing less is the smaller loss.
 */
interface Cancellation {
  readonly why: string
  readonly expiring?: true
  readonly instead?: bigint
}

/** A lane as this process last saw it (`GET /readyz`, `/metrics`): read from memory, no chain read. */
export interface LaneView {
  readonly operator: Address
  /** Whether this process sends for the key now (replicas sharing a store own different lanes). */
  readonly owned: boolean
  /** Its transactions sent and not yet included, at the last pass. */
  readonly inFlight: number
  /** The nonce its next transaction takes, when known. */
  readonly nextNonce?: number
  /** A transaction of its is unincluded past `runner.stuckAfterMs`: it takes no new work while another lane can. */
  readonly stuck: boolean
  /** Its ETH could not pay for a transaction: it takes no new work until funded. */
  readonly short: boolean
}

/** A runner key of a chain, and how this process owns it. */
export interface RunnerKey {
  readonly account: LocalAccount
  readonly ownership: RunnerOwnership
}

/**
 * The runner of one chain. Each pass:
 * 1. sends waiting submissions — those never held first, then held ones whose backoff has passed —
 *    each re-prepared exactly as it will be signed and re-priced (a submission whose payment or call
 *    would now fail, whose payment no longer covers the worst case, whose payment — or its call's
 *    own signed EIP-3009 transfer, which would fail and still pay — expires within
 *    `relay.paymentMarginSec` plus `relay.inclusionSec` (it fails: sent, it would be cancelled
 *    before its time to be included), or whose payer already has a transaction in flight, is
 *    not sent: it is held with its reason and a backoff of its own, and fails at its deadline);
 * 2. takes a nonce for a transaction only once the node accepted it: a broadcast the node refuses
 *    gives the nonce back and fails its submission with the node's reason (`nonce too low` and the
 *    runner's own `insufficient funds` hold it instead; after `nonce too low` nothing more is sent
 *    until the next pass has read the nonce afresh);
 * 3. follows each transaction in flight to inclusion and confirmations, replaces a stuck one within
 *    what its payment covers, and cancels one that stays unincluded past `runner.maxSendingMs` (or
 *    too close to its payment's or its signed call's expiry: a fault of its payer, who chose that expiry, once the
 *    cancellation is included) with a 0-value self-transfer at its nonce;
 * 4. fills a nonce the node is missing below the next one (a gap) with a self-transfer.
 * One submission's trouble — a refusal, a fault of the chain while simulating it — is held on that
 * submission and never stops the pass; only a chain that cannot be read at all fails the pass (then
 * it is retried with backoff).
 *
 * After a restart it rebroadcasts the stored bytes of what was in flight, so nothing is sent twice.
 * It acts only while it owns the runner key (`ownership`: replicas sharing a PostgreSQL store take
 * turns); on taking ownership it starts over as after a restart, since another process may have
 * sent with the key until then. Every write it makes carries the fence it took the key with, and
 * every transaction is stored before it is broadcast, so a process that was taken over while it
 * stalled (the store refuses its writes) sends nothing more: it stands down (`#standDown`).
 *
 * @example
 * const runner = new RunnerLoop(context, privateKeyToAccount(key), log)
 * runner.start()
 */
export class RunnerLoop {
  /** What the modules of a pass share: the chain's context, its lanes, the holds. */
  readonly #state: RunnerState
  /** `runner.treasury`'s top-ups of this process's lanes, when configured. */
  readonly #funding: LaneFunding | undefined
  #timer: NodeJS.Timeout | undefined
  #pass: Promise<void> | undefined
  #again = false
  #stopped = false
  #failures = 0
  /** unix ms before which no pass runs (backoff after failures) */
  #retryAt = 0

  /**
   * `keys`: the chain's runner keys, one lane each, the first being `runner.key` (the Runner's
   * `operator`), each with how this process owns it; or the one key, owned as `ownership` says.
   */
  constructor(context: RelayContext, keys: LocalAccount | readonly RunnerKey[], log: FastifyBaseLogger, ownership?: RunnerOwnership, funding?: LaneFunding) {
    this.#funding = funding
    const given = 'address' in keys ? [{ account: keys, ownership: ownership ?? localOwnership(context.store, runnerKeyName(context.network.config.chainId, keys.address)) }] : keys
    const lanes: Lane[] = given.map(({ account, ownership }, index) => ({
      account,
      address: getAddress(account.address),
      first: index === 0,
      ownership,
      client: context.network.laneClient(getAddress(account.address)),
      fence: undefined,
      nextNonce: undefined,
      restarted: true,
      announced: false,
      slots: 0,
      full: '',
      short: undefined,
      inFlight: 0,
      stuck: false,
    }))
    this.#state = { context, lanes, log: log.child({ chain: context.network.name, component: 'runner' }), holds: new Map(), lookedAt: new Map(), replica: randomUUID(), slotWaits: 0, prunedAt: 0 }
  }

  /** Each lane as the last pass saw it. */
  lanes(): LaneView[] {
    return this.#state.lanes.map((lane) => ({
      operator: lane.address,
      owned: lane.fence !== undefined && lane.ownership.held(),
      inFlight: lane.inFlight,
      ...(lane.nextNonce === undefined ? {} : { nextNonce: lane.nextNonce }),
      stuck: lane.stuck,
      short: lane.short !== undefined,
    }))
  }

  start(): void {
    this.#timer = setInterval(() => void this.wake(), this.#state.context.network.config.runner.pollMs)
    void this.wake()
  }

  async stop(): Promise<void> {
    this.#stopped = true
    clearInterval(this.#timer)
    this.#timer = undefined
    await this.#pass
    // One line per lane an operator can read a restart by: what the next start takes up.
    const active = this.#state.lanes.some((lane) => lane.fence) ? await this.#state.context.store.active(this.#state.context.network.name).catch(() => undefined) : undefined
    for (const lane of this.#state.lanes) {
      if (lane.fence) {
        const inFlight = active && takenUp(this.#state, lane, active)
        this.#state.log.info({ operator: lane.address, epoch: lane.fence.epoch, inFlight }, 'runner stopped: what is in flight is taken up by the next start')
      }
      await lane.ownership.release()
    }
  }

  /**
   * Runs a pass now, or right after the one under way (once started). Resolves when the pass under
   * way, or the one it started, has ended: a caller that must see the runner's work settled (a test,
   * a shutdown) awaits it; the loop itself never does. Never rejects: a failed pass is logged.
   */
  wake(): Promise<void> {
    // Stopped: a late wake (a submission still being answered) must not take the key back.
    if (this.#stopped) return Promise.resolve()
    // After failed passes (the chain unreachable), wait out the backoff before the next one.
    if (Date.now() < this.#retryAt) return Promise.resolve()
    if (this.#pass) {
      this.#again = true
      return this.#pass
    }
    this.#pass = this.#run().finally(() => {
      this.#pass = undefined
      if (this.#again && this.#timer) {
        this.#again = false
        void this.wake()
      }
    })
    return this.#pass
  }

  async #run(): Promise<void> {
    try {
      await this.#tick()
      this.#failures = 0
      this.#retryAt = 0
    } catch (error) {
      // Another process took the key: not a fault to back off from, the end of this tenure.
      if (error instanceof StaleEpochError) {
        const lane = this.#state.lanes.find((each) => each.fence?.key === error.fence.key)
        if (lane) await standDown(this.#state, lane, error.current)
        return
      }
      // A pass that fails (the chain unreachable) is retried with exponential backoff.
      this.#failures++
      const retryInMs = Math.min(this.#state.context.network.config.runner.pollMs * 2 ** this.#failures, MAX_BACKOFF_MS)
      this.#retryAt = Date.now() + retryInMs
      this.#state.log.warn({ err: error, failures: this.#failures, retryInMs }, 'runner pass failed')
    }
  }

  async #tick(): Promise<void> {
    const { store, network } = this.#state.context
    // Replicas sharing a store divide the lanes: each owns at most its share, and gives up the rest.
    const share = await laneShare(this.#state)
    let count = this.#state.lanes.filter((lane) => lane.fence).length
    for (const lane of [...this.#state.lanes].reverse()) {
      if (count <= share) break
      if (!lane.fence) continue
      await giveUp(this.#state, lane, share)
      count--
    }
    for (const lane of this.#state.lanes) {
      if (lane.ownership.held()) continue
      // Lost since the last pass (its lock's session ended): that tenure is over, whoever has the key now.
      if (lane.fence) {
        await standDown(this.#state, lane, await store.runnerEpoch(lane.fence.key))
        count--
      }
      if (count >= share) continue
      const fence = await lane.ownership.acquire()
      if (!fence) continue
      // Taken over (or first start): re-read the nonces and rebroadcast what is in flight.
      lane.fence = fence
      lane.nextNonce = undefined
      lane.restarted = true
      lane.announced = false
      count++
    }
    const owned = this.#state.lanes.filter((lane) => lane.fence)
    if (owned.length === 0) return
    // A lane found short of ETH is looked at now; the others every LANE_FUNDING_CHECK_MS.
    await this.#funding?.check(
      owned.map((lane) => lane.address),
      owned.some((lane) => lane.short !== undefined),
    )
    await this.#prune(owned[0]!)
    const active = await store.active(network.name)
    // Each lane's transactions in flight, grouped once per pass.
    const inFlightByLane = new Map<Lane, Submission[]>(owned.map((lane) => [lane, []]))
    for (const submission of active) if (submission.stage !== 'waiting') inFlightByLane.get(laneOf(this.#state, submission)!)?.push(submission)
    for (const lane of owned) {
      const unincluded = inFlightByLane.get(lane)!.filter((submission) => submission.stage === 'sending')
      lane.inFlight = unincluded.length
      // Stuck since its first send: a replacement is not an inclusion.
      lane.stuck = unincluded.some((submission) => Date.now() - submission.transaction!.firstSentAt > network.config.runner.stuckAfterMs)
    }
    for (const lane of owned.filter((each) => !each.announced)) {
      lane.announced = true
      this.#state.log.info(
        { operator: lane.address, epoch: lane.fence!.epoch, inFlight: takenUp(this.#state, lane, active) },
        'runner started: it sends for the runner key and takes up what is in flight',
      )
    }
    if (active.length === 0) return
    await Promise.all(owned.filter((lane) => lane.nextNonce === undefined).map((lane) => readNonce(this.#state, lane)))
    await Promise.all(owned.filter((lane) => lane.short !== undefined).map((lane) => checkShort(this.#state, lane)))
    const restarted = new Set(owned.filter((lane) => lane.restarted))
    for (const lane of owned) lane.restarted = false
    // Every lane's transactions in flight: a payer's next waits for its one in flight, whichever lane it is on.
    let inFlight = active.filter((submission) => submission.stage !== 'waiting')
    // A transaction that stays unincluded may be waiting behind a nonce the node is missing. One the
    // gap filler cancelled is followed from the next pass, with its cancellation.
    const stuckAfterMs = network.config.runner.stuckAfterMs
    for (const lane of owned) {
      const mine = inFlightByLane.get(lane)!
      if (restarted.has(lane) || !mine.some((submission) => Date.now() - submission.transaction!.sentAt > stuckAfterMs)) continue
      const cancelled = await this.#fillGap(lane, mine)
      if (cancelled) inFlight = inFlight.filter((submission) => submission.id !== cancelled)
    }

    const now = Date.now()
    const waiting = active.filter((submission) => submission.stage === 'waiting')
    // Never held first, in arrival order; held ones whose backoff has passed come after the
    // transactions in flight are followed, so a slow re-check delays neither a new send nor a receipt.
    const payersInFlight = new Set(inFlight.map((submission) => payerOf(submission)))
    const fresh = waiting.filter((submission) => !this.#state.holds.has(submission.id) && fallsHere(this.#state, submission, now))
    // One held behind its payer's transaction in flight is not looked at while that one is in flight (the
    // look would hold it again) unless it is to fail (its deadline passed, its payment expiring),
    // and is due at once when it is not.
    const due = waiting
      .filter((submission) => {
        const hold = this.#state.holds.get(submission.id)
        if (!hold) return false
        if (Math.floor(now / 1000) > submission.deadline) return true
        if (hold.behind === undefined) return hold.retryAt <= now
        return !payersInFlight.has(hold.behind) || tooLateToSend(this.#state, submission, now)
      })
      .sort((a, b) => this.#state.holds.get(a.id)!.retryAt - this.#state.holds.get(b.id)!.retryAt)
    // The fees are read once per pass, for all its sends: a chain that cannot answer fails the pass.
    const fees = fresh.length + due.length > 0 ? await readFees(network.client) : undefined
    // A node's pool keeps only so many pending transactions per sender: beyond `runner.maxInFlight`
    // unincluded ones, a lane takes no more, and with every lane full the rest wait (in arrival order) for a slot.
    const { maxInFlight } = network.config.runner
    for (const lane of owned) {
      lane.slots = maxInFlight - lane.inFlight
      lane.full = `waiting: the runner has ${maxInFlight} transactions in flight, as many as a node's pool keeps per sender; this one goes when one is included`
    }
    this.#state.slotWaits = 0
    await sendFresh(this.#state, fresh, owned, fees!, payersInFlight)
    if (!owned.some((lane) => lane.ownership.held())) return
    // Then every transaction in flight on this process's lanes at once: their reads leave in one JSON-RPC batch. The
    // latest block is read first, once per pass (uncached: a stale one would hold `done` back).
    const followed = inFlight.flatMap((submission) => {
      const lane = laneOf(this.#state, submission)
      return lane?.fence && lane.ownership.held() ? [{ lane, submission }] : []
    })
    const latest = followed.length > 0 ? await network.client.getBlockNumber({ cacheTime: 0 }) : 0n
    const following = await Promise.allSettled(followed.map(({ lane, submission }) => this.#follow(lane, submission, restarted.has(lane), latest)))
    const stillFollowed = new Set(followed.map(({ submission }) => submission.id))
    for (const id of this.#state.lookedAt.keys()) if (!stillFollowed.has(id)) this.#state.lookedAt.delete(id)
    const refused = following.find((outcome) => outcome.status === 'rejected' && outcome.reason instanceof StaleEpochError)
    if (refused) throw (refused as PromiseRejectedResult).reason
    following.forEach((outcome, index) => {
      if (outcome.status === 'rejected') this.#state.log.warn({ submission: followed[index]!.submission.id, err: outcome.reason }, 'following a transaction failed; retried next pass')
      // Included now: no longer in flight on its lane (`lanes()` reads the count between passes).
      else if (outcome.value) followed[index]!.lane.inFlight--
    })
    // Submissions waited for a slot that an inclusion just freed: the next pass follows at once.
    if (this.#state.slotWaits > 0 && following.some((outcome) => outcome.status === 'fulfilled' && outcome.value)) void this.wake()
    // Last, the held ones due again: re-checked a few at a time (one slow simulation does not hold
    // the others), then sent in order, each on a lane with a free slot (none once every lane's nonce was found too low).
    const ready = owned.filter((lane) => lane.nextNonce !== undefined && lane.slots > 0)
    if (ready.length === 0) return
    const batch = due.slice(0, RECHECKS_PER_PASS)
    // Each re-check simulates as the lane least loaded now; the send takes whichever lane is then.
    const rechecked = await mapLimited(batch, RECHECKS_AT_ONCE, (submission) => check(this.#state, pickLane(owned) ?? ready[0]!, submission, fees!, payersInFlight))
    if (due.length > batch.length) void this.wake()
    for (const [index, submission] of batch.entries()) {
      const checked = rechecked[index]
      if (!checked) continue
      const lane = pickLane(owned)
      if (!lane) {
        await waitForSlot(this.#state, submission, owned)
        continue
      }
      await dispatch(this.#state, lane, submission, checked, payersInFlight)
    }
  }

  /** Deletes settled submissions past the retention period, at most once a minute. */
  async #prune(lane: Lane): Promise<void> {
    const now = Date.now()
    if (now - this.#state.prunedAt < PRUNE_EVERY_MS) return
    this.#state.prunedAt = now
    await this.#state.context.store.prune(now - this.#state.context.network.config.relay.retentionSec * 1000, lane.fence!)
  }

  /**
   * A nonce below the next one that the node has no transaction for (a transaction dropped from its
   * pool, one sent by hand) would hold every later one back: it is filled with the stored bytes of the
   * submission that holds it, or with a self-transfer — that submission's cancellation when its
   * payment is about to expire (its id is returned once sent), a bare one when no submission holds it.
   * A gap is never filled for more than it costs: the cancellation only while a later nonce waits
   * behind it (none waiting, nothing is held back: the relay is followed as any in flight), and at
   * no more than the relay's payment is worth (`#cancel`'s cap: past it, the later nonces wait for
   * the fees to fall, as a stuck relay's cancellation does).
   */
  async #fillGap(lane: Lane, inFlight: readonly Submission[]): Promise<string | undefined> {
    const { network } = this.#state.context
    const pending = await network.client.getTransactionCount({ address: lane.address, blockTag: 'pending' })
    if (pending >= lane.nextNonce!) return
    const held = inFlight.find((submission) => submission.transaction?.nonce === pending)
    const expiring = held && nearExpiry(this.#state, held, Date.now())
    if (held && !expiring) {
      // Ours, but not in the node's pool: sent again as stored.
      await broadcast(this.#state, held.transaction!.raw)
      return
    }
    if (held) {
      // Its payment (or its call's signed transfer) expires too soon to be taken: its bytes could only
      // revert (or pay for a call that fails), at the runner's cost or its payer's. With nothing after
      // it, it holds nothing back.
      if (lane.nextNonce! === pending + 1) return
      const sent = await this.#cancel(lane, held, held.transaction!, { why: `lost by the node, and ${expiring!.what} came within ${network.config.relay.paymentMarginSec} s of expiring` })
      return sent ? held.id : undefined
    }
    const fees = await readFees(network.client)
    const raw = await lane.account.signTransaction({ chainId: network.config.chainId, to: lane.address, value: 0n, gas: 21_000n, nonce: pending, ...fees, type: 'eip1559' })
    // No submission's, so not stored: the fence is checked last, just before it goes.
    const current = await this.#state.context.store.runnerEpoch(lane.fence!.key)
    if (current !== lane.fence!.epoch) throw new StaleEpochError(lane.fence!, current)
    const refusal = await broadcast(this.#state, raw)
    this.#state.log.warn({ operator: lane.address, nonce: pending, next: lane.nextNonce, refused: refusal }, 'filled a nonce gap with a self-transfer')
  }

  /** Follows a transaction in flight; answers whether it was found included. */
  async #follow(lane: Lane, submission: Submission, restarted: boolean, latest: bigint): Promise<boolean> {
    const { network, store } = this.#state.context
    const transaction = submission.transaction!
    // Looked for at this block already, with the same hashes: no receipt can have come since, and a
    // confirming one gains no confirmation. Its receipts are read again at the next block.
    const looked = this.#state.lookedAt.get(submission.id)
    const seen = !restarted && looked !== undefined && looked.block === latest && looked.hashes === transaction.hashes.length
    if (seen && submission.stage === 'confirming') return false
    const { receipt, answered } = seen ? { receipt: undefined, answered: false } : await this.#receipt(transaction.hashes)
    if (answered) this.#state.lookedAt.set(submission.id, { block: latest, hashes: transaction.hashes.length })
    if (receipt) {
      // OP-stack receipts carry the L1 data fee the runner also paid (viem passes the field through).
      const l1Fee = (receipt as { l1Fee?: bigint | string | null }).l1Fee
      const fee = (receipt.gasUsed * receipt.effectiveGasPrice + BigInt(l1Fee ?? 0)).toString()
      const included = { blockNumber: receipt.blockNumber.toString(), gasUsed: receipt.gasUsed.toString(), fee }
      const transactionOfReceipt = receipt.transactionHash === transaction.hash ? {} : { transaction: { ...transaction, hash: receipt.transactionHash } }
      if (receipt.to !== null && getAddress(receipt.to) === lane.address) {
        // A relay cancelled for its payment's expiry: the payer chose that expiry, and the runner paid the cancellation.
        const fault = transaction.expiring ? { fault: 'payer' as const } : {}
        await store.update(submission.id, { ...included, ...transactionOfReceipt, ...fault, stage: 'failed', reason: `cancelled: ${submission.reason ?? 'not included in time'}` }, lane.fence!)
        return true
      }
      if (receipt.status !== 'success') {
        // Only the payer's own doing can make a payment phase that simulated fail (DESIGN §3's one bounded loss).
        await store.update(submission.id, { ...included, ...transactionOfReceipt, stage: 'failed', fault: 'revert', reason: 'the transaction reverted in its payment phase: nothing was paid' }, lane.fence!)
        return true
      }
      // Its block is there, whatever the latest read before it said.
      const head = latest > receipt.blockNumber ? latest : receipt.blockNumber
      const confirmed = head - receipt.blockNumber + 1n >= BigInt(network.config.runner.confirmations)
      const outcome = submission.outcome ?? (await this.#outcome(submission, receipt))
      await store.update(submission.id, {
        ...included,
        ...transactionOfReceipt,
        outcome,
        ...(outcome.callSucceeded ? {} : { reason: `the call failed on chain (the payment was taken)${outcome.callReason ? `: ${outcome.callReason}` : ''}` }),
        stage: confirmed ? 'done' : 'confirming',
      }, lane.fence!)
      return submission.stage === 'sending'
    }
    const now = Date.now()
    // After a restart what was in flight goes again as stored, unless its payment is about to expire:
    // then it is cancelled below rather than sent to revert.
    if (restarted && !nearExpiry(this.#state, submission, now)) {
      await broadcast(this.#state, transaction.raw)
      return false
    }
    const stuck = now - transaction.sentAt > network.config.runner.stuckAfterMs
    if (transaction.cancel) {
      // A cancellation itself stuck: outbid again, within its cap.
      if (stuck) await this.#cancel(lane, submission, transaction, { why: submission.reason ?? 'not included in time' })
      return false
    }
    const early = this.#cancelReason(submission, transaction, now)
    const l1 = early ? undefined : await this.#l1FeeNow(submission, transaction)
    const cancellation = early ?? l1?.cancellation
    if (cancellation) {
      await this.#cancel(lane, submission, transaction, cancellation)
      return false
    }
    if (stuck || l1?.passedCharge) await this.#replace(lane, submission, transaction)
    return false
  }

  /** Why a relay in flight must give way to a cancellation now, if it must. */
  #cancelReason(submission: Submission, transaction: SentTransaction, now: number): Cancellation | undefined {
    const { config } = this.#state.context.network
    if (now - transaction.firstSentAt > config.runner.maxSendingMs) return { why: `not included within ${config.runner.maxSendingMs / 1000} s` }
    const expiring = nearExpiry(this.#state, submission, now)
    if (expiring) return { why: `not included before ${expiring.what} came within ${config.relay.paymentMarginSec} s of expiring`, expiring: true }
    return undefined
  }

  /**
   * On a chain with an L1 data fee, which the signed transaction cannot cap: the fee of the bytes in
   * flight now. Risen past what the payment covers beside its gas: a cancellation, rather than an
   * inclusion at a loss. Risen past the L1 fee its charge counts (a payee that refunds keeps only the
   * charge): `passedCharge`, and it is replaced, re-priced, before it is included at a loss.
   */
  async #l1FeeNow(submission: Submission, transaction: SentTransaction): Promise<{ cancellation?: Cancellation; passedCharge: boolean } | undefined> {
    const { network } = this.#state.context
    if (network.config.l1DataFee === undefined) return undefined
    const token = paymentToken(network, submission.request.payment.token)
    const { amount } = relayOfRequest(this.#state.context, submission.request.call, submission.request.payment, token)
    const [l1FeeWei, weiPerBaseUnit] = await Promise.all([readL1DataFeeOfBytes(network, transaction.raw), readWeiPerBaseUnit(network, token.address)])
    const coverage = paymentCovers(amount, { gasLimit: BigInt(transaction.gas), maxFeePerGas: BigInt(transaction.maxFeePerGas), l1FeeWei }, weiPerBaseUnit)
    if (!coverage.covered) {
      const cancellation = { why: `its L1 data fee rose to ${l1FeeWei} wei while it waited, past what the payment covers`, instead: coverage.worstCaseWei - tokenToWei(amount, weiPerBaseUnit) }
      return { cancellation, passedCharge: false }
    }
    // The charge counts the fee as priced at signing, headroom included; what the chain will take is the fee now, without it.
    const charge = signedCharge(parseTransaction(transaction.raw).data ?? '0x')
    const feeNow = (l1FeeWei * 10_000n) / (10_000n + L1_FEE_HEADROOM_BPS)
    return { passedCharge: charge !== undefined && charge.refundGas !== 0n && feeNow > charge.l1FeeWei }
  }

  /**
   * Takes a relay's nonce back with a 0-value self-transfer that outbids it (what nodes require of a
   * replacement), so the nonces after it can move. Its cost (21,000 gas at its max fee) is capped at
   * what the relay's payment is worth: past that it waits at its fee. Answers whether it was sent.
   */
  async #cancel(lane: Lane, submission: Submission, stuck: SentTransaction, { why, expiring, instead }: Cancellation): Promise<boolean> {
    const { network, store } = this.#state.context
    const token = paymentToken(network, submission.request.payment.token)
    const { amount } = relayOfRequest(this.#state.context, submission.request.call, submission.request.payment, token)
    const [current, weiPerBaseUnit] = await Promise.all([readFees(network.client), readWeiPerBaseUnit(network, token.address)])
    const bump = (value: string) => (BigInt(value) * BigInt(10_000 + network.config.runner.feeBumpBps)) / 10_000n
    const maxPriorityFeePerGas = max(bump(stuck.maxPriorityFeePerGas), current.maxPriorityFeePerGas)
    const maxFeePerGas = max(bump(stuck.maxFeePerGas), current.maxFeePerGas, maxPriorityFeePerGas)
    // On an OP-stack chain the self-transfer pays an L1 data fee too, which no signed field caps.
    const l1FeeWei = await readL1DataFee(network, { to: lane.address, data: '0x', gas: 21_000n, nonce: stuck.nonce, maxFeePerGas, maxPriorityFeePerGas })
    const cost = { gasLimit: 21_000n, maxFeePerGas, l1FeeWei }
    if (!paymentCovers(amount, cost, weiPerBaseUnit).covered && !(instead !== undefined && worstCaseWei(cost) < instead)) {
      this.#state.log.warn({ submission: submission.id, nonce: stuck.nonce, why }, 'not cancelled: the cancellation would cost more than the payment is worth')
      return false
    }
    const raw = await lane.account.signTransaction({
      chainId: network.config.chainId,
      to: lane.address,
      value: 0n,
      gas: 21_000n,
      nonce: stuck.nonce,
      maxFeePerGas,
      maxPriorityFeePerGas,
      type: 'eip1559',
    })
    const hash = keccak256(raw)
    const cancel: SentTransaction = {
      ...stuck,
      hash,
      raw,
      gas: '21000',
      maxFeePerGas: maxFeePerGas.toString(),
      maxPriorityFeePerGas: maxPriorityFeePerGas.toString(),
      sentAt: Date.now(),
      hashes: [...stuck.hashes, hash],
      cancel: true,
      ...(expiring ? { expiring: true as const } : {}),
    }
    await store.update(submission.id, { transaction: cancel, reason: why }, lane.fence!)
    const refusal = await broadcast(this.#state, raw)
    this.#state.log.warn({ submission: submission.id, nonce: stuck.nonce, hash, refused: refusal, why }, 'cancelling a transaction')
    return true
  }

  /** What an included transaction did, from the Runner's `Relayed` event; a failed batch's reason is replayed. */
  async #outcome(submission: Submission, receipt: TransactionReceipt): Promise<RelayOutcome> {
    const { network } = this.#state.context
    const { request } = submission
    const token = paymentToken(network, request.payment.token)
    const relayed = relayedEvent(receipt.logs, getAddress(network.config.runner.contract))
    if (!relayed) return { paidBaseUnits: '0', callSucceeded: false, callReason: 'the Runner logged no relay' }
    const paid = { paidBaseUnits: relayed.received.toString(), chargedBaseUnits: relayed.charged.toString(), refundedBaseUnits: relayed.refunded.toString() }
    if (relayed.callSucceeded) {
      const swallowed = swallowedFailure(this.#state.context, request, token, receipt.logs)
      return swallowed === undefined ? { ...paid, callSucceeded: true } : { ...paid, callSucceeded: false, callReason: swallowed }
    }
    const requested = relayOfRequest(this.#state.context, request.call, request.payment, token)
    const callReason =
      relayed.reason !== '0x'
        ? describeRevertData(relayed.reason, token.decimals, token.symbol, this.#state.context.delegates)
        : await describeCallFailure(this.#state.context, requested, token, receipt.blockNumber - 1n).catch(() => undefined)
    return { ...paid, callSucceeded: false, ...(callReason ? { callReason } : {}) }
  }

  /**
   * Same nonce, same transaction, fees raised by the configured bump (at least the network's current
   * ones) but never past what the payment covers: re-simulated at the new fees first. Where the bump
   * the node requires would pass the payment's cover, it is not replaced: it waits at its fee.
   */
  async #replace(lane: Lane, submission: Submission, stuck: SentTransaction): Promise<void> {
    const { network, store } = this.#state.context
    const { config, client } = network
    const { id } = submission
    const bump = (value: string) => (BigInt(value) * BigInt(10_000 + config.runner.feeBumpBps)) / 10_000n
    let prepared: PreparedRelay
    let current: Fees
    try {
      current = await readFees(client)
      const maxPriorityFeePerGas = max(bump(stuck.maxPriorityFeePerGas), current.maxPriorityFeePerGas)
      const maxFeePerGas = max(bump(stuck.maxFeePerGas), current.maxFeePerGas, maxPriorityFeePerGas)
      // The stipend the stuck one carries, so that only the fees change; against the latest block,
      // since the pending state holds the stuck transaction itself.
      const measured = { callGas: BigInt(stuck.callGas), refundGas: BigInt(stuck.refundGas ?? 0) }
      prepared = await prepare(this.#state, lane, submission, stuck.nonce, { maxFeePerGas, maxPriorityFeePerGas }, measured, false)
    } catch (error) {
      if (!(error instanceof ToolError)) throw error
      this.#state.log.warn({ submission: id, reason: error.message }, 'stuck transaction not replaced: it would no longer succeed')
      return
    }
    if (!prepared.coverage.covered) {
      this.#state.log.warn({ submission: id, worstCaseWei: prepared.coverage.worstCaseWei.toString() }, 'stuck transaction not replaced: the payment does not cover the raised fees')
      if (!submission.reason?.startsWith('replacement')) await store.update(id, { reason: 'replacement held: the payment does not cover the fee the node requires to replace it' }, lane.fence!)
      return
    }
    const replacement = await sign(this.#state, lane, prepared, stuck.nonce, stuck.hashes, stuck.firstSentAt)
    await store.update(id, { transaction: replacement }, lane.fence!)
    await broadcast(this.#state, replacement.raw)
    this.#state.log.info({ submission: id, hash: replacement.hash, replaces: stuck.hash, nonce: stuck.nonce }, 'replaced a stuck transaction')
  }

  /**
   * The receipt of whichever of `hashes` was included, if any; `answered` when the node answered for
   * every hash (its receipt, or that it has none), not when a read failed.
   */
  async #receipt(hashes: readonly Hex[]): Promise<{ receipt: TransactionReceipt | undefined; answered: boolean }> {
    let answered = true
    const receipts = await Promise.all(
      hashes.map((hash) =>
        this.#state.context.network.client.getTransactionReceipt({ hash }).catch((error: unknown) => {
          if (!(error instanceof TransactionReceiptNotFoundError)) answered = false
          return undefined
        }),
      ),
    )
    return { receipt: receipts.find((receipt) => receipt !== undefined), answered }
  }
}

function max(...values: bigint[]): bigint {
  return values.reduce((a, b) => (a > b ? a : b))
}

/**
 * Runs `work` over `items`, at most `limit` at once, and answers in the items' order.
 *
 * @example
 * await mapLimited(submissions, 4, (submission) => check(submission))
 */
async function mapLimited<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length)
  let next = 0
  const lane = async () => {
    while (next < items.length) {
      const index = next++
      results[index] = await work(items[index]!)
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane))
  return results
}

/**
 * Why a delegate batch's call phase failed though the Runner saw it return: a target that catches
 * the account's failure (an EntryPoint) says so in its logs (`BatchTerms.swallowedFailure`).
 * `undefined` for a signed-transfer payment, a delegate whose target does not catch, or a request
 * that no longer reads (its delegate no longer served): the Runner's word stands.
 */
function swallowedFailure(context: RelayContext, request: SubmitRequest, token: PaymentToken, logs: readonly Log[]): string | undefined {
  if (!('batch' in request.payment)) return undefined
  try {
    return relayOfRequest(context, request.call, request.payment, token).batch?.swallowedFailure?.(logs)
  } catch {
    return undefined
  }
}
