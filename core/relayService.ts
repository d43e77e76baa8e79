import type { FastifyBaseLogger } from 'fastify'
import { getAddress, type Address } from 'viem'
import { runnerKeys, treasuryKey } from './chain/runnerKeys.ts'
import { LaneFunding } from './runner/laneFunding.ts'
import type { BrunoConfig } from '../config/schema.ts'
import type { Networks } from './chain/networks.ts'
import type { Metrics } from './metrics.ts'
import { readAccount } from './relay/account.ts'
import type { RelayContext } from './relay/context.ts'
import type { AdmissionRefusal } from './relay/admission.ts'
import { SimulationGate } from './relay/simulationGate.ts'
import { requireTransferPayer } from './relay/paymentToken.ts'
import { payeeRefunds } from './relay/payeeRefunds.ts'
import { quoteCall } from './relay/quote.ts'
import { observedStore } from './store/observedStore.ts'
import { SettledWait } from './relay/settledWait.ts'
import { RunnerLoop, type LaneView } from './runner/runner.ts'
import { RUNNER_OPERATOR_SET_GAS } from './relay/runnerCall.ts'
import type { Delegate } from './relay/delegate.ts'
import type { AccountView, Quote, QuoteRequest, SubmissionView, SubmitRequest } from './relay/schemas.ts'
import { submissionStatus, submissionView } from './relay/status.ts'
import { openStore } from './store/openStore.ts'
import type { SubmissionStore } from './store/store.ts'
import { submitCall } from './relay/submit.ts'

/** A delegate as a client knows it: its name (`account`'s delegateName) and its address on a chain. */
export interface ServedDelegate {
  readonly name: string
  readonly address: Address
}

/**
 * The relay's operations, one semantics for every transport (MCP tools, REST, JSON-RPC): each
 * takes the chain by its configured name. Owns the store and the chains' runner loops.
 *
 * @example
 * const relay = openRelay(config, networks, process.env, log)
 * const { id } = await relay.submit('base', { call, payment })
 */
export interface RelayService {
  account(chain: string, address: Address): Promise<AccountView>
  /** The delegates this deployment relays batches for on `chain`, by name, each with its address there (what an account delegates to). */
  delegates(chain: string): readonly ServedDelegate[]
  /** Whether `chain`'s payee sends back what a relay did not cost (a PayeeVault for this Runner), read once. */
  payeeRefunds(chain: string): Promise<boolean>
  /** Refuses a payer that cannot pay by signed transfer (it has code), in submit's words: asked by payment_authorization before anything is signed. */
  requireTransferPayer(chain: string, payer: Address): Promise<void>
  /** `client`: who asked, as for submit: its simulations are bounded per client. */
  quote(chain: string, request: QuoteRequest, client?: string): Promise<Quote>
  /** `client`: who asked (an address as the transport sees it), for per-client admission; `paymentId`: x402's payment-identifier, kept with it (`PaymentIdTaken` if another submission holds it). */
  submit(chain: string, request: SubmitRequest, client?: string, paymentId?: string): Promise<SubmissionView>
  /** The submission stored on `chain` with x402's `paymentId`, and the request it was accepted for. */
  byPaymentId(chain: string, paymentId: string): Promise<{ view: SubmissionView; request: SubmitRequest } | undefined>
  /** `undefined` for an id the store does not have. */
  status(id: string): Promise<SubmissionView | undefined>
  /** The submission once `done` or `failed`, or as it stands after `timeoutMs` (one shared read of the store per tick: `SettledWait`). */
  settled(accepted: SubmissionView, timeoutMs: number): Promise<SubmissionView>
  /** Whether the store answers (the health check). */
  ping(): Promise<boolean>
  /** Each chain's runner EOAs' ETH balances, one per lane; a chain that does not answer is left out. */
  runnerBalances(): Promise<{ chain: string; operator: Address; wei: bigint }[]>
  /** Each chain's runner lanes as its runner loop last saw them (no chain read). */
  lanes(): { chain: string; lanes: LaneView[] }[]
  /** Serves a delegate on every chain (its group's `Delegate`): its signed batches pay, `account` names it. */
  acceptDelegate(delegate: Delegate): void
  /** Starts every chain's runner loop. */
  startRunners(): void
  close(): Promise<void>
}

/** Every submission's life is logged; with `metrics`, its stage changes are counted and its time to `done` recorded. */
export function openRelay(config: BrunoConfig, networks: Networks, env: NodeJS.ProcessEnv, log: FastifyBaseLogger, metrics?: Metrics): RelayService {
  const storage = openStore(config.store, env)
  const store: SubmissionStore = observedStore(storage.store, log.child({ component: 'relay' }), metrics)
  const runners = new Map<string, RunnerLoop>()
  const contexts = new Map<string, RelayContext>()
  const laneAddresses = new Map<string, Address[]>()
  const delegates: Delegate[] = []
  for (const network of config.networks) {
    const accounts = runnerKeys(network, env)
    laneAddresses.set(network.name, accounts.map((account) => getAddress(account.address)))
    const refused = (reason: AdmissionRefusal) => metrics?.admissionRefusals.inc({ chain: network.name, reason })
    const { atOnce, refusedGasPerMinute } = network.relay.admission.simulations
    const context: RelayContext = {
      network: networks.get(network.name),
      store,
      // Quotes and submits simulate from the first lane (the next when it cannot pay), their price
      // counting the read of the Runner's operator set that any other lane pays.
      operator: getAddress(accounts[0]!.address),
      spareOperators: accounts.slice(1).map((account) => getAddress(account.address)),
      laneGas: accounts.length > 1 ? RUNNER_OPERATOR_SET_GAS : 0n,
      delegates,
      refused,
      simulations: new SimulationGate({ atOnce, refusedGasPerWindow: BigInt(refusedGasPerMinute), windowMs: 60_000 }, refused),
      checking: new Map(),
      signedTransferTokens: new Set(),
      wake: () => runners.get(network.name)?.wake(),
    }
    contexts.set(network.name, context)
    const lanes = accounts.map((account) => ({
      account,
      ownership: storage.ownership(network, { operator: getAddress(account.address), wake: context.wake }, log.child({ chain: network.name, component: 'runner', operator: account.address })),
    }))
    // The runner reads through a client of its own: its slow simulations never share a batch with a caller's.
    const runnerContext: RelayContext = { ...context, network: { ...context.network, client: context.network.runnerClient } }
    const treasury = treasuryKey(network, env)
    const funding = treasury && new LaneFunding(runnerContext.network, treasury, log.child({ chain: network.name }), (operator) => metrics?.laneTopUps.inc({ chain: network.name, operator }))
    runners.set(network.name, new RunnerLoop(runnerContext, lanes, log, undefined, funding))
  }
  const context = (chain: string) => contexts.get(chain)!
  const waits = new SettledWait(store)
  let started = false
  return {
    account: (chain, address) => readAccount(context(chain).network, address, delegates),
    delegates: (chain) =>
      delegates.flatMap((delegate) => {
        const address = delegate.address(context(chain).network)
        return address ? [{ name: delegate.name, address }] : []
      }),
    payeeRefunds: (chain) => payeeRefunds(context(chain)),
    requireTransferPayer: (chain, payer) => requireTransferPayer(context(chain).network, payer, delegates),
    quote: (chain, request, client) => quoteCall(context(chain), request, client),
    submit: (chain, request, client, paymentId) => submitCall(context(chain), request, client, paymentId),
    async byPaymentId(chain, paymentId) {
      const submission = await store.byPaymentId(chain, paymentId)
      return submission && { view: submissionView(submission), request: submission.request }
    },
    status: (id) => submissionStatus(store, id),
    settled: (accepted, timeoutMs) => waits.settled(accepted, timeoutMs),
    ping: () => store.ping().catch(() => false),
    async runnerBalances() {
      const balances = await Promise.all(
        [...contexts.values()].flatMap(({ network }) =>
          laneAddresses.get(network.name)!.map((operator) =>
            network.client.getBalance({ address: operator }).then(
              (wei) => ({ chain: network.name, operator, wei }),
              () => undefined,
            ),
          ),
        ),
      )
      return balances.filter((balance) => balance !== undefined)
    },
    lanes: () => [...runners.entries()].map(([chain, runner]) => ({ chain, lanes: runner.lanes() })),
    acceptDelegate(delegate) {
      delegates.push(delegate)
    },
    startRunners() {
      if (started) return
      started = true
      for (const runner of runners.values()) runner.start()
    },
    async close() {
      await Promise.all([...runners.values()].map((runner) => runner.stop()))
      await waits.close()
      await store.close()
    },
  }
}
