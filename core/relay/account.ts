import { erc20Abi, formatEther, formatUnits, getAddress, isAddressEqual, slice, type Address } from 'viem'
import { expectChainId } from '../chain/expectChainId.ts'
import type { Network } from '../chain/networks.ts'
import type { AccountView } from './schemas.ts'

const DELEGATION_PREFIX = '0xef0100'

// The account view names Calibur (SPEC §6: isCalibur, caliburNonce): the one read core makes of a
// delegate, Calibur's own `getSeq(uint256 key)` (0x6a1ea88d, DESIGN §4), not the devnet stand-in's ABI.
const getSeqAbi = [
  { type: 'function', name: 'getSeq', stateMutability: 'view', inputs: [{ name: 'key', type: 'uint256' }], outputs: [{ name: 'seq', type: 'uint256' }] },
] as const

/**
 * What Bruno sees of an account: whether it is EIP-7702-delegated and to what (Calibur?), its
 * Calibur batch nonce (key 0), its EOA nonce, and its ETH and configured-token balances — read in
 * one JSON-RPC batch.
 *
 * @example
 * await readAccount(network, '0x7099…79C8') // { delegated: true, isCalibur: true, caliburNonce: '3', ethBalance: '0', ethBalanceWei: '0', tokens: [{ symbol: 'USDC', … }] }
 */
export async function readAccount(network: Network, address: Address): Promise<AccountView> {
  const { client, config } = network
  const [, code, nonce, eth, ...balances] = await Promise.all([
    expectChainId(network),
    client.getCode({ address }),
    client.getTransactionCount({ address }),
    client.getBalance({ address }),
    ...config.tokens.map((token) => client.readContract({ address: getAddress(token.address), abi: erc20Abi, functionName: 'balanceOf', args: [address] })),
  ])
  const delegate = code && code.length === 48 && code.toLowerCase().startsWith(DELEGATION_PREFIX) ? getAddress(slice(code, 3)) : undefined
  const isCalibur = delegate !== undefined && isAddressEqual(delegate, getAddress(config.calibur))
  const caliburNonce = isCalibur
    ? await client.readContract({ address, abi: getSeqAbi, functionName: 'getSeq', args: [0n] })
    : undefined
  return {
    address,
    delegated: delegate !== undefined,
    ...(delegate ? { delegate } : {}),
    isCalibur,
    ...(caliburNonce !== undefined ? { caliburNonce: caliburNonce.toString() } : {}),
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
