import { getAddress, isErc6492Signature, parseErc6492Signature, type Address, type Hex } from 'viem'
import type { Network } from '../chain/networks.ts'
import { ToolError } from '../tool/tool.ts'
import { revertData } from './revertReason.ts'
import type { RunnerRelay } from './runnerCall.ts'

/** An undeployed wallet's deployment, as its ERC-6492 signature carries it: the factory and its calldata. */
export interface WalletDeployment {
  readonly factory: Address
  readonly factoryData: Hex
}

/**
 * The deployment an ERC-6492 signature carries, or `undefined` for a signature that is not wrapped.
 *
 * @example
 * walletDeployment(serializeErc6492Signature({ address: factory, data, signature })) // { factory, factoryData: data }
 */
export function walletDeployment(signature: Hex): WalletDeployment | undefined {
  if (!isErc6492Signature(signature)) return undefined
  const { address, data } = parseErc6492Signature(signature)
  return address && data ? { factory: getAddress(address), factoryData: data } : undefined
}

/**
 * The gas the Runner spends deploying a wallet in the payment phase: the factory's call made from
 * the Runner contract at the latest block, its intrinsic gas left out. A call that reverts is a
 * `ToolError` (`${refusal}: …`).
 *
 * @example
 * await walletDeploymentGas(network, { factory, factoryData }, 'cannot quote') // 183_412n
 */
export async function walletDeploymentGas(network: Network, deployment: WalletDeployment, refusal: string): Promise<bigint> {
  const runner = getAddress(network.config.runner.contract)
  const gas = await network.client.estimateGas({ account: runner, to: deployment.factory, data: deployment.factoryData, blockTag: 'latest' }).catch((error: unknown) => {
    if (revertData(error) === undefined && !/revert/i.test(String((error as Error).message))) throw error
    throw new ToolError(`${refusal}: the wallet's deployment (its factory ${deployment.factory}'s call) fails in simulation from Bruno's Runner contract`)
  })
  return gas - 21_000n
}

/**
 * The gas a signed transfer's payment phase spends deploying its payer: `walletDeploymentGas` when
 * its signature is ERC-6492-wrapped and the payer has no code yet, else 0 (a batch's payment deploys
 * nothing).
 *
 * @example
 * await payerDeploymentGas(network, relay, 'refused') // 0n for an account's own signature
 */
export async function payerDeploymentGas(network: Network, relay: RunnerRelay, refusal: string): Promise<bigint> {
  if (relay.form !== 'authorization') return 0n
  const deployment = walletDeployment(relay.payment.signature as Hex)
  if (!deployment || (await network.client.getCode({ address: getAddress(relay.payment.authorization.from) }))) return 0n
  return walletDeploymentGas(network, deployment, refusal)
}
