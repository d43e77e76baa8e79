import type { FastifyBaseLogger } from 'fastify'
import { getAddress, keccak256, type Address, type LocalAccount } from 'viem'
import { readFees } from '../chain/fees.ts'
import type { Network } from '../chain/networks.ts'

/** How often the lanes' balances are read at most (a lane found short of ETH is looked at in the next pass regardless). */
export const LANE_FUNDING_CHECK_MS = 10_000

/** A top-up: a plain transfer, 21,000 gas. */
const TRANSFER_GAS = 21_000n

/**
 * `runner.treasury`: tops each lane this process owns up to `targetWei` when its balance is under
 * `floorWei`, by a plain ETH transfer from the treasury key, at most once per lane per
 * `intervalSec` (so a lane that burns ETH fast, or a transfer still pending, cannot drain the
 * treasury). Each top-up is logged and counted (`onTopUp`); a failure is logged and never stops the
 * runner. Balances are read at most every `LANE_FUNDING_CHECK_MS`, or at once when asked (`urgent`).
 *
 * @example
 * const funding = new LaneFunding(network, privateKeyToAccount(treasuryKey), log)
 * await funding.check([lane1, lane2]) // in the runner's pass
 */
export class LaneFunding {
  readonly #network: Network
  readonly #treasury: LocalAccount
  readonly #log: FastifyBaseLogger
  readonly #onTopUp: ((operator: Address) => void) | undefined
  readonly #lastTopUp = new Map<Address, number>()
  readonly #now: () => number
  #checkedAt = 0
  #running: Promise<void> | undefined

  /** `now`: the clock the throttle and the interval are read by (unix ms; a test moves it). */
  constructor(network: Network, treasury: LocalAccount, log: FastifyBaseLogger, onTopUp?: (operator: Address) => void, now: () => number = Date.now) {
    this.#network = network
    this.#now = now
    this.#treasury = treasury
    this.#log = log.child({ component: 'lane funding', treasury: treasury.address })
    this.#onTopUp = onTopUp
  }

  /** Looks at `lanes` if it is time (or `urgent`), one look at a time; never throws. */
  check(lanes: readonly Address[], urgent = false): Promise<void> {
    if (this.#running) return this.#running
    if (!urgent && this.#now() - this.#checkedAt < LANE_FUNDING_CHECK_MS) return Promise.resolve()
    this.#checkedAt = this.#now()
    this.#running = this.#topUp(lanes)
      .catch((error: unknown) => this.#log.warn({ err: error }, 'topping up the runner lanes failed; tried again later'))
      .finally(() => {
        this.#running = undefined
      })
    return this.#running
  }

  async #topUp(lanes: readonly Address[]): Promise<void> {
    const { client, config } = this.#network
    const settings = config.runner.treasury!
    const [floor, target] = [BigInt(settings.floorWei), BigInt(settings.targetWei)]
    const now = this.#now()
    const due = lanes.filter((lane) => now - (this.#lastTopUp.get(lane) ?? 0) >= settings.intervalSec * 1000)
    if (due.length === 0) return
    const balances = await Promise.all(due.map((lane) => client.getBalance({ address: lane })))
    const short = due.flatMap((lane, index) => (balances[index]! < floor ? [{ lane, balance: balances[index]! }] : []))
    if (short.length === 0) return
    const [fees, first] = await Promise.all([readFees(client), client.getTransactionCount({ address: this.#treasury.address, blockTag: 'pending' })])
    for (const [index, { lane, balance }] of short.entries()) {
      const value = target - balance
      const raw = await this.#treasury.signTransaction({ chainId: config.chainId, to: lane, value, gas: TRANSFER_GAS, nonce: first + index, ...fees, type: 'eip1559' })
      // Counted before it is sent: a transfer whose answer is lost may still be in the node's pool.
      this.#lastTopUp.set(lane, now)
      await this.#network.sendRawTransaction(raw)
      this.#onTopUp?.(lane)
      this.#log.info({ operator: getAddress(lane), balance: balance.toString(), value: value.toString(), hash: keccak256(raw) }, 'topped up a runner lane from the treasury')
    }
  }
}
