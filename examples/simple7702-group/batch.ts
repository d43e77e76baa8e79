import {
  Address as AddressSchema,
  ApprovalRequest,
  Approvals,
  approvalsToAdd,
  AuthorizationList,
  authorizationOverride,
  BaseUnits,
  batchRelayCost,
  BatchCall,
  Calls,
  defineTool,
  described,
  describeApprovals,
  encodeTransfer,
  GasUnits,
  payerShortfall,
  PLACEHOLDER_SIGNATURE,
  priceLeg,
  readBatchCalls,
  readBatchParties,
  requireDelegatedTo,
  revertReason,
  stipendFor,
  TokenAmount,
  ToolError,
  Type,
  viemAuthorizations,
  type DelegateAt,
  type TSchema,
} from 'bruno/plugin'
import { getAddress, formatUnits, type Address, type Hex } from 'viem'
import { ENTRY_POINT_OVERHEAD, PAYMENT_CALL_GAS, simple7702Words, VERIFICATION_GAS } from './delegate.ts'
import { GATE_VERIFICATION_GAS, gatedPaymasterAndData } from './runnerGate.ts'
import { encodeExecuteBatch, encodeHandleOps, ENTRY_POINT, entryPointAbi, userOperationTypedData, type Call, type UserOperation } from './entryPoint.ts'

const Hash = Type.String({ pattern: '^0x[0-9a-fA-F]{64}$' })
/** A v0.8 UserOperation as typed data to sign: EIP-712, domain ERC4337 v1 at the EntryPoint. */
export const UserOperationTypedData = Type.Object(
  {
    domain: Type.Object(
      { name: Type.Literal('ERC4337'), version: Type.Literal('1'), chainId: Type.Integer({ minimum: 1 }), verifyingContract: AddressSchema },
      { additionalProperties: false },
    ),
    types: Type.Record(Type.String(), Type.Array(Type.Object({ name: Type.String({ maxLength: 64 }), type: Type.String({ maxLength: 64 }) }, { additionalProperties: false }), { maxItems: 8 }), { additionalProperties: false, maxProperties: 4 }),
    primaryType: Type.Literal('PackedUserOperation'),
    message: Type.Object(
      {
        sender: AddressSchema,
        nonce: Type.String({ pattern: '^[0-9]{1,78}$' }),
        initCode: Type.String({ pattern: '^0x$' }),
        callData: Type.String({ pattern: '^0x([0-9a-fA-F]{2})*$', maxLength: 131_074 }),
        accountGasLimits: Hash,
        preVerificationGas: Type.String({ pattern: '^[0-9]{1,78}$' }),
        gasFees: Hash,
        paymasterAndData: Type.String({ pattern: '^0x([0-9a-fA-F]{104})?$', description: 'the RunnerGate for the payment operation, none for the calls' }),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false, description: 'a UserOperation, EIP-712: sign it unchanged' },
)

/** Simple7702Account on its chain, for the authorization checks. */
export const simple7702At = (implementation: Address): DelegateAt => ({ ...simple7702Words, address: implementation })

const execution = (call: { to: string; value: string; data: string }): Call => ({ target: getAddress(call.to), value: BigInt(call.value), data: call.data as Hex })

/**
 * `simple7702_batch`: the account's calls as two UserOperations to sign — one that only pays Bruno,
 * its paymaster `gate` (a RunnerGate: only the Runner's payment phase runs it), then the calls at
 * the next nonce — measured and priced as submit will price them.
 *
 * @example
 * registry.addGroup({ name: 'simple7702', order: 60, instructions, tools: [simple7702Batch(chain, implementation, gate), …] })
 */
export const simple7702Batch = (chain: TSchema, implementation: Address, gate: Address) =>
  defineTool({
    name: 'simple7702_batch',
    title: 'Prepare Simple7702 operations',
    description:
      'Wraps the account\'s calls (an EIP-7702 Simple7702Account) as two ERC-4337 UserOperations to sign: the first pays Bruno in `token`, ' +
      'the second runs the calls; Bruno sends both to the EntryPoint as their bundler. Not delegated: pass its authorization as authorizationList.',
    input: Type.Object(
      {
        chain,
        account: AddressSchema,
        calls: Type.Array(BatchCall, { minItems: 1, maxItems: 32 }),
        approvals: Type.Optional(Type.Array(ApprovalRequest, { maxItems: 16 })),
        token: Type.String({ minLength: 1, maxLength: 42 }),
        authorizationList: Type.Optional({ ...AuthorizationList, maxItems: 1 }),
      },
      { additionalProperties: false },
    ),
    output: Type.Object(
      {
        paymentTypedData: UserOperationTypedData,
        typedData: UserOperationTypedData,
        summary: Type.String(),
        payment: Type.Object({ token: AddressSchema, symbol: Type.String(), amount: described(TokenAmount, 'whole token units'), amountBaseUnits: BaseUnits }, { additionalProperties: false }),
        calls: Calls,
        approvalsAdded: Approvals,
        authorizationList: Type.Optional(AuthorizationList),
        gas: Type.Object({ estimated: GasUnits, ownerPath: GasUnits }, { additionalProperties: false }),
      },
      { additionalProperties: false },
    ),
    annotations: { readOnlyHint: true, openWorldHint: true },
    handler: async (args, services) => {
      const { network, account, token, payee } = readBatchParties({ ...args, chain: args.chain as string }, services)
      const { client, config } = network
      const { payment } = services
      const at = simple7702At(implementation)
      const stateOverride = await authorizationOverride(network, account, args.authorizationList, at)
      if (!stateOverride) await requireDelegatedTo(network, account, at)
      const calls = readBatchCalls(network, args.calls)
      const [{ added, calls: approveCalls }, pricer, nonce] = await Promise.all([
        approvalsToAdd(network, account, args.approvals),
        payment.pricer(network.name, token.address),
        client.readContract({ address: ENTRY_POINT, abi: entryPointAbi, functionName: 'getNonce', args: [account, 0n] }),
      ])
      const own = [...approveCalls, ...calls].map(execution)
      const legFor = (amount: bigint) => execution(encodeTransfer({ token: token.address, to: payee, amount }))
      // The account runs its own batch as the EntryPoint will have it run them: measured from itself.
      const estimate = (data: Hex) =>
        client.estimateGas({ account, to: account, data, blockTag: 'latest', ...(stateOverride ? { stateOverride } : {}) }).catch(async (error: unknown) => {
          const reason = revertReason(error, token.decimals, token.symbol, [simple7702Words])
          if (!reason) throw error
          throw new ToolError(`the batch would fail: ${(await payerShortfall(network, token, account, 1n)) ?? reason}`)
        })
      const ownerData = encodeExecuteBatch([legFor(1n), ...own])
      const legData = encodeExecuteBatch([legFor(1n)])
      const [ownerGas, legGas] = await Promise.all([estimate(ownerData), estimate(legData)])
      const callGasLimit = ((ownerGas - legGas) * 6n) / 5n + 20_000n
      const opsFor = (amount: bigint): [UserOperation, UserOperation] => {
        const base = { sender: account, preVerificationGas: 0n, maxPriorityFeePerGas: 0n, maxFeePerGas: 0n, initCode: '0x' as Hex, paymasterAndData: '0x' as Hex, signature: PLACEHOLDER_SIGNATURE, verificationGasLimit: VERIFICATION_GAS }
        return [
          { ...base, nonce, callData: encodeExecuteBatch([legFor(amount)]), callGasLimit: PAYMENT_CALL_GAS, paymasterAndData: gatedPaymasterAndData(gate) },
          { ...base, nonce: nonce + 1n, callData: encodeExecuteBatch(own), callGasLimit },
        ]
      }
      const costFor = (amount: bigint) => {
        const [paying, calling] = opsFor(amount)
        const paymentData = encodeHandleOps(paying, account)
        const data = encodeHandleOps(calling, account)
        const paymentGas = VERIFICATION_GAS + GATE_VERIFICATION_GAS + PAYMENT_CALL_GAS + ENTRY_POINT_OVERHEAD
        const callGas = stipendFor(VERIFICATION_GAS + callGasLimit + ENTRY_POINT_OVERHEAD)
        const relay = { form: 'batch' as const, account, delegate: implementation, target: ENTRY_POINT, paymentData, paymentGas, data, token: token.address, payee, amount }
        return batchRelayCost(network, relay, callGas, pricer.feePerGas, stateOverride ? viemAuthorizations(args.authorizationList) : undefined)
      }
      const { amount, measured } = await priceLeg(pricer, costFor)
      const [paying, calling] = opsFor(amount)
      const amountFormatted = formatUnits(amount, token.decimals)
      return {
        paymentTypedData: userOperationTypedData(config.chainId, paying) as never,
        typedData: userOperationTypedData(config.chainId, calling) as never,
        summary:
          `Operation ${nonce}: ${amountFormatted} ${token.symbol} from ${account} to Bruno's payee ${payee}, run only by Bruno's Runner (its paymaster the RunnerGate ${gate}). Operation ${nonce + 1n}: ` +
          `approvals added: ${describeApprovals(network, added)}; your ${calls.length} call(s). Bruno sends both to the EntryPoint (${ENTRY_POINT}), payment first.`,
        payment: { token: token.address, symbol: token.symbol, amount: amountFormatted, amountBaseUnits: amount.toString() },
        calls: [...approveCalls, ...calls],
        approvalsAdded: added,
        ...(stateOverride ? { authorizationList: args.authorizationList } : {}),
        gas: { estimated: measured.gas.toString(), ownerPath: ownerGas.toString() },
      }
    },
  })
