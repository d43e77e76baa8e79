import { decodeEventLog, getAddress, isAddressEqual, type Abi, type Address, type Hex, type Log } from 'viem'
import { readPaymentLeg, ToolError, type BatchTerms, type Delegate, type DelegateWords, type Network, type PaymentServices, type RelayCall } from 'bruno/plugin'
import { encodeExecuteBatch, ENTRY_POINT, entryPointAbi, isEmpty, nonceParts, readExecuteBatch, readHandleOps, simple7702Abi, type UserOperation } from './entryPoint.ts'
import { GATE_VERIFICATION_GAS, gatedPaymasterAndData, runnerGateAbi } from './runnerGate.ts'

/**
 * What the EntryPoint spends on one operation beside the account's own validation and calls: the
 * bundle's frame, the nonce check and write (from zero on a key's first use), the inner call and
 * the event. Measured on the devnet's EntryPoint v0.8 (test/group.test.mjs prints it), with room.
 */
export const ENTRY_POINT_OVERHEAD = 80_000n
/** The account's `validateUserOp`: one ecrecover and the EntryPoint's checks of it. */
export const VERIFICATION_GAS = 50_000n
/** The payment operation's one transfer, run by the account's `executeBatch`. */
export const PAYMENT_CALL_GAS = 60_000n

const rebuild = 'build them with simple7702_batch and pass what simple7702_execute returned'

/** Simple7702 as the relay's texts name it. */
export const simple7702Words: DelegateWords = {
  name: 'Simple7702',
  tools: { batch: 'simple7702_batch', execute: 'simple7702_execute' },
  errors: {
    abi: [...entryPointAbi, ...simple7702Abi, ...runnerGateAbi].filter((item) => item.type === 'error') as Abi,
    describe(name, args, nested) {
      if (name === 'FailedOp') return `the EntryPoint refused the operation: ${String(args[1])} (FailedOp)`
      if (name === 'FailedOpWithRevert') return `the EntryPoint refused the operation: ${String(args[1])}: ${nested(args[2] as Hex)} (FailedOpWithRevert)`
      if (name === 'ExecuteError') return `call ${String(args[0])} of the batch failed: ${nested(args[1] as Hex)}`
      if (name === 'NotRunnersPayment') return `the payment operation of ${String(args[0])} runs only in Bruno's Runner's payment phase for it (RunnerGate)`
      return undefined
    },
  },
}

/**
 * Checks an operation is one Bruno relays: the account's own signature, no fee, no init code, and
 * the paymaster `paymasterAndData` names — the gate for the payment operation, none for the calls.
 * simple7702_execute and the relay's `read` both ask it.
 */
export function requireRelayable(op: UserOperation, which: string, paymasterAndData: Hex): void {
  if (op.maxFeePerGas !== 0n || op.maxPriorityFeePerGas !== 0n) throw new ToolError(`the ${which} sets a gas fee: Bruno's operations pay no fee (its payment pays Bruno): ${rebuild}`)
  if (op.paymasterAndData.toLowerCase() !== paymasterAndData.toLowerCase()) {
    throw new ToolError(
      isEmpty(paymasterAndData)
        ? `the ${which} names a paymaster: ${rebuild}`
        : `the ${which} does not name the RunnerGate (${paymasterAndData.slice(0, 42)}) as its paymaster: any bundler could run it, or spend its nonce, before Bruno's Runner: ${rebuild}`,
    )
  }
  if (!isEmpty(op.initCode)) throw new ToolError(`the ${which} carries init code: the account is delegated by an EIP-7702 authorization instead (authorizationList)`)
}

/**
 * Simple7702 as the relay knows it: an account delegated to `Simple7702Account` (`implementation`)
 * pays with one signed UserOperation that only pays Bruno, pinned to the Runner's payment phase by
 * `gate` (a RunnerGate, its paymaster), then runs its calls in a second, at the next nonce of the same key; the Runner sends each to the EntryPoint (`handleOps`, beneficiary the
 * account itself: the operations pay no fee, and the EntryPoint sends the beneficiary its zero, which a
 * contract payee such as a PayeeVault, with no `receive`, would refuse). The EntryPoint catches a failing operation and goes on, so the
 * calls' outcome is read from its `UserOperationEvent`, and it reserves the operation's signed gas
 * limits before running it: the stipend is at least that.
 *
 * @example
 * simple7702Delegate(services.payment, implementation, gate).read(network, { to: ENTRY_POINT, data: handleOpsOfCalls }, handleOpsOfPayment)
 */
export function simple7702Delegate(payments: PaymentServices, implementation: Address, gate: Address): Delegate {
  const gated = gatedPaymasterAndData(gate)
  return {
    ...simple7702Words,
    address: () => implementation,
    nextNonce: (network, account) => network.client.readContract({ address: ENTRY_POINT, abi: entryPointAbi, functionName: 'getNonce', args: [account, 0n] }),
    callSpends(network, call) {
      if (!isAddressEqual(getAddress(call.to), ENTRY_POINT)) return undefined
      const read = readHandleOps(call.data as Hex)
      return typeof read === 'object' ? `simple7702:${network.name}:${read.op.sender}:${read.op.nonce}` : undefined
    },
    read(network: Network, call: RelayCall, paymentData: Hex | undefined): BatchTerms | undefined {
      if (!isAddressEqual(getAddress(call.to), ENTRY_POINT)) return undefined
      const calls = readHandleOps(call.data as Hex)
      if (calls === undefined) return undefined
      if (typeof calls === 'string') throw new ToolError(`the call is not a Simple7702 operation for Bruno: ${calls}: ${rebuild}`)
      if (paymentData === undefined) throw new ToolError('the payment has no `batch`: a Simple7702 call is paid by its signed payment operation, simple7702_execute\'s payment.batch')
      const payment = readHandleOps(paymentData)
      if (typeof payment !== 'object') throw new ToolError(`the payment's \`batch\` is not handleOps of one operation: ${rebuild}`)
      for (const [read, which, paymaster] of [[payment, 'payment operation', gated], [calls, 'calls operation', '0x']] as const) {
        requireRelayable(read.op, which, paymaster)
        if (!isAddressEqual(read.beneficiary, read.op.sender)) throw new ToolError(`the ${which}'s bundle pays ${read.beneficiary}, not the account ${read.op.sender}: ${rebuild}`)
      }
      const payee = getAddress(network.config.payee)
      const account = payment.op.sender
      if (!isAddressEqual(calls.op.sender, account)) throw new ToolError(`the operations are for ${account} and ${calls.op.sender}: both must be the account's`)
      const [paid, next] = [nonceParts(payment.op.nonce), nonceParts(calls.op.nonce)]
      if (paid.key !== next.key || next.seq !== paid.seq + 1n) {
        throw new ToolError(`the calls operation's nonce must be right after the payment operation's (key ${paid.key}, seq ${paid.seq + 1n}), so that it runs only after the payment: ${rebuild}`)
      }
      const legs = readExecuteBatch(payment.op.callData)
      const leg = legs?.[0]
      if (!legs || !leg || legs.length !== 1) throw new ToolError(`the payment operation is not payment-only: its callData is not executeBatch of one call: ${rebuild}`)
      const terms = readPaymentLeg(network, payments, { to: leg.target, value: leg.value, data: leg.data })
      if (typeof terms === 'string') throw new ToolError(`the payment operation is not payment-only: ${terms}: ${rebuild}`)
      const own = readExecuteBatch(calls.op.callData)
      if (!own) throw new ToolError(`the calls operation's callData is not executeBatch: ${rebuild}`)
      return {
        account,
        delegate: implementation,
        target: ENTRY_POINT,
        paymentData,
        paymentGas: payment.op.verificationGasLimit + GATE_VERIFICATION_GAS + payment.op.callGasLimit + ENTRY_POINT_OVERHEAD,
        token: terms.token,
        payee,
        amount: terms.amount,
        deadline: 0n,
        identity: `simple7702:${network.name}:${account}:${payment.op.nonce}`,
        ownCalls: { from: account, to: account, data: encodeExecuteBatch([leg, ...own]) },
        // The EntryPoint runs an operation only if the gas left covers its signed limits (else AA95).
        callGasFloor: ((calls.op.verificationGasLimit + calls.op.callGasLimit + calls.op.preVerificationGas + ENTRY_POINT_OVERHEAD) * 64n) / 63n,
        swallowedFailure: (logs: readonly Log[]) => swallowedFailure(logs, account, calls.op.nonce),
      }
    },
  }
}

// The calls operation's UserOperationEvent: a failure the EntryPoint caught, in words.
function swallowedFailure(logs: readonly Log[], sender: Address, nonce: bigint): string | undefined {
  let failed = false
  let reason: Hex | undefined
  for (const log of logs) {
    if (!isAddressEqual(log.address, ENTRY_POINT)) continue
    try {
      const event = decodeEventLog({ abi: entryPointAbi, data: log.data, topics: log.topics })
      if (event.eventName === 'UserOperationEvent' && isAddressEqual(event.args.sender, sender) && event.args.nonce === nonce) failed = !event.args.success
      if (event.eventName === 'UserOperationRevertReason' && isAddressEqual(event.args.sender, sender) && event.args.nonce === nonce) reason = event.args.revertReason
    } catch {
      // Another event of the EntryPoint's: not this operation's outcome.
    }
  }
  if (!failed) return undefined
  return `the EntryPoint ran the operation and it reverted${reason && reason !== '0x' ? ` (revert data ${reason.slice(0, 138)})` : ''}`
}
