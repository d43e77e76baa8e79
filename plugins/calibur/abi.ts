import { eip712DomainAbi } from '../../core/plugin.ts'

/**
 * What Bruno calls on a Calibur-delegated account, and the errors its reverts carry.
 *
 * `execute` is overloaded: the signed form (`0xc3c16ee4`) is what the runner sends, the owner
 * form (`0x99e1d016`) is only simulated (from = to = the account) to measure a batch. viem picks
 * the overload from the arguments. The ERC-7821 `execute(bytes32,bytes)` is left out: Bruno
 * never sends it.
 *
 * @example
 * decodeErrorResult({ abi: caliburAbi, data: '0x756688fe' }) // { errorName: 'InvalidNonce', args: undefined, … }
 */
export const caliburAbi = [
  {
    type: 'function',
    name: 'execute',
    stateMutability: 'payable',
    inputs: [
      {
        name: 'signedBatchedCall',
        type: 'tuple',
        components: [
          {
            name: 'batchedCall',
            type: 'tuple',
            components: [
              {
                name: 'calls',
                type: 'tuple[]',
                components: [
                  { name: 'to', type: 'address' },
                  { name: 'value', type: 'uint256' },
                  { name: 'data', type: 'bytes' },
                ],
              },
              { name: 'revertOnFailure', type: 'bool' },
            ],
          },
          { name: 'nonce', type: 'uint256' },
          { name: 'keyHash', type: 'bytes32' },
          { name: 'executor', type: 'address' },
          { name: 'deadline', type: 'uint256' },
        ],
      },
      { name: 'wrappedSignature', type: 'bytes' },
    ],
    outputs: [],
  },
  {
    type: 'function',
    name: 'execute',
    stateMutability: 'payable',
    inputs: [
      {
        name: 'batchedCall',
        type: 'tuple',
        components: [
          {
            name: 'calls',
            type: 'tuple[]',
            components: [
              { name: 'to', type: 'address' },
              { name: 'value', type: 'uint256' },
              { name: 'data', type: 'bytes' },
            ],
          },
          { name: 'revertOnFailure', type: 'bool' },
        ],
      },
    ],
    outputs: [],
  },
  {
    type: 'function',
    name: 'getSeq',
    stateMutability: 'view',
    inputs: [{ name: 'key', type: 'uint256' }],
    outputs: [{ name: 'seq', type: 'uint256' }],
  },
  // ERC-5267. On a delegated account it answers with the account as verifyingContract.
  ...eip712DomainAbi,
  // The signed path checks deadline, then nonce, then signature (DESIGN §4).
  { type: 'error', name: 'SignatureExpired', inputs: [] },
  { type: 'error', name: 'InvalidNonce', inputs: [] },
  { type: 'error', name: 'InvalidSignature', inputs: [] },
  // The signed path sent by someone other than a non-zero executor, or the owner path called by
  // anyone but the account itself.
  { type: 'error', name: 'Unauthorized', inputs: [] },
  // A call of a batch with revertOnFailure reverted; `reason` is that call's revert data.
  { type: 'error', name: 'CallFailed', inputs: [{ name: 'reason', type: 'bytes' }] },
  // A wrappedSignature that is not abi.encode(bytes signature, bytes hookData).
  { type: 'error', name: 'SliceOutOfBounds', inputs: [] },
  { type: 'error', name: 'InvalidSignatureLength', inputs: [] },
  // A keyHash the account has not registered, or whose key has expired.
  { type: 'error', name: 'KeyDoesNotExist', inputs: [] },
  { type: 'error', name: 'KeyExpired', inputs: [{ name: 'expiration', type: 'uint40' }] },
  { type: 'error', name: 'InvalidHookResponse', inputs: [] },
  { type: 'error', name: 'TransferNativeFailed', inputs: [] },
  { type: 'error', name: 'AllowanceExceeded', inputs: [] },
  { type: 'error', name: 'ExcessiveInvalidation', inputs: [] },
  { type: 'error', name: 'CannotRegisterRootKey', inputs: [] },
  { type: 'error', name: 'CannotUpdateRootKey', inputs: [] },
  { type: 'error', name: 'OnlyAdminCanSelfCall', inputs: [] },
  { type: 'error', name: 'FnSelectorNotRecognized', inputs: [] },
  { type: 'error', name: 'IncorrectSender', inputs: [] },
  { type: 'error', name: 'IndexOutOfBounds', inputs: [] },
  { type: 'error', name: 'NotEntryPoint', inputs: [] },
  { type: 'error', name: 'UnsupportedExecutionMode', inputs: [] },
] as const
