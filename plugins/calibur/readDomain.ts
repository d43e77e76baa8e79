import {
  BaseError,
  ContractFunctionRevertedError,
  ContractFunctionZeroDataError,
  getAddress,
  type Address,
  type Client,
} from 'viem'
import { readContract } from 'viem/actions'
import { ToolError } from '../../core/plugin.ts'
import { caliburAbi } from './abi.ts'
import { caliburDomainFromEip712Domain, type CaliburDomain } from './typedData.ts'

/**
 * Reads an account's Calibur domain with ERC-5267 `eip712Domain()` on the account itself: the
 * salt is the owner's to change, so it is never assumed. Refuses an account that does not answer
 * (no code: not delegated), answers for another delegate, or names another contract as its
 * `verifyingContract` (its signatures would not be checked against this account).
 *
 * @example
 * await readCaliburDomain(network.client, '0x70997970C51812dc3A010C7d01b50e0d17dc79C8')
 * // { chainId: 31337, account: '0x7099…79C8', salt: '0x0000000000000000000000005fbdb2315678afecb367f032d93f642f64180aa3' }
 */
export async function readCaliburDomain(client: Client, account: Address): Promise<CaliburDomain> {
  let result
  try {
    result = await readContract(client, { address: account, abi: caliburAbi, functionName: 'eip712Domain' })
  } catch (error) {
    if (answeredWithoutDomain(error))
      throw new ToolError(`${account} has no eip712Domain(): it is not delegated to Calibur (or to any ERC-5267 delegate)`)
    throw error
  }
  const domain = caliburDomainFromEip712Domain(result)
  if (domain.account !== getAddress(account))
    throw new ToolError(`${account}'s EIP-712 domain names ${domain.account} as its verifyingContract, not the account itself`)
  return domain
}

// The node answered and the account did not: empty code returns nothing, another delegate
// reverts. A transport or node failure is not the account's fault and is rethrown as is.
function answeredWithoutDomain(error: unknown): boolean {
  return (
    error instanceof BaseError &&
    Boolean(error.walk((cause) => cause instanceof ContractFunctionZeroDataError || cause instanceof ContractFunctionRevertedError))
  )
}
