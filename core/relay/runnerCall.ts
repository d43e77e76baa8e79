import { encodeFunctionData, getAddress, parseSignature, type Address, type Hex } from 'viem'
import { runnerAbi } from '../../contracts/abi.ts'
import type { Payment, RelayCall } from './schemas.ts'

/** What the Runner contract is asked to check: the payee's balance of `token` rises by `amount`. */
export interface Settlement {
  readonly token: Address
  readonly payee: Address
  readonly amount: bigint
}

/** The amount a payment promises: the call payment's `amount`, or the signed transfer's `value`. */
export function paymentAmount(payment: Payment): bigint {
  return 'authorization' in payment ? BigInt(payment.authorization.value) : BigInt(payment.amount)
}

/**
 * The runner transaction's calldata for a call and its payment: `relay` when the call pays,
 * `relayWithAuthorization` when a signed EIP-3009 transfer does.
 *
 * @example
 * encodeRunnerCall({ to: account, data: executeCalldata }, { token: usdc, amount: '150000' }, payee)
 */
export function encodeRunnerCall(call: RelayCall, payment: Payment, payee: Address, amount: bigint = paymentAmount(payment)): Hex {
  const token = getAddress(payment.token)
  if (!('authorization' in payment)) {
    return encodeFunctionData({ abi: runnerAbi, functionName: 'relay', args: [getAddress(call.to), call.data as Hex, token, payee, amount] })
  }
  const { authorization } = payment
  const { r, s, v, yParity } = parseSignature(payment.signature as Hex)
  return encodeFunctionData({
    abi: runnerAbi,
    functionName: 'relayWithAuthorization',
    args: [
      getAddress(call.to),
      call.data as Hex,
      token,
      payee,
      amount,
      {
        from: getAddress(authorization.from),
        value: BigInt(authorization.value),
        validAfter: BigInt(authorization.validAfter),
        validBefore: BigInt(authorization.validBefore),
        nonce: authorization.nonce as Hex,
        v: Number(v ?? BigInt(yParity + 27)),
        r,
        s,
      },
    ],
  })
}
