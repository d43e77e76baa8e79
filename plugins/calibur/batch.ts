import { Type, type TSchema } from '@sinclair/typebox'
import { formatUnits, getAddress, type Address, type Client, type Hex, type StateOverride } from 'viem'
import { readContract } from 'viem/actions'
import type { CaliburOn } from './networkOptions.ts'
import {
  Address as AddressSchema,
  ApprovalRequest,
  approvalsToAdd,
  BatchCall,
  describeApprovals,
  readBatchCalls,
  shortAddress,
  authorizationOverride,
  Approvals,
  authorizationListAs,
  BaseUnits,
  batchDeadline,
  batchRelayCost,
  expectedBatchCharge,
  ExpectedCharge,
  type RunnerRelay,
  Call,
  Calls,
  calldataGas,
  defineTool,
  described,
  PLACEHOLDER_SIGNATURE,
  priceLeg,
  encodeTransfer,
  BatchGasEstimate,
  Nonce,
  payerShortfall,
  readBatchParties,
  requireDelegatedTo,
  sameShapeAs,
  signedUnchanged,
  revertReason,
  stipendFor,
  TokenAmount,
  ToolError,
  UnixSeconds,
  UnixSecondsDecimal,
  viemAuthorizations,
  type DelegateAt,
  type Network,
  type SignedAuthorization,
  REVIEW_VIEW,
} from '../../core/plugin.ts'
import { caliburAbi } from './abi.ts'
import { caliburWords } from './errors.ts'
import { encodeOwnerExecute, encodeSignedExecute } from './executeCalldata.ts'
import { caliburNonce } from './nonce.ts'
import { CALIBUR_PAYMENT_GAS, ownCallsBatch, paymentBatch } from './paymentFirstBatch.ts'
import { readCaliburDomain } from './readDomain.ts'
import {
  caliburDomainFromEip712Domain,
  caliburTypedData,
  type CaliburCall,
  type CaliburDomain,
  type CaliburTypedData,
  type SignedBatchedCallMessage,
} from './typedData.ts'

const Hash32 = Type.String({ pattern: '^0x[0-9a-fA-F]{64}$' })

const TypeField = Type.Object({ name: Type.String({ maxLength: 64 }), type: Type.String({ maxLength: 64 }) }, { additionalProperties: false })
const TypeFields = Type.Array(TypeField, { maxItems: 8 })

/**
 * Calibur's typed data as calibur_batch returns it and calibur_execute takes it back: standard
 * `{domain, types, primaryType, message}` (the shape of `caliburTypedData`), every uint256 of the
 * message a decimal string, so it passes through JSON and a wallet's sign-typed-data tool unchanged.
 */
export const CaliburTypedDataSchema = Type.Object(
  {
    domain: Type.Object(
      {
        name: Type.Literal('Calibur'),
        version: Type.Literal('1.0.0'),
        chainId: Type.Integer({ minimum: 1 }),
        verifyingContract: AddressSchema,
        salt: Hash32,
      },
      { additionalProperties: false },
    ),
    // Any names here: calibur_execute refuses types other than Calibur's, naming them.
    types: Type.Record(Type.String(), TypeFields, { additionalProperties: false, maxProperties: 8 }),
    primaryType: Type.Literal('SignedBatchedCall'),
    message: Type.Object(
      {
        batchedCall: Type.Object(
          { calls: Type.Array(Call, { minItems: 1, maxItems: 64 }), revertOnFailure: Type.Boolean() },
          { additionalProperties: false },
        ),
        nonce: Nonce,
        keyHash: Hash32,
        executor: AddressSchema,
        deadline: UnixSecondsDecimal,
      },
      { additionalProperties: false },
    ),
  },
  {
    additionalProperties: false,
    description: 'a Calibur SignedBatchedCall, EIP-712: sign it unchanged',
  },
)

/**
 * What one signed execution costs beyond its calls run by the owner path (measured from the account
 * itself): Calibur's signature check, nonce write and domain read, and the Runner's cold call to the
 * account. Each of the two batches (payment, then the account's calls) pays it.
 */
export const SIGNED_PATH_GAS = 20_000n
/** The nonce key's first use (seq 0): its sequence slot is written from zero. Measured: 17,100. */
export const FIRST_USE_OF_KEY_GAS = 17_500n
/**
 * The signed path copies a batch into memory twice (to hash it, then to run it): on the real Calibur
 * ≈1,700 gas more per extra 68-byte call than the owner path, the stand-in ≈1,330
 * (test/calibur-compatible.test.ts). Exported for test/documented-constants.test.ts (SPEC §6).
 */
export const PER_CALL_GAS = 1_200n
export const PER_DATA_BYTE_GAS = 8n
/** Calibur at `address`, as the authorization checks name it. */
function caliburAt(address: Address): DelegateAt {
  return { ...caliburWords, address: getAddress(address) }
}

/**
 * The state override showing the account delegated to Calibur (at `calibur`) by its authorization
 * in authorizationList (`authorizationOverride`); `undefined` without one.
 *
 * @example
 * await delegationOverride(network, account, [signedAuthorization], CALIBUR_ADDRESS)
 * // [{ address: account, code: '0xef0100000000005c84f8fd50b21cac312528a64437030e' }]
 */
export function delegationOverride(
  network: Network,
  account: Address,
  authorizationList: readonly SignedAuthorization[] | undefined,
  calibur: Address,
): Promise<StateOverride | undefined> {
  return authorizationOverride(network, account, authorizationList, caliburAt(calibur))
}

/**
 * The account's Calibur domain and the next seq of a nonce key, as read now — or, with a
 * delegation override, as they will read once the authorization has delegated the account.
 *
 * @example
 * await readCaliburState(network, account, 0n, undefined, CALIBUR_ADDRESS) // { domain: { chainId, account, salt }, seq: 3n }
 */
export async function readCaliburState(
  network: Network,
  account: Address,
  key: bigint,
  stateOverride: StateOverride | undefined,
  calibur: Address,
): Promise<{ domain: CaliburDomain; seq: bigint }> {
  const { client } = network
  if (!stateOverride) await requireDelegatedTo(network, account, caliburAt(calibur))
  const [domain, seq] = await Promise.all([
    stateOverride
      ? readContract(client as Client, { address: account, abi: caliburAbi, functionName: 'eip712Domain', stateOverride }).then(caliburDomainFromEip712Domain)
      : readCaliburDomain(client, account),
    readContract(client as Client, { address: account, abi: caliburAbi, functionName: 'getSeq', args: [key], ...(stateOverride ? { stateOverride } : {}) }),
  ])
  if (domain.account !== account) throw new ToolError(`${account}'s EIP-712 domain names ${domain.account} as its verifyingContract, not the account itself`)
  if (domain.chainId !== network.config.chainId) throw new ToolError(`${account}'s Calibur domain is for chain ${domain.chainId}, not ${network.config.chainId}`)
  return { domain, seq }
}

/** What a batch costs the runner, as calibur_batch measures it before the batches are signed. */
export interface BatchMeasurement {
  /** The owner path's gas: the payment leg and the account's calls run flat from the account (eth_estimateGas). */
  readonly ownerGas: bigint
  /** The payment batch's estimated gas on the signed path. */
  readonly paymentGas: bigint
  /** The estimated gas of the batch of the account's calls on the signed path (what the Runner's stipend is sized from). */
  readonly accountGas: bigint
  /** The estimated gas limit of the runner transaction carrying the signed batches, headroom included. */
  readonly gas: bigint
  /** The L1 data fee the runner transaction will pay, where the chain charges one (wei; else 0). */
  readonly l1FeeWei: bigint
  /** The relay as priced (placeholder signatures) and its calls' stipend: an expected charge's figures. */
  readonly relay: RunnerRelay & { form: 'batch' }
  readonly callGas: bigint
}

/**
 * Estimates, before the batches are signed, the gas limit submit will price for them. The signed
 * path cannot be simulated without the signatures, so the owner path is — `execute(BatchedCall)`
 * from = to = the account, of the payment leg alone and of the leg then the account's calls: the
 * same calls, the same state — and what each signed path adds is counted on top (`SIGNED_PATH_GAS`,
 * `FIRST_USE_OF_KEY_GAS` on a nonce key's first use for the payment batch, per call and per byte for
 * the account's). The Runner gives the account's batch the stipend `stipendFor` sizes, so the limit
 * is the intrinsic gas (exact calldata of `relayBatch` with placeholder signatures, the authorization
 * when the account is delegated in the same transaction), the Runner's own work, the payment batch,
 * the stipend with the 1/64 a call keeps back, and the Runner's settlement — with the configured
 * headroom, never below the EIP-7623 calldata floor.
 *
 * @example
 * await measureSignedBatches(network, account, CALIBUR_ADDRESS, { payment, calls }, { leg, ownCalls }, usdc, payee, 1234n, feePerGas)
 * // { ownerGas: 96987n, paymentGas: 81000n, accountGas: 90123n, gas: 231612n, l1FeeWei: 0n, relay: { form: 'batch', … }, callGas: 93000n }
 */
export async function measureSignedBatches(
  network: Network,
  account: Address,
  calibur: Address,
  messages: { payment: SignedBatchedCallMessage; calls: SignedBatchedCallMessage },
  flat: { leg: CaliburCall; ownCalls: readonly CaliburCall[] },
  token: { address: Address; symbol: string; decimals: number },
  payee: Address,
  amount: bigint,
  feePerGas: bigint,
  stateOverride?: StateOverride,
  authorizations?: ReturnType<typeof viemAuthorizations>,
): Promise<BatchMeasurement> {
  const legData = encodeOwnerExecute({ calls: [flat.leg], revertOnFailure: true })
  const ownerData = encodeOwnerExecute({ calls: [flat.leg, ...flat.ownCalls], revertOnFailure: true })
  const estimate = (data: Hex) =>
    network.client.estimateGas({ account, to: account, data, blockTag: 'latest', ...(stateOverride ? { stateOverride } : {}) }).catch(async (error: unknown) => {
      const reason = revertReason(error, token.decimals, token.symbol, [caliburWords])
      if (!reason) throw error
      // A payment the account cannot make fails first: say so, not what the token said (WETH9 says nothing).
      const short = await payerShortfall(network, token, account, amount)
      throw new ToolError(`the batch would fail: ${short ?? reason}`)
    })
  const [legGas, ownerGas] = await Promise.all([estimate(legData), estimate(ownerData)])
  const executed = (gas: bigint, data: Hex) => {
    const used = gas - 21_000n - calldataGas(data)
    return used > 0n ? used : 0n
  }
  const legExecuted = executed(legGas, legData)
  const callsExecuted = executed(ownerGas, ownerData) - legExecuted
  const firstUse = (BigInt(messages.payment.nonce) & ((1n << 64n) - 1n)) === 0n
  const dataBytes = flat.ownCalls.reduce((total, call) => total + BigInt((call.data.length - 2) / 2), 0n)
  const paymentGas = legExecuted + SIGNED_PATH_GAS + (firstUse ? FIRST_USE_OF_KEY_GAS : 0n)
  const accountGas =
    (callsExecuted > 0n ? callsExecuted : 0n) + SIGNED_PATH_GAS + PER_CALL_GAS * BigInt(flat.ownCalls.length) + PER_DATA_BYTE_GAS * dataBytes
  const callGas = stipendFor(accountGas)
  const relay = {
    form: 'batch' as const,
    account,
    delegate: getAddress(calibur),
    target: account,
    paymentData: encodeSignedExecute({ message: messages.payment, signature: PLACEHOLDER_SIGNATURE }),
    paymentGas: CALIBUR_PAYMENT_GAS,
    data: encodeSignedExecute({ message: messages.calls, signature: PLACEHOLDER_SIGNATURE }),
    token: token.address,
    payee,
    amount,
  }
  const { gas, l1FeeWei } = await batchRelayCost(network, relay, callGas, feePerGas, stateOverride ? authorizations : undefined, paymentGas)
  return { ownerGas, paymentGas, accountGas, gas, l1FeeWei, relay, callGas }
}

/**
 * `calibur_batch`: wraps an account's calls (any helper's `calls`, a builder's transactionRequest)
 * into two Calibur signed batches — one that only pays Bruno (`paymentBatch`), and the calls after it
 * at the next nonce (`ownCallsBatch`) — measured and priced, as typed data for the account's wallet
 * to sign, for the Calibur at `caliburOn(network)`.
 *
 * @example
 * tools: [caliburBatch(services.chainArgument, optionsOn), …]
 */
export const caliburBatch = (chain: TSchema, caliburOn: CaliburOn) =>
  defineTool({
    name: 'calibur_batch',
    title: 'Prepare a Calibur batch',
    description:
      'Wraps the account\'s calls for Calibur (EIP-7702) as two batches to sign: paymentTypedData pays Bruno in ' +
      '`token` (unused part refunded), then typedData runs the calls all or nothing (paid even if they fail on chain). `calls`: helpers\' ' +
      'calls or a builder\'s transactionRequest (gas, fee, from, nonce ignored). ' +
      '`approvals` add an approve where short. Not delegated: pass its EIP-7702 authorization as authorizationList.',
    input: Type.Object(
      {
        chain,
        account: { ...AddressSchema, description: 'makes the calls and signs' },
        calls: Type.Array(BatchCall, { minItems: 1, maxItems: 64, description: 'in order' }),
        approvals: Type.Optional(Type.Array(ApprovalRequest, { maxItems: 16 })),
        token: Type.String({ minLength: 1, maxLength: 42, description: 'the token to pay in' }),
        deadline: Type.Optional(Type.Integer({ minimum: 1, description: 'unix seconds (default: now + submission ttl)' })),
        nonceKey: Type.Optional(Type.String({ pattern: '^[0-9]{1,58}$', description: 'Calibur nonce key, decimal (default 0)' })),
        authorizationList: Type.Optional(authorizationListAs('the account\'s, to Calibur, if not yet delegated', 1)),
      },
      { additionalProperties: false },
    ),
    output: Type.Object(
      {
        paymentTypedData: sameShapeAs(CaliburTypedDataSchema, 'typedData', 'the payment batch'),
        typedData: signedUnchanged(CaliburTypedDataSchema, 'the calls batch, EIP-712 {domain, types, primaryType: SignedBatchedCall, message}: sign both unchanged'),
        summary: Type.String({ description: 'the batch in words' }),
        payment: Type.Object(
          {
            token: AddressSchema,
            symbol: Type.String(),
            amount: described(TokenAmount, 'whole token units'),
            amountBaseUnits: BaseUnits,
            payee: AddressSchema,
            expectedChargeBaseUnits: ExpectedCharge,
          },
          { additionalProperties: false, description: 'the payment batch pays it' },
        ),
        calls: { ...Calls, description: 'as signed: approvals added, then the given calls' },
        approvalsAdded: Approvals,
        authorizationList: Type.Optional(authorizationListAs('pass on to calibur_execute and submit')),
        nonce: { ...Nonce, description: 'the payment batch\'s' },
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

      const calls = readBatchCalls(network, args.calls) as CaliburCall[]

      // Without an authorization list, readCaliburState refuses an account not delegated to Calibur.
      const calibur = caliburOn(network)
      const stateOverride = await delegationOverride(network, account, args.authorizationList, calibur)
      const key = BigInt(args.nonceKey ?? '0')
      const deadline = batchDeadline(network, args.deadline)

      const [{ domain, seq }, { added, calls: approveCalls }, pricer, refunds] = await Promise.all([
        readCaliburState(network, account, key, stateOverride, calibur),
        approvalsToAdd(network, account, args.approvals),
        payment.pricer(network.name, token.address),
        payment.refunds(network.name),
      ])
      const nonce = caliburNonce(key, seq)
      const callsNonce = caliburNonce(key, seq + 1n)
      const { feePerGas, marginBps } = pricer
      const ownCalls = [...approveCalls, ...calls] as CaliburCall[]
      // Both batches only through the Runner: the payment is taken in its own call, then the calls run.
      const executor = getAddress(config.runner.contract)
      const legFor = (amount: bigint) => encodeTransfer({ token: token.address, to: payee, amount }) as CaliburCall
      const paymentTypedDataFor = (amount: bigint): CaliburTypedData =>
        caliburTypedData({ domain, batch: paymentBatch(legFor(amount)), nonce, deadline: BigInt(deadline), executor })
      const typedData = caliburTypedData({ domain, batch: ownCallsBatch(ownCalls), nonce: callsNonce, deadline: BigInt(deadline), executor })
      const { amount, measured } = await priceLeg(pricer, (amount) =>
        measureSignedBatches(
          network,
          account,
          calibur,
          { payment: paymentTypedDataFor(amount).message, calls: typedData.message },
          { leg: legFor(amount), ownCalls },
          token,
          payee,
          amount,
          feePerGas,
          stateOverride,
          viemAuthorizations(args.authorizationList),
        ),
      )
      const paymentTypedData = paymentTypedDataFor(amount)
      const authorizations = stateOverride ? (args.authorizationList?.length ?? 0) : 0
      const expected = expectedBatchCharge(network, { ...measured, callGasUsed: measured.accountGas, authorizations }, pricer, amount, refunds)

      const amountFormatted = formatUnits(amount, token.decimals)
      const approvalWords = describeApprovals(network, added)
      const summary =
        `First, a batch of its own: ${amountFormatted} ${token.symbol} from ${account} to Bruno's payee ${payee} for the gas; it is paid ` +
        `even if the calls then fail. Then, all or nothing: approvals added: ${approvalWords}; ` +
        `your ${calls.length} call${calls.length === 1 ? '' : 's'} (to ${calls.map((call) => shortAddress(call.to)).join(', ')}). ` +
        `Valid until ${new Date(deadline * 1000).toISOString()} (unix ${deadline}); nonce key ${key}, seq ${seq} (payment) and ${seq + 1n} (calls).` +
        (stateOverride ? ' The account is delegated to Calibur in the same transaction (authorizationList).' : '')
      return {
        paymentTypedData: paymentTypedData as never,
        typedData: typedData as never,
        summary,
        payment: { token: token.address, symbol: token.symbol, amount: amountFormatted, amountBaseUnits: amount.toString(), payee, expectedChargeBaseUnits: expected.toString() },
        calls: ownCalls,
        approvalsAdded: added,
        ...(stateOverride ? { authorizationList: args.authorizationList } : {}),
        nonce: nonce.toString(),
        deadline,
        gas: { estimated: measured.gas.toString(), ownerPath: measured.ownerGas.toString(), feePerGasWei: feePerGas.toString(), marginBps },
      }
    },
  })

