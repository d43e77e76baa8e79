/**
 * Bruno's plugin API (`bruno/plugin`): all of core a group may use, built in or a third party's.
 * A group is `definePlugin({ name, order, options, networkOptions, setup })`; core calls `setup`
 * with the services (networks and their viem clients, the relay's operations, payment sizing),
 * the group's options from the config and its options on each chain, and serves what it returns.
 * Nothing else of core is reachable from a group: the built-in groups (plugins/*) import this file
 * and nothing else of core.
 * PLUGINS.md says how to write, test and publish one.
 *
 * @example
 * import { definePlugin, defineTool, Type } from 'bruno/plugin'
 *
 * export default definePlugin({
 *   name: 'hello',
 *   order: 60,
 *   options: Type.Object({ greeting: Type.String({ default: 'Hello' }) }, { additionalProperties: false }),
 *   setup: (services, options) => ({
 *     instructions: 'hello — greets.',
 *     tools: [defineTool({
 *       name: 'hello_greet', description: 'Greets a chain.',
 *       input: Type.Object({ chain: services.chainArgument }, { additionalProperties: false }),
 *       output: Type.Object({ text: Type.String() }, { additionalProperties: false }),
 *       handler: async ({ chain }) => ({ text: `${options.greeting}, ${chain}` }),
 *     })],
 *   }),
 * })
 */
import type { Static, TObject } from '@sinclair/typebox'
import type { BrunoServices } from './services.ts'
import type { GroupDefinition } from './tool/tool.ts'
import type { DevnetDeployment } from './devnet/deploy.ts'
import type { Network } from './chain/networks.ts'

// The schema builder, re-exported so a group builds its schemas with the TypeBox Bruno validates them with.
export { Type, type Static, type TObject, type TSchema } from '@sinclair/typebox'

export { defineTool, ToolError, type GroupDefinition, type ToolAnnotations, type ToolContext, type ToolDefinition, type ToolUi } from './tool/tool.ts'
export { REVIEW_VIEW, STATUS_VIEW } from './ui/views.ts'
export type { BrunoServices, NetworkDirectory, PaymentServices, RelayOperations } from './services.ts'
export type { ServedDelegate } from './relayService.ts'
export type { Network, TokenRef } from './chain/networks.ts'
export { CheckFailed, notAnswered } from './preflight/check.ts'
export type { GasPricer, PaymentToken } from './charge/gasPricer.ts'
export type { NetworkConfig, TokenConfig } from '../config/schema.ts'
export { definePrompt, PromptArgumentError, type Completer, type PromptArgumentDefinition, type PromptDefinition } from './tool/prompt.ts'
export { completeChain, completePaymentToken } from './chain/completers.ts'
export type { CacheHint, ResourceDefinition, ResourceTemplateDefinition } from './tool/resource.ts'
export type { TaskState, ToolTaskSupport } from './tool/task.ts'

// Shapes every group shares, and the relay's, for tools that hand their output on to `quote`/`submit`.
export {
  Address,
  Approval,
  ApprovalRequest,
  Approvals,
  BaseUnits,
  BlockNumber,
  Call,
  Calls,
  described,
  GasUnits,
  HexData,
  Nonce,
  passedBack,
  sameShapeAs,
  signedUnchanged,
  TokenAmount,
  TokenArgument,
  TokenInfo,
  UnixSeconds,
  UnixSecondsDecimal,
} from './tool/schemas.ts'
export {
  AccountView,
  AuthorizationList,
  authorizationListAs,
  BatchGasEstimate,
  ExpectedCharge,
  CallPayment,
  ExecutedBatch,
  Payment,
  PaymentSignature,
  Quote,
  QuoteRequest,
  RelayCall,
  SignedAuthorization,
  SignedTransferPayment,
  SubmissionView,
  SubmitRequest,
  TransferAuthorizationMessage,
} from './relay/schemas.ts'

// Argument checks (each refusal a ToolError) and the relay's encodings, for groups that build payments.
export { configuredTokenInfo, requireAddress, requireToken, toBaseUnits, type ResolvedToken } from './chain/arguments.ts'
export { readSignature, type SignatureParts } from './relay/signature.ts'
export { pathPrice, uniswapV3PoolAbi, type Fraction } from './chain/tokenPrice.ts'
export { eip712DomainAbi, readTokenDomain, tokenDomainAbi } from './chain/tokenDomain.ts'
export { encodeRunnerCall, PLACEHOLDER_SIGNATURE, RUNNER_BATCH_GAS, RUNNER_SETTLE_GAS, type RunnerRelay } from './relay/runnerCall.ts'
export { calldataGas, runnerGasLimit, stipendFor } from './relay/runnerTransaction.ts'
export { authorizationStateAbi, payerShortfall } from './relay/paymentToken.ts'
export { readL1DataFee } from './chain/l1DataFee.ts'
export type { Delegate, BatchTerms, DelegateWords } from './relay/delegate.ts'
export { readPaymentLeg, type PaymentTerms } from './relay/paymentLeg.ts'
export { batchDeadline, batchRelayCost, expectedBatchCharge, priceLeg } from './relay/batchRelayCost.ts'
export { approvalsToAdd, BatchCall, describeApprovals, readBatchCalls, readBatchParties, shortAddress, type ApprovalInput, type BatchPartiesRequest } from './relay/batchCalls.ts'
export { AUTHORIZATION_GAS, authorizationOverride, DELEGATION_PREFIX, requireDelegatedTo, viemAuthorizations, type DelegateAt } from './relay/delegation7702.ts'
export { requirePinnedPayment } from './relay/paymentPin.ts'
export type { DevnetDeployment } from './devnet/deploy.ts'
export { deployCodeTo } from './devnet/deployCodeTo.ts'
export { deterministicAddress } from './chain/deterministicDeployment.ts'
export { allowDelegatedPayers } from './devnet/allowDelegatedPayers.ts'
export { encodeApprove, encodeTransfer } from './chain/erc20Calls.ts'
export { revertReason, type ErrorVocabulary } from './relay/revertReason.ts'
export { leastPaymentValiditySec } from './relay/paymentValidity.ts'
export { transferWithAuthorizationTypes } from './relay/transferWithAuthorizationTypes.ts'
export { transferWithAuthorizationAbi } from './relay/signedTransferCall.ts'

/** What a group's `setup` returns: its group definition, less the name and order the plugin declares. */
export type GroupContribution = Omit<GroupDefinition, 'name' | 'order'>

/**
 * A group as a plugin declares it. `options` (a TypeBox object schema) validates and defaults the
 * config's `plugins[].options` before `setup` sees them; `networkOptions` does the same for each
 * chain's `networks[].groupOptions.<name>` (what differs from chain to chain: a contract's
 * address). An invalid value stops Bruno at start.
 */
export interface PluginDefinition<O extends TObject = TObject, N extends TObject = TObject> {
  /** The group's name: the `groups` entry that enables it and its `/mcp/<name>` path. */
  readonly name: string
  /** Where its tools stand in every `tools/list` (built-ins: bruno 10 … uniswap 50). */
  readonly order: number
  readonly options?: O
  /** Its options on each chain; a chain that gives none takes the defaults (so give every field one where you can). */
  readonly networkOptions?: N
  /**
   * Builds the group's tools (and prompts, resources) once, at start, for this deployment.
   * `optionsOn(network)` is its `networkOptions` on a served chain, checked and defaulted.
   */
  setup(services: BrunoServices, options: Static<O>, optionsOn: (network: Network) => Static<N>): GroupContribution | Promise<GroupContribution>
  /**
   * On the devnet (`npm start -- --plugin <path|package>`): deploys what the group needs on the
   * fresh chain (`deployment.deployer` holds ETH and owns USDC; the rest is where it landed) and
   * returns the group's options there. A group without it is served on the devnet with its
   * options' defaults; its `networkOptions` there are always their defaults.
   */
  devnet?(deployment: DevnetDeployment): Static<O> | Promise<Static<O>>
  /**
   * `bruno preflight`'s check of the group on each chain it is served on (and `bruno serve`'s,
   * before it listens), named after the group: what it needs there — its contracts, behaving as
   * they must. Returns what it found; throws `CheckFailed` with what is wrong.
   */
  preflight?(network: Network, options: Static<O>, networkOptions: Static<N>): Promise<string>
}

/**
 * Declares a group. An identity with inference: `setup` sees its options' static type.
 *
 * @example
 * export default definePlugin({ name: 'hello', order: 60, setup: () => ({ instructions: 'hello — …', tools: [] }) })
 */
export function definePlugin<O extends TObject = TObject, N extends TObject = TObject>(plugin: PluginDefinition<O, N>): PluginDefinition<O, N> {
  return plugin
}
