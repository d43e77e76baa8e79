import { Type } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import {
  decodeFunctionData,
  encodeAbiParameters,
  encodeErrorResult,
  encodeFunctionData,
  encodeFunctionResult,
  getAddress,
  isAddressEqual,
  parseAbi,
  toFunctionSelector,
  toHex,
  zeroAddress,
  type Address,
  type Hex,
} from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import type { Networks } from '../../core/chain/networks.ts'
import { poolAddress } from '../../core/chain/tokenPrice.ts'
import type { NetworkConfig } from '../../config/schema.ts'
import { ToolRegistry } from '../../core/registry.ts'
import type { RelayService } from '../../core/relayService.ts'
import { createServices, type BrunoServices } from '../../core/services.ts'
import { caliburGroup } from '../../plugins/calibur/index.ts'
import { fakeClient, fakeNetwork, networkConfig, type SeenRequest } from './fakeChain.ts'
import { CALIBUR_ADDRESS } from '../../plugins/calibur/networkOptions.ts'

// Calibur's tools (plugins/calibur) run as Bruno runs them: the plugin's setup on the services core
// builds (createServices), registered in a ToolRegistry, arguments checked by the registry's compiled
// input schema, the handler called with the services. Only the node is fake: it answers as an
// account delegated to Calibur would (ABIs written here from the Solidity signatures), a Uniswap
// pool at a price of 1 wei per base unit, and the fees the test sets. Not a test file itself.

export const Q96 = 1n << 96n

/** Anvil's default account #1, the signer of golden/calibur-vectors.json. */
export const signer = privateKeyToAccount('0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d')
export const account = signer.address
export const salt = '0x0000000000000000000000005fbdb2315678afecb367f032d93f642f64180aa3' as Hex

export const caliburSolidity = parseAbi([
  'struct Call { address to; uint256 value; bytes data; }',
  'struct BatchedCall { Call[] calls; bool revertOnFailure; }',
  'struct SignedBatchedCall { BatchedCall batchedCall; uint256 nonce; bytes32 keyHash; address executor; uint256 deadline; }',
  'function execute(BatchedCall batchedCall)',
  'function execute(SignedBatchedCall signedBatchedCall, bytes wrappedSignature)',
  'function getSeq(uint256 key) view returns (uint256 seq)',
  'function eip712Domain() view returns (bytes1 fields, string name, string version, uint256 chainId, address verifyingContract, bytes32 salt, uint256[] extensions)',
])
export const erc20Solidity = parseAbi([
  'function allowance(address owner, address spender) view returns (uint256)',
  'function transfer(address to, uint256 amount) returns (bool)',
  'function approve(address spender, uint256 amount) returns (bool)',
])
export const runnerSolidity = parseAbi([
  'struct Charge { uint256 baseGas; uint256 floorGas; uint256 l1FeeWei; uint256 unitsPerEther; uint256 markupBps; uint256 refundGas; }',
  'function relayBatch(address account, address delegate, (address target, bytes payment, uint256 paymentGas, bytes data) batches, uint256 callGas, address token, address payee, uint256 amount, Charge charge) returns (bool callSucceeded, uint256 callGasUsed, bytes reason, uint256 refundGasUsed)',
])
const poolSolidity = parseAbi([
  'function slot0() view returns (uint160 sqrtPriceX96, int24 tick, uint16 observationIndex, uint16 observationCardinality, uint16 observationCardinalityNext, uint8 feeProtocol, bool unlocked)',
  'function observe(uint32[] secondsAgos) view returns (int56[] tickCumulatives, uint160[] secondsPerLiquidityCumulativeX128s)',
])
const oracleSolidity = parseAbi(['function getL1Fee(bytes _data) view returns (uint256)'])

/** The code of an account delegated to `delegate` (EIP-7702). */
export const delegatedTo = (delegate: string): Hex => `0xef0100${delegate.slice(2).toLowerCase()}`

/** A node error carrying revert data, as a node answers a reverting eth_call or eth_estimateGas. */
export function reverted(data: Hex): Error {
  return Object.assign(new Error('execution reverted'), { code: 3, data })
}
export const errorString = (reason: string): Hex => encodeErrorResult({ abi: parseAbi(['error Error(string)']), errorName: 'Error', args: [reason] })

export type DomainAnswer = readonly [Hex, string, string, bigint, Address, Hex, readonly bigint[]]

export interface NodeOptions {
  /** Each address's code (default: `account` delegated to the network's Calibur). */
  code?: Record<string, Hex>
  /** The account's EOA nonce (eth_getTransactionCount). */
  eoaNonce?: number
  /** What the account's eip712Domain() answers once delegated to Calibur. */
  domain?: DomainAnswer
  /** The next seq of each nonce key. */
  seq?: (key: bigint) => bigint
  /** The allowance of owner to spender on a token. */
  allowance?: (token: Address, owner: Address, spender: Address) => bigint
  baseFee?: bigint
  tip?: bigint
  /** eth_estimateGas's answer for the owner-path call (or throws). */
  estimate?: (call: { from: Address; to: Address; data: Hex }) => bigint
  /** The OP-stack oracle's getL1Fee answer. */
  l1Fee?: bigint
}

export interface CaliburNode {
  config: NetworkConfig
  seen: SeenRequest[]
  /** Every eth_call decoded: [to, functionName, args, stateOverride]. */
  calls: { to: Address; functionName: string; args: readonly unknown[]; stateOverride: unknown }[]
  services: BrunoServices
  /** Calls a tool as the dispatcher does: the registry's input check, then the handler. */
  call(tool: 'calibur_batch' | 'calibur_execute', args: Record<string, unknown>): Promise<Record<string, unknown>>
  /** Whether the tool's input schema accepts `args`. */
  accepts(tool: 'calibur_batch' | 'calibur_execute', args: Record<string, unknown>): boolean
  /** Whether the tool's output schema accepts `result`. */
  validOutput(tool: 'calibur_batch' | 'calibur_execute', result: unknown): boolean
  registry: ToolRegistry
}

const overrideCode = (override: unknown, address: string): Hex | undefined => {
  if (!override || typeof override !== 'object') return undefined
  const entry = Object.entries(override).find(([key]) => key.toLowerCase() === address.toLowerCase())
  return (entry?.[1] as { code?: Hex } | undefined)?.code
}

export function caliburNode(options: NodeOptions = {}, configOverrides: Partial<NetworkConfig> = {}): CaliburNode {
  const config = networkConfig(configOverrides)
  const calibur = getAddress(CALIBUR_ADDRESS)
  const usdc = getAddress(config.tokens[0]!.address)
  const weth = getAddress(config.weth)
  const pool = poolAddress(getAddress(config.uniswap.factory), usdc, weth, 500)
  const code = { [account.toLowerCase()]: delegatedTo(calibur), ...Object.fromEntries(Object.entries(options.code ?? {}).map(([address, value]) => [address.toLowerCase(), value])) }
  const codeOf = (address: string, override?: unknown): Hex => overrideCode(override, address) ?? code[address.toLowerCase()] ?? '0x'
  const calls: CaliburNode['calls'] = []
  const { client, seen } = fakeClient({
    eth_chainId: () => toHex(config.chainId),
    eth_getCode: ({ params }) => codeOf(params[0] as string),
    eth_getTransactionCount: () => toHex(options.eoaNonce ?? 0),
    eth_maxPriorityFeePerGas: () => toHex(options.tip ?? 1n),
    eth_getBlockByNumber: () => ({ number: '0x10', hash: `0x${'ab'.repeat(32)}`, timestamp: '0x3e8', transactions: [], baseFeePerGas: toHex(options.baseFee ?? 10n) }),
    eth_estimateGas: ({ params }) => {
      const call = params[0] as { from: Address; to: Address; data: Hex }
      return toHex(options.estimate ? options.estimate(call) : 100_000n)
    },
    eth_call: ({ params }) => {
      const { to, data } = params[0] as { to: Address; data: Hex }
      const stateOverride = params[2]
      if (to.toLowerCase() === pool.toLowerCase()) {
        const decoded = decodeFunctionData({ abi: poolSolidity, data })
        calls.push({ to, functionName: decoded.functionName, args: [], stateOverride })
        if (decoded.functionName === 'slot0') return encodeFunctionResult({ abi: poolSolidity, functionName: 'slot0', result: [Q96, 0, 0, 1, 1, 0, true] })
        // A flat price: every point asked has the same cumulative.
        const points = (decoded.args?.[0] ?? []) as readonly number[]
        return encodeFunctionResult({ abi: poolSolidity, functionName: 'observe', result: [points.map(() => 0n), points.map(() => 0n)] })
      }
      if (to.toLowerCase() === '0x420000000000000000000000000000000000000f') {
        const { functionName, args } = decodeFunctionData({ abi: oracleSolidity, data })
        calls.push({ to, functionName, args, stateOverride })
        return encodeFunctionResult({ abi: oracleSolidity, functionName, result: options.l1Fee ?? 0n })
      }
      if (config.tokens.some((token) => token.address.toLowerCase() === to.toLowerCase()) || to.toLowerCase() === '0x00000000000000000000000000000000000070cc') {
        const { functionName, args } = decodeFunctionData({ abi: erc20Solidity, data })
        calls.push({ to, functionName, args, stateOverride })
        const [owner, spender] = args as [Address, Address]
        return encodeFunctionResult({ abi: erc20Solidity, functionName: 'allowance', result: options.allowance ? options.allowance(getAddress(to), owner, spender) : 0n })
      }
      // An account: it answers Calibur's functions only while delegated to Calibur (its code, or the call's state override).
      const { functionName, args = [] } = decodeFunctionData({ abi: caliburSolidity, data })
      calls.push({ to, functionName, args, stateOverride })
      const current = codeOf(to, stateOverride)
      if (current === '0x') return '0x'
      if (current.toLowerCase() !== delegatedTo(calibur)) throw reverted('0x')
      if (functionName === 'getSeq') return encodeFunctionResult({ abi: caliburSolidity, functionName, result: options.seq ? options.seq(args[0] as bigint) : 0n })
      if (functionName === 'eip712Domain') {
        return encodeFunctionResult({ abi: caliburSolidity, functionName, result: options.domain ?? ['0x1f', 'Calibur', '1.0.0', BigInt(config.chainId), getAddress(to), salt, []] })
      }
      // A signed batch sent by someone else than its executor: Calibur's Unauthorized (what submit's pin check asks).
      if (functionName === 'execute' && args.length === 2) {
        const { executor } = args[0] as { executor: Address }
        const from = (params[0] as { from?: Address }).from
        if (executor !== zeroAddress && (!from || !isAddressEqual(executor, from))) throw reverted(toFunctionSelector('Unauthorized()'))
        return '0x'
      }
      throw new Error(`the fake account does not answer ${functionName}`)
    },
  })
  const network = fakeNetwork(client, config)
  const networks = { names: [network.name], get: (name: string) => {
    if (name !== network.name) throw new Error(`unknown chain "${name}"`)
    return network
  } } as unknown as Networks
  // The payee here is an account: it keeps payments (the relay's only read of the relay service).
  const services = createServices(networks, { payeeRefunds: async () => false } as unknown as RelayService, Type.Union([Type.Literal(network.name)]))
  const registry = new ToolRegistry()
  const contribution = caliburGroup.setup(services, {}, () => ({ address: CALIBUR_ADDRESS })) as Awaited<ReturnType<typeof caliburGroup.setup>>
  registry.addGroup({ name: caliburGroup.name, order: caliburGroup.order, ...contribution })
  const view = registry.view([caliburGroup.name])!
  const outputChecks = new Map<string, ReturnType<typeof TypeCompiler.Compile>>()
  return {
    config,
    seen,
    calls,
    services,
    registry,
    accepts: (tool, args) => view.tools.get(tool)!.check.Check(args),
    validOutput: (tool, result) => {
      const definition = view.tools.get(tool)!.definition
      if (!outputChecks.has(tool)) outputChecks.set(tool, TypeCompiler.Compile(definition.output))
      return outputChecks.get(tool)!.Check(result)
    },
    async call(tool, args) {
      const registered = view.tools.get(tool)!
      if (!registered.check.Check(args)) throw new Error(`invalid arguments: ${[...registered.check.Errors(args)].map((error) => `${error.path} ${error.message}`).join('; ')}`)
      return (await registered.definition.handler(args, services)) as Record<string, unknown>
    },
  }
}

/** Calldata's intrinsic gas, by hand: 4 per zero byte, 16 per other. */
export function intrinsicOf(data: Hex): bigint {
  let gas = 0n
  for (let index = 2; index < data.length; index += 2) gas += data.slice(index, index + 2) === '00' ? 4n : 16n
  return gas
}

/** The owner-path execute(BatchedCall) calldata, from Calibur's Solidity signature. */
export function ownerExecute(calls: readonly { to: string; value: string | bigint; data: string }[], revertOnFailure = true): Hex {
  return encodeFunctionData({
    abi: caliburSolidity,
    functionName: 'execute',
    args: [{ calls: calls.map((call) => ({ to: getAddress(call.to), value: BigInt(call.value), data: call.data as Hex })), revertOnFailure }],
  })
}

/** The signed execute(SignedBatchedCall, wrappedSignature) calldata: the signature wrapped as abi.encode(signature, hookData = ''). */
export function signedExecute(message: { batchedCall: { calls: readonly { to: string; value: string; data: string }[]; revertOnFailure: boolean }; nonce: string; keyHash: string; executor: string; deadline: string }, signature: Hex): Hex {
  return encodeFunctionData({
    abi: caliburSolidity,
    functionName: 'execute',
    args: [
      {
        batchedCall: { calls: message.batchedCall.calls.map((call) => ({ to: getAddress(call.to), value: BigInt(call.value), data: call.data as Hex })), revertOnFailure: message.batchedCall.revertOnFailure },
        nonce: BigInt(message.nonce),
        keyHash: message.keyHash as Hex,
        executor: getAddress(message.executor),
        deadline: BigInt(message.deadline),
      },
      encodeAbiParameters([{ type: 'bytes' }, { type: 'bytes' }], [signature, '0x']),
    ],
  })
}

export const transferCall = (token: string, to: string, amount: bigint) => ({ to: getAddress(token), value: '0', data: encodeFunctionData({ abi: erc20Solidity, functionName: 'transfer', args: [getAddress(to), amount] }) })
export const approveCall = (token: string, spender: string, amount: bigint) => ({ to: getAddress(token), value: '0', data: encodeFunctionData({ abi: erc20Solidity, functionName: 'approve', args: [getAddress(spender), amount] }) })

/** How many calls an owner-path execute(BatchedCall) carries (the payment leg alone: 1). */
export function ownerPathCalls(data: Hex): number {
  const { functionName, args } = decodeFunctionData({ abi: caliburSolidity, data })
  if (functionName !== 'execute' || args.length !== 1) throw new Error(`not an owner-path execute: ${data.slice(0, 10)}`)
  return (args[0] as { calls: readonly unknown[] }).calls.length
}
export { zeroAddress }
