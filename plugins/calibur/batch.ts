import { Type, type TSchema } from '@sinclair/typebox'
import { concat, erc20Abi, formatUnits, getAddress, isAddress, isAddressEqual, type Address, type Client, type Hex, type StateOverride } from 'viem'
import { readContract } from 'viem/actions'
import { recoverAuthorizationAddress } from 'viem/utils'
import {
  Address as AddressSchema,
  ApprovalRequest,
  Approvals,
  AuthorizationList,
  BaseUnits,
  Call,
  Calls,
  calldataGas,
  defineTool,
  described,
  encodeApprove,
  encodeRunnerCall,
  encodeTransfer,
  GasUnits,
  HexData,
  Nonce,
  payerShortfall,
  readL1DataFee,
  requireAddress,
  requireToken,
  sameShapeAs,
  revertReason,
  runnerGasLimit,
  stipendFor,
  TokenAmount,
  ToolError,
  UnixSeconds,
  UnixSecondsDecimal,
  viemAuthorizations,
  type Approval,
  type Network,
  type SignedAuthorization,
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

// Fields of a builder's transactionRequest that mean nothing inside a batch: the account's own
// call carries no gas, fee, nonce or sender of its own. Accepted as they come (the body limit
// bounds them), so a builder's output can be passed as it is, and ignored.
const Ignored = Type.Optional(Type.Unknown())

const BatchCall = Type.Object(
  {
    to: AddressSchema,
    value: Type.Optional(Type.String({ pattern: '^(0x[0-9a-fA-F]{1,64}|[0-9]{1,78})$', description: 'wei, decimal or 0x-hex (default 0)' })),
    data: Type.Optional(HexData),
    chainId: Type.Optional(Type.Union([Type.Integer({ minimum: 0 }), Type.String({ pattern: '^(0x[0-9a-fA-F]{1,16}|[0-9]{1,20})$' })])),
    gas: Ignored,
    gasLimit: Ignored,
    gasPrice: Ignored,
    maxFeePerGas: Ignored,
    maxPriorityFeePerGas: Ignored,
    from: Ignored,
    nonce: Ignored,
    type: Ignored,
  },
  { additionalProperties: false },
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
/** The Runner's own work besides the two calls (operator and delegation checks, two cold balance reads). */
const RUNNER_BATCH_GAS = 20_000n
/** Stands in for the signature when encoding the runner's calldata to count it: 65 nonzero bytes, the most it can cost. */
const PLACEHOLDER_SIGNATURE: Hex = `0x${'ff'.repeat(65)}`
/**
 * Intrinsic gas of one EIP-7702 authorization in the runner's transaction (PER_EMPTY_ACCOUNT_COST;
 * 12,500 of it is refunded when the account exists, which the estimate does not count on).
 */
export const AUTHORIZATION_GAS = 25_000n
const DELEGATION_PREFIX = '0xef0100'

/**
 * For a batch whose account is delegated to Calibur by an EIP-7702 authorization sent in the same
 * runner transaction (submit's authorizationList): checks that the list is the account's one
 * authorization to the network's Calibur, for this chain (or any), signed by the account, at the
 * account's current EOA nonce (the runner, not the account, sends the transaction), and returns
 * the state override that shows the account delegated, to read its domain and nonce and measure
 * the batch as they will be. No list: `undefined`.
 *
 * @example
 * await delegationOverride(network, account, [signedAuthorization])
 * // [{ address: account, code: '0xef0100000000005c84f8fd50b21cac312528a64437030e' }]
 */
export async function delegationOverride(
  network: Network,
  account: Address,
  authorizationList: readonly SignedAuthorization[] | undefined,
): Promise<StateOverride | undefined> {
  if (!authorizationList || authorizationList.length === 0) return undefined
  const { config } = network
  const calibur = getAddress(config.calibur)
  const [item] = authorizationList
  if (authorizationList.length > 1 || !item) throw new ToolError('authorizationList: give only the account\'s own authorization to Calibur')
  if (!isAddressEqual(getAddress(item.address), calibur)) {
    throw new ToolError(`authorizationList[0] delegates to ${item.address}, not to Calibur (${calibur})`)
  }
  if (item.chainId !== 0 && item.chainId !== config.chainId) {
    throw new ToolError(`authorizationList[0] is for chain ${item.chainId}, not ${config.name} (${config.chainId})`)
  }
  let signer: Address
  try {
    signer = await recoverAuthorizationAddress({ authorization: viemAuthorizations([item])![0]! })
  } catch {
    throw new ToolError('authorizationList[0] has a bad signature: it recovers to no address')
  }
  if (!isAddressEqual(signer, account)) throw new ToolError(`authorizationList[0] is signed by ${signer}, not by the account ${account}`)
  const [nonce, code] = await Promise.all([network.client.getTransactionCount({ address: account }), network.client.getCode({ address: account })])
  if (item.nonce !== nonce) {
    throw new ToolError(
      `authorizationList[0] carries nonce ${item.nonce}; the account's EOA nonce is ${nonce}. Bruno's runner sends the ` +
        'transaction, not the account, so the authorization must carry the account\'s current nonce',
    )
  }
  if (code && code !== '0x' && !code.toLowerCase().startsWith(DELEGATION_PREFIX)) throw new ToolError(`${account} is a contract: it cannot be delegated`)
  return [{ address: account, code: `${DELEGATION_PREFIX}${calibur.slice(2).toLowerCase()}` as Hex }]
}

/**
 * Refuses an account not delegated to the network's Calibur (no authorizationList given), naming
 * the fix: its signed 7702 authorization in authorizationList, or a signed transfer instead. Read
 * before the account's domain and nonce, which an undelegated account cannot answer (viem would
 * say only `getSeq returned no data`).
 *
 * @example
 * await requireDelegated(network, '0x7099…79C8') // throws ToolError('0x7099…79C8 has no code: it is not delegated to Calibur (0x…). Delegate it first: …')
 */
export async function requireDelegated(network: Network, account: Address): Promise<void> {
  const calibur = getAddress(network.config.calibur)
  const code = await network.client.getCode({ address: account })
  if (code && code.toLowerCase() === `${DELEGATION_PREFIX}${calibur.slice(2)}`.toLowerCase()) return
  const what = !code || code === '0x' ? 'has no code' : code.toLowerCase().startsWith(DELEGATION_PREFIX) ? `is delegated to 0x${code.slice(8)}` : 'is a contract'
  throw new ToolError(
    `${account} ${what}: it is not delegated to Calibur (${calibur}). Delegate it first: have its wallet sign an EIP-7702 ` +
      'authorization to Calibur (nonce = its current EOA nonce) and pass it as authorizationList to calibur_batch, ' +
      'calibur_execute and submit (the runner sends it in the same transaction), or pay with a signed USDC transfer (payment_authorization)',
  )
}

/**
 * The account's Calibur domain and the next seq of a nonce key, as read now — or, with a
 * delegation override, as they will read once the authorization has delegated the account.
 *
 * @example
 * await readCaliburState(network, account, 0n, undefined) // { domain: { chainId, account, salt }, seq: 3n }
 */
export async function readCaliburState(
  network: Network,
  account: Address,
  key: bigint,
  stateOverride: StateOverride | undefined,
): Promise<{ domain: CaliburDomain; seq: bigint }> {
  const { client } = network
  if (!stateOverride) await requireDelegated(network, account)
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
 * await measureSignedBatches(network, account, { payment, calls }, { leg, ownCalls }, usdc, payee, 1234n, feePerGas)
 * // { ownerGas: 96987n, paymentGas: 81000n, accountGas: 90123n, gas: 231612n, l1FeeWei: 0n }
 */
export async function measureSignedBatches(
  network: Network,
  account: Address,
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
  const paymentData = encodeSignedExecute({ message: messages.payment, signature: PLACEHOLDER_SIGNATURE })
  const callsData = encodeSignedExecute({ message: messages.calls, signature: PLACEHOLDER_SIGNATURE })
  const runnerData = encodeRunnerCall(
    {
      form: 'batch',
      account,
      delegate: getAddress(network.config.calibur),
      target: account,
      paymentData,
      paymentGas: CALIBUR_PAYMENT_GAS,
      data: callsData,
      token: token.address,
      payee,
      amount,
    },
    callGas,
  )
  const gas = runnerGasLimit({
    runnerData,
    copiedData: concat([paymentData, callsData]),
    beforeCall: RUNNER_BATCH_GAS + paymentGas,
    callGas,
    authorizationGas: stateOverride ? AUTHORIZATION_GAS : 0n,
    gasLimitBps: network.config.runner.gasLimitBps,
  })
  const l1FeeWei = await readL1DataFee(network, {
    to: getAddress(network.config.runner.contract),
    data: runnerData,
    gas,
    nonce: 0,
    maxFeePerGas: feePerGas,
    maxPriorityFeePerGas: feePerGas,
    ...(authorizations ? { authorizationList: authorizations } : {}),
  })
  return { ownerGas, paymentGas, accountGas, gas, l1FeeWei }
}

/** A call's value as a decimal string, from decimal or 0x-hex. */
function valueOf(value: string | undefined): string {
  if (value === undefined) return '0'
  return BigInt(value).toString()
}

function chainIdOf(value: number | string): number {
  return typeof value === 'number' ? value : Number(BigInt(value))
}

// An approval's amount in whole units for a configured token, else in base units of the address.
function describeAmount(network: Network, approval: Approval): string {
  const configured = network.config.tokens.find((token) => isAddressEqual(getAddress(token.address), getAddress(approval.token)))
  if (!configured) return `${approval.amountBaseUnits} base units of ${approval.token}`
  return `${formatUnits(BigInt(approval.amountBaseUnits), configured.decimals)} ${configured.symbol}`
}

function short(address: Address): string {
  return `${address.slice(0, 6)}…${address.slice(-4)}`
}

/**
 * `calibur_batch`: wraps an account's calls (any helper's `calls`, a builder's transactionRequest)
 * into two Calibur signed batches — one that only pays Bruno (`paymentBatch`), and the calls after it
 * at the next nonce (`ownCallsBatch`) — measured and priced, as typed data for the account's wallet
 * to sign.
 *
 * @example
 * registry.addGroup({ name: 'calibur', order: 20, instructions, tools: [caliburBatch(app.bruno.chainArgument), …] })
 */
export const caliburBatch = (chain: TSchema) =>
  defineTool({
    name: 'calibur_batch',
    title: 'Prepare a Calibur batch',
    description:
      'Wraps the account\'s calls for Calibur (EIP-7702) as two batches to sign: paymentTypedData pays Bruno in ' +
      '`token`, then typedData runs the calls all or nothing (paid even if they fail on chain). `calls`: helpers\' ' +
      'calls or a builder\'s transactionRequest (gas, fee, from, nonce ignored). ' +
      '`approvals` add an approve where short. Not delegated: pass its EIP-7702 authorization as authorizationList.',
    input: Type.Object(
      {
        chain,
        account: { ...AddressSchema, description: 'makes the calls and signs' },
        calls: Type.Array(BatchCall, { minItems: 1, maxItems: 64, description: 'in order' }),
        approvals: Type.Optional(Type.Array(ApprovalRequest, { maxItems: 16 })),
        token: Type.String({ minLength: 1, maxLength: 42, description: 'the token to pay in' }),
        deadline: Type.Optional(Type.Integer({ minimum: 1, description: 'unix seconds (default: now + the submission ttl)' })),
        nonceKey: Type.Optional(Type.String({ pattern: '^[0-9]{1,58}$', description: 'Calibur nonce key, decimal (default 0)' })),
        authorizationList: Type.Optional({ ...AuthorizationList, maxItems: 1, description: 'the account\'s, to Calibur, if not yet delegated' }),
      },
      { additionalProperties: false },
    ),
    output: Type.Object(
      {
        paymentTypedData: sameShapeAs(CaliburTypedDataSchema, 'typedData', 'the payment batch'),
        typedData: { ...CaliburTypedDataSchema, description: 'the calls batch, EIP-712: sign both unchanged' },
        summary: Type.String({ description: 'the batch in words' }),
        payment: Type.Object(
          {
            token: AddressSchema,
            symbol: Type.String(),
            amount: described(TokenAmount, 'whole token units'),
            amountBaseUnits: BaseUnits,
            payee: AddressSchema,
          },
          { additionalProperties: false, description: 'the payment batch pays it' },
        ),
        calls: { ...Calls, description: 'as signed: approvals added, then the given calls' },
        approvalsAdded: Approvals,
        authorizationList: Type.Optional({ ...AuthorizationList, description: 'pass on to calibur_execute and submit' }),
        nonce: { ...Nonce, description: 'the payment batch\'s' },
        deadline: UnixSeconds,
        gas: Type.Object(
          {
            estimated: { ...GasUnits, description: 'the runner transaction\'s' },
            ownerPath: { ...GasUnits, description: 'measured' },
            feePerGasWei: BaseUnits,
            marginBps: Type.Integer(),
          },
          { additionalProperties: false },
        ),
      },
      { additionalProperties: false },
    ),
    annotations: { readOnlyHint: true, openWorldHint: true },
    handler: async (args, { networks, payment }) => {
      // The schema admits only configured network names.
      const network = networks.get(args.chain as string)
      const { client, config } = network
      const account = requireAddress(args.account, 'account')
      const token = payment.token(network.name, args.token)
      const payee = getAddress(config.payee)

      const calls: CaliburCall[] = args.calls.map((call, index) => {
        if (call.chainId !== undefined && chainIdOf(call.chainId) !== config.chainId) {
          throw new ToolError(`calls[${index}] is for chain ${chainIdOf(call.chainId)}, not ${config.name} (${config.chainId}): ask the builder for this chain`)
        }
        return { to: requireAddress(call.to, `calls[${index}].to`), value: valueOf(call.value), data: (call.data ?? '0x') as Hex }
      })

      // Without an authorization list, readCaliburState refuses an account not delegated to Calibur.
      const stateOverride = await delegationOverride(network, account, args.authorizationList)
      const key = BigInt(args.nonceKey ?? '0')
      const now = Math.floor(Date.now() / 1000)
      const deadline = args.deadline ?? now + config.relay.submissionTtlSec
      if (deadline <= now) throw new ToolError(`the deadline ${deadline} has passed (now ${now})`)

      const approvals = (args.approvals ?? []).map((approval, index) => ({
        // An address keeps its checksum check; a symbol is the configured token's.
        token: isAddress(approval.token, { strict: false }) ? requireAddress(approval.token, `approvals[${index}].token`) : requireToken(network.config, approval.token).address,
        spender: requireAddress(approval.spender, `approvals[${index}].spender`),
        amount: BigInt(approval.amountBaseUnits),
      }))
      const [{ domain, seq }, allowances, pricer] = await Promise.all([
        readCaliburState(network, account, key, stateOverride),
        Promise.all(
          approvals.map((approval) =>
            client.readContract({ address: approval.token, abi: erc20Abi, functionName: 'allowance', args: [account, approval.spender] }),
          ),
        ),
        payment.pricer(network.name, token.address),
      ])
      const nonce = caliburNonce(key, seq)
      const callsNonce = caliburNonce(key, seq + 1n)
      const added: Approval[] = []
      const approveCalls: CaliburCall[] = []
      approvals.forEach((approval, index) => {
        if (allowances[index]! >= approval.amount) return
        added.push({ token: approval.token, spender: approval.spender, amountBaseUnits: approval.amount.toString() })
        approveCalls.push(encodeApprove(approval) as CaliburCall)
      })

      const { feePerGas, marginBps } = pricer
      const priced = ({ gas, l1FeeWei }: BatchMeasurement) => {
        const amount = pricer.amountFor(gas, l1FeeWei)
        return amount > 0n ? amount : 1n
      }
      const ownCalls = [...approveCalls, ...calls]
      // Both batches only through the Runner: the payment is taken in its own call, then the calls run.
      const executor = getAddress(config.runner.contract)
      const legFor = (amount: bigint) => encodeTransfer({ token: token.address, to: payee, amount }) as CaliburCall
      const paymentTypedDataFor = (amount: bigint): CaliburTypedData =>
        caliburTypedData({ domain, batch: paymentBatch(legFor(amount)), nonce, deadline: BigInt(deadline), executor })
      const typedData = caliburTypedData({ domain, batch: ownCallsBatch(ownCalls), nonce: callsNonce, deadline: BigInt(deadline), executor })
      // Measured twice: with a provisional leg of one base unit, then with the leg it priced (which
      // also checks the account can pay it). The larger price is kept.
      const measure = (amount: bigint) =>
        measureSignedBatches(
          network,
          account,
          { payment: paymentTypedDataFor(amount).message, calls: typedData.message },
          { leg: legFor(amount), ownCalls },
          token,
          payee,
          amount,
          feePerGas,
          stateOverride,
          viemAuthorizations(args.authorizationList),
        )
      const provisional = await measure(1n)
      let amount = priced(provisional)
      const measured = await measure(amount)
      if (priced(measured) > amount) amount = priced(measured)
      const paymentTypedData = paymentTypedDataFor(amount)

      const amountFormatted = formatUnits(amount, token.decimals)
      const approvalWords = added.length
        ? added.map((approval) => `approve ${short(approval.spender as Address)} for ${describeAmount(network, approval)}`).join('; ')
        : 'none needed'
      const summary =
        `First, a batch of its own: ${amountFormatted} ${token.symbol} from ${account} to Bruno's payee ${payee} for the gas; it is paid ` +
        `even if the calls then fail. Then, all or nothing: approvals added: ${approvalWords}; ` +
        `your ${calls.length} call${calls.length === 1 ? '' : 's'} (to ${calls.map((call) => short(call.to)).join(', ')}). ` +
        `Valid until ${new Date(deadline * 1000).toISOString()} (unix ${deadline}); nonce key ${key}, seq ${seq} (payment) and ${seq + 1n} (calls).` +
        (stateOverride ? ' The account is delegated to Calibur in the same transaction (authorizationList).' : '')
      return {
        paymentTypedData: paymentTypedData as never,
        typedData: typedData as never,
        summary,
        payment: { token: token.address, symbol: token.symbol, amount: amountFormatted, amountBaseUnits: amount.toString(), payee },
        calls: ownCalls,
        approvalsAdded: added,
        ...(stateOverride ? { authorizationList: args.authorizationList } : {}),
        nonce: nonce.toString(),
        deadline,
        gas: { estimated: measured.gas.toString(), ownerPath: measured.ownerGas.toString(), feePerGasWei: feePerGas.toString(), marginBps },
      }
    },
  })

