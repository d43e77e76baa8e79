import { randomUUID } from 'node:crypto'
import type { FastifyBaseLogger } from 'fastify'
import { getAddress, type Address, type LocalAccount } from 'viem'
import { readFees } from '../chain/fees.ts'
import type { RelayContext } from '../relay/context.ts'
import { localOwnership, runnerKeyName, type RunnerOwnership } from '../store/ownership.ts'
import { StaleEpochError, type Submission } from '../store/store.ts'
import { fillGap, follow } from './follow.ts'
import { tooLateToSend, waitForSlot } from './holds.ts'
import type { LaneFunding } from './laneFunding.ts'
import { checkShort, laneOf, pickLane, readNonce, takenUp, type Lane } from './lanes.ts'
import { check, dispatch, sendFresh } from './send.ts'
import { fallsHere, giveUp, laneShare, standDown } from './share.ts'
import { payerOf, type RunnerState } from './state.ts'

/** The longest wait between two passes while the chain keeps failing. */
const MAX_BACKOFF_MS = 30_000
/** How many held submissions one pass re-checks at most: the rest wait for the next, so new ones never wait long. */
const RECHECKS_PER_PASS = 8
/** How many held submissions are re-checked at once. */
const RECHECKS_AT_ONCE = 4
/** How often settled submissions older than `relay.retentionSec` are deleted. */
const PRUNE_EVERY_MS = 60_000

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
 * stalled (the store refuses its writes) sends nothing more: it stands down (`standDown`, share.ts).
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
  #prunedAt = 0

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
    this.#state = { context, lanes, log: log.child({ chain: context.network.name, component: 'runner' }), holds: new Map(), lookedAt: new Map(), replica: randomUUID(), slotWaits: 0 }
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
        this.#state.log.info({ operator: lane.address, epoch: lane.fence.epoch, ...(active && takenUp(this.#state, lane, active)) }, 'runner stopped: what is in flight is taken up by the next start')
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
        { operator: lane.address, epoch: lane.fence!.epoch, ...takenUp(this.#state, lane, active) },
        'runner started: it sends for the runner key and takes up what is in flight',
      )
    }
    // Read once a lane is owned, idle or not: /readyz shows each lane's next nonce before its first send (issue 49).
    await Promise.all(owned.filter((lane) => lane.nextNonce === undefined).map((lane) => readNonce(this.#state, lane)))
    if (active.length === 0) return
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
      const cancelled = await fillGap(this.#state, lane, mine)
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
    const following = await Promise.allSettled(followed.map(({ lane, submission }) => follow(this.#state, lane, submission, restarted.has(lane), latest)))
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
    if (now - this.#prunedAt < PRUNE_EVERY_MS) return
    this.#prunedAt = now
    await this.#state.context.store.prune(now - this.#state.context.network.config.relay.retentionSec * 1000, lane.fence!)
  }
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
