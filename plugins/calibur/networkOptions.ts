import { Address as AddressSchema, described, Type, type Network } from '../../core/plugin.ts'
import type { Address } from 'viem'

/**
 * Calibur's address: Uniswap's EIP-7702 delegate (v1.1.0) has one on every chain it is deployed to
 * (the deployments table of github.com/Uniswap/calibur's README, and Uniswap's
 * developers.uniswap.org/docs/protocols/smart-wallet/deployments). The devnet places its stand-in here.
 */
export const CALIBUR_ADDRESS: Address = '0x000000005c84F8Fd50b21CAC312528A64437030e'

/** The calibur group's options on a chain (`networks[].groupOptions.calibur`). */
export const CaliburNetworkOptions = Type.Object(
  {
    address: described(
      { ...AddressSchema, default: CALIBUR_ADDRESS },
      'Calibur\'s address on this chain: the contract accounts delegate to (EIP-7702). Defaults to Calibur\'s own, the same on every chain it is deployed to',
    ),
  },
  { additionalProperties: false },
)

/** Where Calibur is on a served chain: the group's `networkOptions` there. */
export type CaliburOn = (network: Network) => Address
