import { erc20Abi, formatEther, formatUnits, getAddress, isAddressEqual, slice, type Address } from 'viem'
import { expectChainId } from '../chain/expectChainId.ts'
import type { Network } from '../chain/networks.ts'
import type { Delegate } from './delegate.ts'
import type { AccountView } from './schemas.ts'

const DELEGATION_PREFIX = '0xef0100'

/**
 * What Bruno sees of an account: whether it is EIP-7702-delegated and to what — named, with the
 * nonce its next signed batch spends and what it still needs before it runs one, when the delegate
 * is one of `delegates` — its EOA nonce, and
 * its ETH and configured-token balances, read in one JSON-RPC batch.
 *
 * @example
 * await readAccount(network, '0x7099…79C8', context.delegates) // { delegated: true, delegate: '0x0000…', delegateName: 'Calibur', delegateNonce: '3', ethBalance: '0', … }
 */
export async function readAccount(network: Network, address: Address, delegates: readonly Delegate[]): Promise<AccountView> {
  const { client, config } = network
  const [, code, nonce, eth, ...balances] = await Promise.all([
    expectChainId(network),
    client.getCode({ address }),
    client.getTransactionCount({ address }),
    client.getBalance({ address }),
    ...config.tokens.map((token) => client.readContract({ address: getAddress(token.address), abi: erc20Abi, functionName: 'balanceOf', args: [address] })),
  ])
  const delegate = code && code.length === 48 && code.toLowerCase().startsWith(DELEGATION_PREFIX) ? getAddress(slice(code, 3)) : undefined
  const known = delegate && delegates.find((candidate) => {
    const at = candidate.address(network)
    return at !== undefined && isAddressEqual(at, delegate)
  })
  const [delegateNonce, notReady] = await Promise.all([known?.nextNonce?.(network, address), known?.readiness?.(network, address)])
  return {
    address,
    delegated: delegate !== undefined,
    ...(delegate ? { delegate } : {}),
    ...(known ? { delegateName: known.name } : {}),
    ...(delegateNonce !== undefined ? { delegateNonce: delegateNonce.toString() } : {}),
    ...(notReady !== undefined ? { delegateNotReady: notReady } : {}),
    nonce,
    ethBalance: formatEther(eth),
    ethBalanceWei: eth.toString(),
    tokens: config.tokens.map((token, index) => ({
      symbol: token.symbol,
      address: getAddress(token.address),
      balance: formatUnits(balances[index]!, token.decimals),
      balanceBaseUnits: balances[index]!.toString(),
    })),
  }
}
