import { getContractAddress, zeroHash, type Address, type Hex } from 'viem'

/**
 * The deterministic deployment proxy (github.com/Arachnid/deterministic-deployment-proxy): the
 * same address on every chain it is on (anvil has it from genesis). Called with `salt ‖ initCode`,
 * it CREATE2s the contract and returns its address.
 */
export const DEPLOYMENT_PROXY: Address = '0x4e59b44847b379578588920cA78FbF26c0B4956C'

/** The CREATE2 salt of every contract Bruno deploys: fixed (zero), so an address depends on the contract's creation code alone. */
export const DEPLOYMENT_SALT: Hex = zeroHash

/**
 * Where the deployment proxy puts a contract of this creation code (constructor arguments appended):
 * the same on every chain.
 *
 * @example
 * deterministicAddress(paymentFirstEnforcerArtifact.bytecode) // '0x…' on every chain
 */
export function deterministicAddress(initCode: Hex): Address {
  return getContractAddress({ opcode: 'CREATE2', from: DEPLOYMENT_PROXY, salt: DEPLOYMENT_SALT, bytecode: initCode })
}
