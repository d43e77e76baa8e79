import {
  erc20Abi,
  AbiDecodingDataSizeTooSmallError,
  AbiDecodingZeroDataError,
  BaseError,
  ContractFunctionRevertedError,
  ContractFunctionZeroDataError,
} from 'viem'
import { configuredTokenInfo, requireToken, ToolError, type Network, type ResolvedToken } from '../../core/plugin.ts'

/**
 * The token a caller named, with its decimals: from the config for a configured token (no RPC),
 * else read with `decimals()` from the chain — which also refuses an address that is no ERC-20.
 *
 * @example
 * await erc20Token(network, 'USDC')     // { address: '0x…', symbol: 'USDC', decimals: 6 }
 * await erc20Token(network, '0x6B17…') // { address: '0x6B17…', decimals: 18 } (read from the chain)
 */
export async function erc20Token(network: Network, token: string): Promise<ResolvedToken> {
  const found = requireToken(network.config, token)
  if (found.configured) return configuredTokenInfo({ ...found, configured: found.configured })
  let decimals: number
  try {
    decimals = await network.client.readContract({ address: found.address, abi: erc20Abi, functionName: 'decimals' })
  } catch (error) {
    if (answeredNotErc20(error)) {
      throw new ToolError(`${found.address} on ${network.name} is not an ERC-20 token: its decimals() reverted or returned nothing`)
    }
    throw error
  }
  // uint8 on the wire, but a contract can return any word; a larger value is no real token.
  if (decimals > 255) throw new ToolError(`${found.address} on ${network.name} is not an ERC-20 token: decimals() returned ${decimals}`)
  return { address: found.address, decimals }
}

// The node answered and the contract did not behave as an ERC-20 (a revert, no code, a short
// return). Anything else — the chain unreachable, a node error — is not the token's fault.
function answeredNotErc20(error: unknown): boolean {
  if (!(error instanceof BaseError)) return false
  return Boolean(
    error.walk(
      (cause) =>
        cause instanceof ContractFunctionRevertedError ||
        cause instanceof ContractFunctionZeroDataError ||
        cause instanceof AbiDecodingZeroDataError ||
        cause instanceof AbiDecodingDataSizeTooSmallError,
    ),
  )
}
