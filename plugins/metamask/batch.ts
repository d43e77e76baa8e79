import { Type, type TSchema } from '@sinclair/typebox'
import { formatUnits, getAddress, type Address, type Hex, type StateOverride } from 'viem'
import { randomBytes } from 'node:crypto'
import {
  Address as AddressSchema,
  ApprovalRequest,
  Approvals,
  approvalsToAdd,
  authorizationListAs,
  authorizationOverride,
  BaseUnits,
  batchDeadline,
  batchRelayCost,
  expectedBatchCharge,
  ExpectedCharge,
  type RunnerRelay,
  BatchCall,
  calldataGas,
  Calls,
  defineTool,
  described,
  describeApprovals,
  HexData,
  encodeTransfer,
  BatchGasEstimate,
  payerShortfall,
  PLACEHOLDER_SIGNATURE,
  priceLeg,
  readBatchCalls,
  readBatchParties,
  requireDelegatedTo,
  revertReason,
  shortAddress,
  signedUnchanged,
  stipendFor,
  TokenAmount,
  ToolError,
  UnixSeconds,
  viemAuthorizations,
  type Call,
  type DelegateAt,
  type Network,
  REVIEW_VIEW,
} from '../../core/plugin.ts'
import { metaMaskContracts } from './contracts.ts'
import { ownExecute } from './delegate.ts'
import { delegationTypedData, encodeBatches, encodeRedemption, paymentFirstDelegation, type Delegation, type Execution } from './delegation.ts'
import { metaMaskWords } from './errors.ts'
import { callsRedemptionOverhead, METAMASK_PAYMENT_GAS, PAYMENT_REDEMPTION_GAS } from './gas.ts'
import { DelegationTypedDataSchema } from './typedDataSchema.ts'

/** MetaMask's delegator, as the authorization checks name it. */
export const metaMaskAt: DelegateAt = { ...metaMaskWords, address: metaMaskContracts.delegator }

/** An `Execution` of a helper's or builder's call. */
export const executionOf = (call: Call): Execution => ({ target: getAddress(call.to), value: BigInt(call.value), callData: call.data as Hex })

/** What a delegation costs the runner, as metamask_batch measures it before it is signed. */
export interface DelegationMeasurement {
  /** The account's own execute of the payment leg and its calls (eth_estimateGas). */
  readonly ownerGas: bigint
  /** The runner transaction's estimated gas limit, headroom included. */
  readonly gas: bigint
  /** The L1 data fee it will pay, where the chain charges one (wei; else 0). */
  readonly l1FeeWei: bigint
  /** The relay as priced (a placeholder signature), its calls' stipend and what they were measured to use: an expected charge's figures. */
  readonly relay: RunnerRelay & { form: 'batch' }
  readonly callGas: bigint
  readonly callGasUsed: bigint
}

/**
 * Estimates, before the delegation is signed, the gas limit submit will price for it. Its
 * redemptions cannot be simulated without the signature, so the account's own `execute` of the
 * same batch is — the leg alone, then the leg and the calls — and what each redemption adds is
 * counted on top (`PAYMENT_REDEMPTION_GAS`, `callsRedemptionOverhead`, measured on the devnet). The
 * limit is the intrinsic gas of the exact `relayBatch` calldata (a placeholder signature), the
 * Runner's work, what the payment redemption needs (at most its cap), the calls' stipend with the
 * 1/64 a call keeps back and the settlement, with the configured headroom.
 *
 * @example
 * await measureDelegation(network, delegation, leg, ownCalls, usdc, 1234n, feePerGas)
 * // { ownerGas: 44119n, gas: 571000n, l1FeeWei: 0n, relay: { form: 'batch', … }, callGas: 160000n, callGasUsed: 140000n }
 */
export async function measureDelegation(
  network: Network,
  delegation: Delegation,
  leg: Execution,
  ownCalls: readonly Execution[],
  token: { address: Address; symbol: string; decimals: number },
  amount: bigint,
  feePerGas: bigint,
  stateOverride?: StateOverride,
  authorizations?: ReturnType<typeof viemAuthorizations>,
): Promise<DelegationMeasurement> {
  const account = delegation.delegator
  const estimate = (data: Hex) =>
    network.client.estimateGas({ account, to: account, data, blockTag: 'latest', ...(stateOverride ? { stateOverride } : {}) }).catch(async (error: unknown) => {
      const reason = revertReason(error, token.decimals, token.symbol, [metaMaskWords])
      if (!reason) throw error
      // A payment the account cannot make fails first: say so, not what the token said.
      const short = await payerShortfall(network, token, account, amount)
      throw new ToolError(`the batch would fail: ${short ?? reason}`)
    })
  const legData = ownExecute([leg])
  const ownerData = ownExecute([leg, ...ownCalls])
  const [legGas, ownerGas] = await Promise.all([estimate(legData), estimate(ownerData)])
  const executed = (gas: bigint, data: Hex) => (gas - 21_000n - calldataGas(data) > 0n ? gas - 21_000n - calldataGas(data) : 0n)
  const callsExecuted = executed(ownerGas, ownerData) - executed(legGas, legData)
  const paymentGas = METAMASK_PAYMENT_GAS
  const paymentNeeds = executed(legGas, legData) + PAYMENT_REDEMPTION_GAS
  const callGasUsed = (callsExecuted > 0n ? callsExecuted : 0n) + callsRedemptionOverhead(ownCalls.length)
  const callGas = stipendFor(callGasUsed)
  const signed = { ...delegation, signature: PLACEHOLDER_SIGNATURE }
  const relay = {
    form: 'batch' as const,
    account,
    delegate: metaMaskContracts.delegator,
    target: metaMaskContracts.delegationManager,
    paymentData: encodeRedemption(signed, [leg]),
    paymentGas,
    data: encodeRedemption(signed, ownCalls),
    token: token.address,
    payee: getAddress(network.config.payee),
    amount,
  }
  const { gas, l1FeeWei } = await batchRelayCost(network, relay, callGas, feePerGas, stateOverride ? authorizations : undefined, paymentNeeds < paymentGas ? paymentNeeds : paymentGas)
  return { ownerGas, gas, l1FeeWei, relay, callGas, callGasUsed }
}

/**
 * `metamask_batch`: wraps an account's calls (any helper's `calls`, a builder's transactionRequest)
 * into one payment-first delegation to Bruno's Runner — the payment, then the calls, each pinned by
 * its hash — measured and priced, as typed data for the account's wallet to sign once, and the two
 * batches the hashes are of (`batches`, for metamask_execute).
 *
 * @example
 * registry.addGroup({ name: 'metamask', order: 25, instructions, tools: [metaMaskBatch(app.bruno.chainArgument), …] })
 */
export const metaMaskBatch = (chain: TSchema) =>
  defineTool({
    name: 'metamask_batch',
    title: 'Prepare a MetaMask delegation',
    description:
      'Wraps the account\'s calls (MetaMask EIP-7702 delegator) as one Delegation to Bruno\'s Runner to sign: it pays Bruno in ' +
      '`token` first, then runs the calls all or nothing (paid even if they fail on chain). `calls` and `approvals` as for ' +
      'calibur_batch. Not delegated: pass its EIP-7702 authorization as authorizationList.',
    input: Type.Object(
      {
        chain,
        account: { ...AddressSchema, description: 'makes the calls and signs' },
        calls: Type.Array(BatchCall, { minItems: 1, maxItems: 64, description: 'in order' }),
        approvals: Type.Optional(Type.Array(ApprovalRequest, { maxItems: 16 })),
        token: Type.String({ minLength: 1, maxLength: 42, description: 'the token to pay in' }),
        deadline: Type.Optional(Type.Integer({ minimum: 1, description: 'unix seconds (default: now + submission ttl)' })),
        authorizationList: Type.Optional(authorizationListAs('the account\'s, to MetaMask\'s delegator, if not yet delegated', 1)),
      },
      { additionalProperties: false },
    ),
    output: Type.Object(
      {
        typedData: signedUnchanged(DelegationTypedDataSchema, 'EIP-712 {domain, types, primaryType: Delegation, message}: sign it unchanged'),
        summary: Type.String(),
        payment: Type.Object(
          { token: AddressSchema, symbol: Type.String(), amount: described(TokenAmount, 'whole token units'), amountBaseUnits: BaseUnits, payee: AddressSchema, expectedChargeBaseUnits: ExpectedCharge },
          { additionalProperties: false },
        ),
        calls: { ...Calls, description: 'as pinned: approvals added, then the given calls' },
        batches: described(HexData, 'the payment and the calls, whose hashes typedData signs: pass to metamask_execute unchanged'),
        approvalsAdded: Approvals,
        authorizationList: Type.Optional(authorizationListAs('pass on to metamask_execute and submit')),
        deadline: UnixSeconds,
        gas: BatchGasEstimate,
      },
      { additionalProperties: false },
    ),
    annotations: { readOnlyHint: true, openWorldHint: true },
    ui: { resourceUri: REVIEW_VIEW },
    handler: async (args, services) => {
      const { network, account, token, payee } = readBatchParties({ ...args, chain: args.chain as string }, services)
      const { config } = network
      const { payment } = services
      const calls = readBatchCalls(network, args.calls)
      const stateOverride = await authorizationOverride(network, account, args.authorizationList, metaMaskAt)
      if (!stateOverride) await requireDelegatedTo(network, account, metaMaskAt)
      const deadline = batchDeadline(network, args.deadline)
      const [{ added, calls: approveCalls }, pricer, refunds] = await Promise.all([
        approvalsToAdd(network, account, args.approvals),
        payment.pricer(network.name, token.address),
        payment.refunds(network.name),
      ])

      const ownCalls = [...approveCalls, ...calls]
      const executions = ownCalls.map(executionOf)
      const salt = BigInt(`0x${randomBytes(16).toString('hex')}`)
      const legFor = (amount: bigint) => executionOf(encodeTransfer({ token: token.address, to: payee, amount }))
      const delegationFor = (amount: bigint) =>
        paymentFirstDelegation({ account, runner: getAddress(config.runner.contract), leg: legFor(amount), calls: executions, deadline: BigInt(deadline), salt })
      const { amount, measured } = await priceLeg(pricer, (amount) =>
        measureDelegation(network, delegationFor(amount), legFor(amount), executions, token, amount, pricer.feePerGas, stateOverride, viemAuthorizations(args.authorizationList)),
      )

      const expected = expectedBatchCharge(network, { ...measured, authorizations: stateOverride ? (args.authorizationList?.length ?? 0) : 0 }, pricer, amount, refunds)
      const amountFormatted = formatUnits(amount, token.decimals)
      const summary =
        `One delegation to Bruno's Runner, redeemed twice. First: ${amountFormatted} ${token.symbol} from ${account} to Bruno's payee ${payee} for the gas; ` +
        `it is paid even if the calls then fail. Then, all or nothing: approvals added: ${describeApprovals(network, added)}; ` +
        `your ${calls.length} call${calls.length === 1 ? '' : 's'} (to ${calls.map((call) => shortAddress(call.to as Address)).join(', ')}). ` +
        `Valid until ${new Date(deadline * 1000).toISOString()} (unix ${deadline}).` +
        (stateOverride ? ' The account is delegated to MetaMask\'s delegator in the same transaction (authorizationList).' : '')
      return {
        typedData: delegationTypedData(config.chainId, delegationFor(amount)) as never,
        summary,
        payment: { token: token.address, symbol: token.symbol, amount: amountFormatted, amountBaseUnits: amount.toString(), payee, expectedChargeBaseUnits: expected.toString() },
        calls: ownCalls,
        batches: encodeBatches([legFor(amount)], executions),
        approvalsAdded: added,
        ...(stateOverride ? { authorizationList: args.authorizationList } : {}),
        deadline,
        gas: { estimated: measured.gas.toString(), ownerPath: measured.ownerGas.toString(), feePerGasWei: pricer.feePerGas.toString(), marginBps: pricer.marginBps },
      }
    },
  })
