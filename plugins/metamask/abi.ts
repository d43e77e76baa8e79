import { parseAbi } from 'viem'

/**
 * The parts of MetaMask's delegation framework v1.3.0 this group calls, `as const` for viem's
 * inference. Transcribed from `@metamask/delegation-abis` (test/unit/metamask-abi.test.ts checks
 * every item against it), so a production install carries neither its 10 MB nor its bytecode.
 *
 * @example
 * encodeFunctionData({ abi: delegationManagerAbi, functionName: 'redeemDelegations', args: [[context], [BATCH_MODE], [executions]] })
 */
export const delegationManagerAbi = parseAbi([
  'function redeemDelegations(bytes[] _permissionContexts, bytes32[] _modes, bytes[] _executionCallDatas)',
  'function disabledDelegations(bytes32 delegationHash) view returns (bool isDisabled)',
  'function eip712Domain() view returns (bytes1 fields, string name, string version, uint256 chainId, address verifyingContract, bytes32 salt, uint256[] extensions)',
  'error CannotUseADisabledDelegation()',
  'error InvalidAuthority()',
  'error InvalidDelegate()',
  'error InvalidDelegator()',
  'error InvalidEOASignature()',
  'error InvalidERC1271Signature()',
  'error EmptySignature()',
  'error BatchDataLengthMismatch()',
  'error EnforcedPause()',
])

/** The EIP-7702 delegator (`EIP7702StatelessDeleGator`): the account's own batch, and the manager it obeys. */
export const delegatorAbi = parseAbi([
  'function execute(bytes32 _mode, bytes _executionCalldata) payable',
  'function delegationManager() view returns (address)',
  'error ExecutionFailed()',
  'error NotDelegationManager()',
  'error NotEntryPointOrSelf()',
  'error UnsupportedCallType(bytes1)',
  'error UnsupportedExecType(bytes1)',
])
