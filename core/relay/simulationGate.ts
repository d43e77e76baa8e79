import { ToolError } from '../tool/tool.ts'
import type { AdmissionRefusal } from './admission.ts'

/** What one client's simulations may cost the node: `relay.admission.simulations`. */
export interface SimulationLimits {
  /** Simulations (quotes, submits) of one client under way at once; the next is refused. */
  readonly atOnce: number
  /** Gas the node may run within `windowMs` for one client's refused ones; past it, the client is refused before simulating. */
  readonly refusedGasPerWindow: bigint
  readonly windowMs: number
}

/** One client's simulation under way: ended exactly once, as accepted (nothing counted) or refused (its gas counted). */
export interface Simulating {
  accepted(): void
  refused(gas: bigint): void
}

/**
 * Runs `simulate` as one of `client`'s simulations through `gate` (none: unbounded). A `ToolError`
 * it throws is a refusal, counted at the gas it reported measuring (`measured`), or at `unmeasuredGas`
 * (the most a probe runs) when it threw before any measure; anything else (Bruno's fault) counts nothing.
 *
 * @example
 * const prepared = await simulateAs(context.simulations, client, 15_000_000n, async (measured) => {
 *   const prepared = await prepareRunnerTransaction(context, relay, undefined, options)
 *   measured(prepared.gas)
 *   return prepared
 * })
 */
export async function simulateAs<T>(gate: SimulationGate | undefined, client: string | undefined, unmeasuredGas: bigint, simulate: (measured: (gas: bigint) => void) => Promise<T>): Promise<T> {
  const simulating = gate?.enter(client)
  let gas = unmeasuredGas
  try {
    const result = await simulate((measured) => {
      gas = measured
    })
    simulating?.accepted()
    return result
  } catch (error) {
    if (error instanceof ToolError) simulating?.refused(gas)
    else simulating?.accepted()
    throw error
  }
}

/**
 * Bounds what a client can make the node run for nothing. A quote or a submit runs the caller's call
 * on the node — probed at `relay.maxCallGas`, estimated, then run exactly — before anything is
 * stored or paid; a refused one was free to its client. So each client may have `atOnce` of them
 * under way, and once its refused ones ran `refusedGasPerWindow` within the window it is refused
 * before simulating, until that gas has aged out. A refusal says why and until when. Kept in memory,
 * per process: each replica bounds what its node runs.
 *
 * @example
 * const simulating = gate.enter('203.0.113.7') // throws ToolError when refused
 * try { const prepared = await prepare(); simulating.accepted() } catch (error) { simulating.refused(15_000_000n); throw error }
 */
export class SimulationGate {
  readonly #limits: SimulationLimits
  readonly #now: () => number
  readonly #running = new Map<string, number>()
  /** Per client, the refused simulations' gas within the window, oldest first. */
  readonly #refused = new Map<string, { readonly at: number; readonly gas: bigint }[]>()
  #sweptAt = 0

  readonly #counted: ((reason: AdmissionRefusal) => void) | undefined

  /** `refused`, when given, counts each refusal by its reason (`/metrics`). */
  constructor(limits: SimulationLimits, refused?: (reason: AdmissionRefusal) => void, now: () => number = Date.now) {
    this.#limits = limits
    this.#counted = refused
    this.#now = now
  }

  /** Starts a simulation for `client`, or refuses it (`ToolError`). An unnamed client is not bounded here. */
  enter(client: string | undefined): Simulating {
    if (client === undefined) return { accepted: () => {}, refused: () => {} }
    const now = this.#now()
    this.#sweep(now)
    const recent = (this.#refused.get(client) ?? []).filter((entry) => entry.at > now - this.#limits.windowMs)
    if (recent.length > 0) this.#refused.set(client, recent)
    else this.#refused.delete(client)
    const spent = recent.reduce((sum, entry) => sum + entry.gas, 0n)
    if (spent >= this.#limits.refusedGasPerWindow) {
      // The oldest entries age out first: the client may go on once enough of them have.
      let left = spent
      const until = recent.find((entry) => (left -= entry.gas) < this.#limits.refusedGasPerWindow)!.at + this.#limits.windowMs
      this.#counted?.('client_refused_gas')
      throw new ToolError(
        `refused: the client ${client}'s refused quotes and submits ran ${spent} gas on the node in the last ${this.#limits.windowMs / 1000} s, ` +
          `the most this relay simulates for refusals: try again after ${new Date(until).toISOString()}, with a call that succeeds and a payment that covers it`,
      )
    }
    const running = this.#running.get(client) ?? 0
    if (running >= this.#limits.atOnce) {
      this.#counted?.('client_simulating')
      throw new ToolError(`refused: the client ${client} has ${running} quotes or submits being simulated, the most it may have at once: wait for their answers`)
    }
    this.#running.set(client, running + 1)
    let ended = false
    const end = (gas: bigint) => {
      if (ended) return
      ended = true
      const left = this.#running.get(client)! - 1
      if (left === 0) this.#running.delete(client)
      else this.#running.set(client, left)
      if (gas > 0n) this.#refused.set(client, [...(this.#refused.get(client) ?? []), { at: this.#now(), gas }])
    }
    return { accepted: () => end(0n), refused: (gas) => end(gas) }
  }

  /** Once a window: forgets the refusals of clients that have not come back since they aged out. */
  #sweep(now: number): void {
    if (now - this.#sweptAt < this.#limits.windowMs) return
    this.#sweptAt = now
    for (const [client, entries] of this.#refused) {
      if (entries.every((entry) => entry.at <= now - this.#limits.windowMs)) this.#refused.delete(client)
    }
  }
}
