import { decodeFunctionData, encodeFunctionData, getAddress, hexToBigInt, numberToHex, parseAbi, size, slice, type Address, type Hex } from 'viem'

/** ERC-4337's EntryPoint v0.8, at the address `Simple7702Account` hard-codes (and every chain has it at). */
export const ENTRY_POINT = getAddress('0x4337084D9E255Ff0702461CF8895CE9E3b5Ff108')

/** The EntryPoint's parts this group uses, transcribed from `@account-abstraction/contracts` 0.8.0. */
export const entryPointAbi = parseAbi([
  'struct PackedUserOperation { address sender; uint256 nonce; bytes initCode; bytes callData; bytes32 accountGasLimits; uint256 preVerificationGas; bytes32 gasFees; bytes paymasterAndData; bytes signature; }',
  'function handleOps(PackedUserOperation[] ops, address beneficiary)',
  'function getNonce(address sender, uint192 key) view returns (uint256 nonce)',
  'function getUserOpHash(PackedUserOperation userOp) view returns (bytes32)',
  'event UserOperationEvent(bytes32 indexed userOpHash, address indexed sender, address indexed paymaster, uint256 nonce, bool success, uint256 actualGasCost, uint256 actualGasUsed)',
  'event UserOperationRevertReason(bytes32 indexed userOpHash, address indexed sender, uint256 nonce, bytes revertReason)',
  'error FailedOp(uint256 opIndex, string reason)',
  'error FailedOpWithRevert(uint256 opIndex, string reason, bytes inner)',
])

/** `Simple7702Account`'s batch: what a UserOperation's `callData` runs on the account. */
export const simple7702Abi = parseAbi([
  'struct Call { address target; uint256 value; bytes data; }',
  'function executeBatch(Call[] calls)',
  'function entryPoint() view returns (address)',
  'error ExecuteError(uint256 index, bytes reason)',
])

/** One call of a batch. */
export interface Call {
  readonly target: Address
  readonly value: bigint
  readonly data: Hex
}

/** A v0.8 UserOperation with its gas fields unpacked. Bruno's always pay no gas fee (the payment leg pays Bruno). */
export interface UserOperation {
  readonly sender: Address
  readonly nonce: bigint
  readonly callData: Hex
  readonly verificationGasLimit: bigint
  readonly callGasLimit: bigint
  readonly preVerificationGas: bigint
  readonly maxPriorityFeePerGas: bigint
  readonly maxFeePerGas: bigint
  readonly initCode: Hex
  readonly paymasterAndData: Hex
  readonly signature: Hex
}

const packed = (high: bigint, low: bigint): Hex => numberToHex((high << 128n) | low, { size: 32 })

/** The operation as the EntryPoint takes it (`accountGasLimits`, `gasFees` packed, 128 bits each). */
export function packUserOperation(op: UserOperation) {
  return {
    sender: op.sender,
    nonce: op.nonce,
    initCode: op.initCode,
    callData: op.callData,
    accountGasLimits: packed(op.verificationGasLimit, op.callGasLimit),
    preVerificationGas: op.preVerificationGas,
    gasFees: packed(op.maxPriorityFeePerGas, op.maxFeePerGas),
    paymasterAndData: op.paymasterAndData,
    signature: op.signature,
  }
}

type Packed = ReturnType<typeof packUserOperation>

function unpack(op: Packed): UserOperation {
  const high = (word: Hex) => hexToBigInt(slice(word, 0, 16))
  const low = (word: Hex) => hexToBigInt(slice(word, 16, 32))
  return {
    sender: getAddress(op.sender),
    nonce: op.nonce,
    callData: op.callData,
    verificationGasLimit: high(op.accountGasLimits),
    callGasLimit: low(op.accountGasLimits),
    preVerificationGas: op.preVerificationGas,
    maxPriorityFeePerGas: high(op.gasFees),
    maxFeePerGas: low(op.gasFees),
    initCode: op.initCode,
    paymasterAndData: op.paymasterAndData,
    signature: op.signature,
  }
}

/** The EIP-712 types of a v0.8 UserOperation: its hash is what the account signs. */
export const userOperationTypes = {
  PackedUserOperation: [
    { name: 'sender', type: 'address' },
    { name: 'nonce', type: 'uint256' },
    { name: 'initCode', type: 'bytes' },
    { name: 'callData', type: 'bytes' },
    { name: 'accountGasLimits', type: 'bytes32' },
    { name: 'preVerificationGas', type: 'uint256' },
    { name: 'gasFees', type: 'bytes32' },
    { name: 'paymasterAndData', type: 'bytes' },
  ],
} as const

/**
 * The typed data an account signs for `op` on `chainId`: v0.8's userOpHash is EIP-712, domain
 * `ERC4337` version `1` at the EntryPoint. Numbers as decimal strings, for JSON and wallets.
 */
export function userOperationTypedData(chainId: number, op: UserOperation) {
  const { signature: _signature, ...fields } = packUserOperation(op)
  return {
    domain: { name: 'ERC4337', version: '1', chainId, verifyingContract: ENTRY_POINT },
    types: userOperationTypes,
    primaryType: 'PackedUserOperation' as const,
    message: { ...fields, nonce: fields.nonce.toString(), preVerificationGas: fields.preVerificationGas.toString() },
  }
}

/** `handleOps([op], beneficiary)`: what the Runner sends the EntryPoint for one signed operation. */
export function encodeHandleOps(op: UserOperation, beneficiary: Address): Hex {
  return encodeFunctionData({ abi: entryPointAbi, functionName: 'handleOps', args: [[packUserOperation(op)], beneficiary] })
}

/** `handleOps` calldata read back: its one operation and beneficiary; `undefined` when it is not that. */
export function readHandleOps(data: Hex): { op: UserOperation; beneficiary: Address } | string | undefined {
  let decoded
  try {
    decoded = decodeFunctionData({ abi: entryPointAbi, data })
  } catch {
    return undefined
  }
  if (decoded.functionName !== 'handleOps') return undefined
  const [ops, beneficiary] = decoded.args
  if (ops.length !== 1) return `it carries ${ops.length} operations, not 1`
  return { op: unpack(ops[0]!), beneficiary: getAddress(beneficiary) }
}

/** `executeBatch(calls)`: a UserOperation's callData. */
export function encodeExecuteBatch(calls: readonly Call[]): Hex {
  return encodeFunctionData({ abi: simple7702Abi, functionName: 'executeBatch', args: [calls] })
}

/** The calls of an `executeBatch`, or `undefined`. */
export function readExecuteBatch(data: Hex): readonly Call[] | undefined {
  try {
    const decoded = decodeFunctionData({ abi: simple7702Abi, data })
    return decoded.functionName === 'executeBatch' ? (decoded.args?.[0] as readonly Call[] | undefined) : undefined
  } catch {
    return undefined
  }
}

/** A nonce's 192-bit key and 64-bit sequence. */
export const nonceParts = (nonce: bigint) => ({ key: nonce >> 64n, seq: nonce & ((1n << 64n) - 1n) })

export const isEmpty = (data: Hex) => size(data) === 0
