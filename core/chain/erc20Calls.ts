import { erc20Abi, getAbiItem, maxUint256, toFunctionSelector, type Address } from 'viem'
import type { Call } from '../tool/schemas.ts'

// The ERC-20 calls more than one group makes (the erc20 encoders, a delegate batch's approvals and
// payment leg). Both take (address, uint256): two static 32-byte words after the selector, so
// they are written directly. viem's generic encoder (encodeFunctionData) gives the same bytes
// (test/erc20-calls.test.ts checks it over random arguments) but cost ~25 µs of a served
// tools/call's ~110 µs CPU (bench/RESULTS.md).
const APPROVE = toFunctionSelector(getAbiItem({ abi: erc20Abi, name: 'approve' }))
const TRANSFER = toFunctionSelector(getAbiItem({ abi: erc20Abi, name: 'transfer' }))
const ADDRESS = /^0x[0-9a-fA-F]{40}$/

/**
 * The call `approve(spender, amount)` on `token`: the account lets `spender` move up to `amount`
 * (base units) of its tokens.
 *
 * @example
 * encodeApprove({ token: '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48', spender: '0x68b3465833fb72A70ecDF485E0e4C7bD8665Fc45', amount: 12_500_000n })
 * // { to: '0xA0b8…eB48', value: '0', data: '0x095ea7b3…' }
 */
export function encodeApprove({ token, spender, amount }: { token: Address; spender: Address; amount: bigint }): Call {
  return { to: token, value: '0', data: `${APPROVE}${addressWord(spender)}${uint256Word(amount)}` }
}

/**
 * The call `transfer(to, amount)` on `token`: the account sends `amount` (base units) of its tokens.
 *
 * @example
 * encodeTransfer({ token: '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48', to: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8', amount: 1_000_000n })
 * // { to: '0xA0b8…eB48', value: '0', data: '0xa9059cbb…' }
 */
export function encodeTransfer({ token, to, amount }: { token: Address; to: Address; amount: bigint }): Call {
  return { to: token, value: '0', data: `${TRANSFER}${addressWord(to)}${uint256Word(amount)}` }
}

function addressWord(address: Address): string {
  if (!ADDRESS.test(address)) throw new TypeError(`not an address: ${address}`)
  return `000000000000000000000000${address.slice(2).toLowerCase()}`
}

function uint256Word(value: bigint): string {
  if (value < 0n || value > maxUint256) throw new RangeError(`${value} is not a uint256`)
  return value.toString(16).padStart(64, '0')
}
