import { decodeFunctionData, erc20Abi, getAddress, isAddressEqual, type Address, type Hex } from 'viem'
import type { Network } from '../chain/networks.ts'
import type { PaymentServices } from '../services.ts'

/** What a delegate batch's payment leg pays the payee. */
export interface PaymentTerms {
  readonly token: Address
  readonly symbol: string
  readonly decimals: number
  readonly amount: bigint
}

/**
 * Reads the one call of a payment-only batch, as every delegate group signs it: `token.transfer(payee,
 * amount)` in an accepted payment token, no ETH, a nonzero amount. Returns what it pays, or why it
 * is not that call (the group says it in its own refusal, naming its batch tool).
 *
 * @example
 * readPaymentLeg(network, payments, { to: usdc, value: 0n, data: encodeTransfer(…).data }) // { token: usdc, symbol: 'USDC', decimals: 6, amount: 150000n }
 * readPaymentLeg(network, payments, { to: usdc, value: 1n, data }) // 'its call sends ETH'
 */
export function readPaymentLeg(network: Network, payments: Pick<PaymentServices, 'token'>, leg: { readonly to: string; readonly value: bigint | string; readonly data: Hex }): PaymentTerms | string {
  const payee = getAddress(network.config.payee)
  let token
  try {
    token = payments.token(network.name, getAddress(leg.to))
  } catch {
    return `its call goes to ${leg.to}, not an accepted payment token`
  }
  if (BigInt(leg.value) !== 0n) return 'its call sends ETH'
  let transfer
  try {
    transfer = decodeFunctionData({ abi: erc20Abi, data: leg.data })
  } catch {
    transfer = undefined
  }
  if (!transfer || transfer.functionName !== 'transfer') return 'its call is not token.transfer(payee, amount)'
  const [to, amount] = transfer.args
  if (!isAddressEqual(to, payee)) return `it pays ${to}, not the payee`
  if (amount === 0n) return 'it pays nothing'
  return { token: token.address, symbol: token.symbol, decimals: token.decimals, amount }
}
