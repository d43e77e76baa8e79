import { decodeFunctionData, getAddress, toFunctionSelector, type Address, type Hex } from 'viem'
import { transferWithAuthorizationTypes } from './transferWithAuthorizationTypes.ts'

// The signed message's fields are the call's first arguments, in the typed data's order.
const AUTHORIZATION_FIELDS = transferWithAuthorizationTypes.TransferWithAuthorization

const VRS_SIGNATURE = [...AUTHORIZATION_FIELDS, { name: 'v', type: 'uint8' }, { name: 'r', type: 'bytes32' }, { name: 's', type: 'bytes32' }] as const
const BYTES_SIGNATURE = [...AUTHORIZATION_FIELDS, { name: 'signature', type: 'bytes' }] as const

/** EIP-3009's `transferWithAuthorization`, its `(v, r, s)` form: the one the Runner makes and transfer_authorization_call encodes. */
export const transferWithAuthorizationAbi = [
  {
    type: 'function',
    name: 'transferWithAuthorization',
    stateMutability: 'nonpayable',
    inputs: VRS_SIGNATURE,
    outputs: [],
  },
] as const

// Every signed transfer a call can make on an EIP-3009 token: transfer and receive, each with
// (v, r, s) or a bytes signature (FiatToken v2.2). Each expires at its own validBefore.
const signedTransferAbi = [
  ...transferWithAuthorizationAbi,
  { type: 'function', name: 'transferWithAuthorization', stateMutability: 'nonpayable', inputs: BYTES_SIGNATURE, outputs: [] },
  { type: 'function', name: 'receiveWithAuthorization', stateMutability: 'nonpayable', inputs: VRS_SIGNATURE, outputs: [] },
  { type: 'function', name: 'receiveWithAuthorization', stateMutability: 'nonpayable', inputs: BYTES_SIGNATURE, outputs: [] },
] as const

// Checked before decoding: most calls are none of these, and the selector alone says so.
const SELECTORS = new Set(signedTransferAbi.map((item) => toFunctionSelector(item)))

/** A signed EIP-3009 transfer a call makes on a token: who sends, to whom, and until when it is valid. */
export interface SignedTransferCall {
  readonly token: Address
  readonly from: Address
  readonly to: Address
  readonly value: bigint
  readonly validBefore: bigint
  readonly nonce: Hex
}

/**
 * The signed EIP-3009 transfer (`transferWithAuthorization` or `receiveWithAuthorization`) a call
 * makes on one of `tokens`, or `undefined` for any other call: another function, another contract,
 * or calldata that does not decode (the token would revert it).
 *
 * @example
 * signedTransferOfCall({ to: usdc, data: '0xe3ee160e…' }, [usdc]) // { token: usdc, from, to, value: 2000000n, validBefore: 1767225600n, nonce }
 */
export function signedTransferOfCall(call: { readonly to: string; readonly data: string }, tokens: readonly Address[]): SignedTransferCall | undefined {
  if (!SELECTORS.has(call.data.slice(0, 10).toLowerCase() as Hex)) return undefined
  const token = getAddress(call.to)
  if (!tokens.some((candidate) => getAddress(candidate) === token)) return undefined
  let args: readonly unknown[]
  try {
    args = decodeFunctionData({ abi: signedTransferAbi, data: call.data as Hex }).args
  } catch {
    return undefined
  }
  const [from, to, value, , validBefore, nonce] = args as [Address, Address, bigint, bigint, bigint, Hex]
  return { token, from, to, value, validBefore, nonce }
}
