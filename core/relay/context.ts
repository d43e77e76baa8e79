import type { Address } from 'viem'
import type { Network } from '../chain/networks.ts'
import type { AdmissionRefusal } from './admission.ts'
import type { Delegate } from './delegate.ts'
import type { SimulationGate } from './simulationGate.ts'
import type { SubmissionView } from './schemas.ts'
import type { SubmissionStore } from '../store/store.ts'

/** What every relay operation works with for one chain. */
export interface RelayContext {
  readonly network: Network
  readonly store: SubmissionStore
  /** The runner EOA's address (the Runner contract's operator) that simulations run from: the first lane for quotes and submits, the sending lane for the runner. */
  readonly operator: Address
  /** The chain's other lanes, which a quote or submit simulates from, in turn, when `operator` cannot pay for gas. */
  readonly spareOperators?: readonly Address[]
  /** Gas a quote or submit adds to its estimate so that its price covers any lane: past the first, a lane pays the Runner's read of its operator set (`RUNNER_OPERATOR_SET_GAS`). */
  readonly laneGas?: bigint
  /** The delegates whose signed batches the relay accepts as payment (added by their groups at start), with their errors' words. */
  readonly delegates: readonly Delegate[]
  /** Tells the runner loop there is work, so it need not wait for its next poll. */
  readonly wake: () => void
  /** The clock admission judges deadlines by, in ms since the epoch (absent: `Date.now`); a test fixes it to name one second. */
  readonly now?: () => number
  /** Counts a submission refused by admission (`/metrics`). */
  readonly refused?: (reason: AdmissionRefusal) => void
  /** Bounds what each client's quotes and submits may make the node simulate (absent: unbounded, as for the runner). */
  readonly simulations?: SimulationGate
  /** Submissions being checked, by payment identity and client: the same payment submitted meanwhile by the same client shares the answer. */
  readonly checking?: Map<string, Promise<SubmissionView>>
  /** Tokens seen to take signed transfers (EIP-3009): a quote asks each once, not every time. */
  readonly signedTransferTokens?: Set<Address>
  /** Whether the payee refunds (this Runner's PayeeVault), once read: the code at an address it names never changes. */
  payeeRefunds?: Promise<boolean>
}
