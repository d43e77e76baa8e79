import { encodeAbiParameters, encodeFunctionData, recoverTypedDataAddress, size, type Address, type Hex } from 'viem'
import { ToolError } from '../../core/plugin.ts'
import { caliburAbi } from './abi.ts'
import { uint256Of, type CaliburBatch, type CaliburTypedData, type SignedBatchedCallMessage } from './typedData.ts'

/**
 * Calibur's `wrappedSignature`: `abi.encode(bytes signature, bytes hookData)`. A bare signature
 * in its place reverts with `SliceOutOfBounds()`.
 *
 * @example
 * wrapCaliburSignature('0x46f8…551c') // '0x0000…0040 0000…00c0 0000…0041 46f8…551c 00…' (hookData empty)
 */
export function wrapCaliburSignature(signature: Hex, hookData: Hex = '0x'): Hex {
  // Calibur reads r and s from the first 64 bytes; anything shorter can never verify.
  if (size(signature) < 64) throw new ToolError(`the signature is ${size(signature)} bytes; Calibur needs at least 64`)
  return encodeAbiParameters([{ type: 'bytes' }, { type: 'bytes' }], [signature, hookData])
}

/**
 * Calldata of Calibur's signed `execute(SignedBatchedCall, bytes wrappedSignature)`
 * (`0xc3c16ee4`), to be sent to the account by anyone (or by `executor` when it is set).
 *
 * @example
 * encodeSignedExecute({ message: typedData.message, signature: '0x46f8…551c' })
 * // '0xc3c16ee4…'
 */
export function encodeSignedExecute({
  message,
  signature,
  hookData = '0x',
}: {
  message: SignedBatchedCallMessage
  signature: Hex
  hookData?: Hex
}): Hex {
  return encodeFunctionData({
    abi: caliburAbi,
    functionName: 'execute',
    args: [
      {
        batchedCall: batchArgument(message.batchedCall),
        nonce: BigInt(uint256Of(message.nonce, 'nonce')),
        keyHash: message.keyHash,
        executor: message.executor,
        deadline: BigInt(uint256Of(message.deadline, 'deadline')),
      },
      wrapCaliburSignature(signature, hookData),
    ],
  })
}

/**
 * Calldata of Calibur's owner `execute(BatchedCall)` (`0x99e1d016`). Only the account itself may
 * call it, so Bruno only simulates it (from = to = the account) to measure a batch before it is
 * signed. It undercounts the signed path (~22k gas, ~39k on a nonce key's first use).
 *
 * @example
 * await client.estimateGas({ account, to: account, data: encodeOwnerExecute(typedData.message.batchedCall) })
 */
export function encodeOwnerExecute(batch: CaliburBatch): Hex {
  return encodeFunctionData({ abi: caliburAbi, functionName: 'execute', args: [batchArgument(batch)] })
}

/**
 * The address whose key produced `signature` over `typedData`: for a root-key batch it must be
 * the account (`typedData.domain.verifyingContract`), or Calibur refuses it with
 * `InvalidSignature()`. Throws when the signature is not a recoverable secp256k1 signature.
 *
 * @example
 * await recoverCaliburSigner(typedData, '0x46f8…551c') // '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'
 */
export async function recoverCaliburSigner(typedData: CaliburTypedData, signature: Hex): Promise<Address> {
  return recoverTypedDataAddress({ ...typedData, signature })
}

function batchArgument(batch: CaliburBatch) {
  return {
    calls: batch.calls.map((call, index) => ({
      to: call.to,
      value: BigInt(uint256Of(call.value, `calls[${index}].value`)),
      data: call.data,
    })),
    revertOnFailure: batch.revertOnFailure,
  }
}
