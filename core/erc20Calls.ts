import { encodeFunctionData, erc20Abi, prepareEncodeFunctionData, type Address } from 'viem'
import type { Call } from './schemas.ts'

// The ERC-20 calls more than one group makes (the erc20 encoders, a Calibur batch's approvals and
// payment leg). Selectors are computed once, not hashed again on every call.
const approveFunction = prepareEncodeFunctionData({ abi: erc20Abi, functionName: 'approve' })
const transferFunction = prepareEncodeFunctionData({ abi: erc20Abi, functionName: 'transfer' })

/**
 * The call `approve(spender, amount)` on `token`: the account lets `spender` move up to `amount`
 * (base units) of its tokens.
 *
 * @example
 * encodeApprove({ token: '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48', spender: '0x68b3465833fb72A70ecDF485E0e4C7bD8665Fc45', amount: 12_500_000n })
 * // { to: '0xA0b8…eB48', value: '0', data: '0x095ea7b3…' }
 */
export function encodeApprove({ token, spender, amount }: { token: Address; spender: Address; amount: bigint }): Call {
  return { to: token, value: '0', data: encodeFunctionData({ ...approveFunction, args: [spender, amount] }) }
}

/**
 * The call `transfer(to, amount)` on `token`: the account sends `amount` (base units) of its tokens.
 *
 * @example
 * encodeTransfer({ token: '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48', to: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8', amount: 1_000_000n })
 * // { to: '0xA0b8…eB48', value: '0', data: '0xa9059cbb…' }
 */
export function encodeTransfer({ token, to, amount }: { token: Address; to: Address; amount: bigint }): Call {
  return { to: token, value: '0', data: encodeFunctionData({ ...transferFunction, args: [to, amount] }) }
}
