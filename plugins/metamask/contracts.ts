import { DELEGATOR_CONTRACTS } from '@metamask/delegation-deployments'
import { getAddress, type Address } from 'viem'
import { paymentFirstEnforcerArtifact } from '../../contracts/artifacts.ts'
import { deterministicAddress } from '../../core/plugin.ts'

const v1_3_0 = Object.values(DELEGATOR_CONTRACTS['1.3.0'] ?? {})[0] ?? {}

/**
 * MetaMask's delegation framework v1.3.0 as this group uses it: the same addresses on every chain
 * MetaMask deployed it to (`@metamask/delegation-deployments`), and on the devnet, which builds
 * them there from `@metamask/delegation-abis` bytecode.
 *
 * @example
 * metaMaskContracts.delegationManager // '0xdb9B1e94B5b69Df7e401DDbedE43491141047dB3'
 */
export const metaMaskContracts = {
  /** Checks a delegation's signature and caveats, then has the delegator run the execution. */
  delegationManager: getAddress(v1_3_0.DelegationManager!),
  /** The EIP-7702 delegate: an account whose code is `0xef0100 ‖ this` is a MetaMask smart account. */
  delegator: getAddress(v1_3_0.EIP7702StatelessDeleGatorImpl!),
} as const satisfies Record<string, Address>

/**
 * Bruno's own caveat enforcer (contracts/PaymentFirstEnforcer.sol): the payment's batch, then the
 * calls', in one transaction, each pinned by its hash, until a deadline. Where the deterministic
 * deployment proxy puts it (CREATE2, salt 0; `bruno deploy --metamask`): the same on every chain.
 *
 * @example
 * paymentFirstEnforcer // '0x…'
 */
export const paymentFirstEnforcer: Address = deterministicAddress(paymentFirstEnforcerArtifact.bytecode)

/** The EntryPoint the delegator's constructor names (v0.7): used only by the 4337 path, which Bruno does not take. */
export const delegatorEntryPoint = getAddress(v1_3_0.EntryPoint!)
