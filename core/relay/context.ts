import type { Address } from 'viem'
import type { Network } from '../chain/networks.ts'
import type { SubmissionStore } from './store.ts'

/** What every relay operation works with for one chain. */
export interface RelayContext {
  readonly network: Network
  readonly store: SubmissionStore
  /** The runner EOA's address (the Runner contract's operator). */
  readonly operator: Address
  /** Tells the runner loop there is work, so it need not wait for its next poll. */
  readonly wake: () => void
}
