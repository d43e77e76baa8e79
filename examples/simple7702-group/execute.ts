import { AuthorizationList, CallPayment, defineTool, passedBack, readPaymentLeg, RelayCall, requireAddress, ToolError, Type, type TSchema } from 'bruno/plugin'
import { getAddress, hexToBigInt, isAddressEqual, recoverTypedDataAddress, slice, type Address, type Hex } from 'viem'
import { UserOperationTypedData } from './batch.ts'
import { requireRelayable } from './delegate.ts'
import { readExecuteBatch, encodeHandleOps, ENTRY_POINT, userOperationTypes, type UserOperation } from './entryPoint.ts'
import { gatedPaymasterAndData } from './runnerGate.ts'

const Signature = Type.String({ pattern: '^0x[0-9a-fA-F]{130}$' })

type Given = { domain: { chainId: number; verifyingContract: string }; types: unknown; message: Record<string, string> }

/** A signed operation back from its typed data, checked for this chain and the EntryPoint, signed by the account. */
async function signedOperation(chainId: number, given: Given, signature: Hex, which: string): Promise<UserOperation> {
  if (given.domain.chainId !== chainId) throw new ToolError(`the ${which} is signed for chain ${given.domain.chainId}, not ${chainId}`)
  if (!isAddressEqual(getAddress(given.domain.verifyingContract), ENTRY_POINT)) throw new ToolError(`the ${which} is signed for ${given.domain.verifyingContract}, not the EntryPoint ${ENTRY_POINT}`)
  if (JSON.stringify(given.types) !== JSON.stringify(userOperationTypes)) throw new ToolError(`the ${which}'s types are not a v0.8 UserOperation's: pass simple7702_batch's typed data unchanged`)
  const m = given.message
  const word = (value: string) => value as Hex
  const op: UserOperation = {
    sender: requireAddress(m.sender!, `${which}.sender`),
    nonce: BigInt(m.nonce!),
    initCode: word(m.initCode!),
    callData: word(m.callData!),
    verificationGasLimit: hexToBigInt(slice(word(m.accountGasLimits!), 0, 16)),
    callGasLimit: hexToBigInt(slice(word(m.accountGasLimits!), 16, 32)),
    preVerificationGas: BigInt(m.preVerificationGas!),
    maxPriorityFeePerGas: hexToBigInt(slice(word(m.gasFees!), 0, 16)),
    maxFeePerGas: hexToBigInt(slice(word(m.gasFees!), 16, 32)),
    paymasterAndData: word(m.paymasterAndData!),
    signature,
  }
  const signer = await recoverTypedDataAddress({ ...(given as object), signature } as never).catch(() => undefined)
  if (!signer || !isAddressEqual(signer, op.sender)) throw new ToolError(`the ${which}'s signature recovers to ${signer ?? 'no address'}, not the account ${op.sender}`)
  return op
}

/**
 * `simple7702_execute`: the two operations simple7702_batch prepared, signed; returns `call` and
 * `payment` for submit: each `handleOps` of one operation, the account the bundle's beneficiary.
 * The payment operation must name `gate` as its paymaster, the calls operation none.
 *
 * @example
 * registry.addGroup({ name: 'simple7702', order: 60, instructions, tools: [simple7702Execute(chain, gate), …] })
 */
export const simple7702Execute = (chain: TSchema, gate: Address) =>
  defineTool({
    name: 'simple7702_execute',
    title: 'Check signed Simple7702 operations',
    description: 'Takes simple7702_batch\'s two typed data, unchanged, each with the account\'s signature; returns `call` and `payment` for submit.',
    input: Type.Object(
      {
        chain,
        paymentTypedData: passedBack(UserOperationTypedData, 'simple7702_batch\'s paymentTypedData'),
        paymentSignature: Signature,
        typedData: passedBack(UserOperationTypedData, 'simple7702_batch\'s typedData'),
        signature: Signature,
        authorizationList: Type.Optional({ ...AuthorizationList, maxItems: 1 }),
      },
      { additionalProperties: false },
    ),
    output: Type.Object({ call: RelayCall, payment: CallPayment, authorizationList: Type.Optional(AuthorizationList) }, { additionalProperties: false }),
    annotations: { readOnlyHint: true, openWorldHint: true },
    handler: async (args, { networks, payment: payments }) => {
      const network = networks.get(args.chain as string)
      const { config } = network
      const paying = await signedOperation(config.chainId, args.paymentTypedData as Given, args.paymentSignature as Hex, 'payment operation')
      const calling = await signedOperation(config.chainId, args.typedData as Given, args.signature as Hex, 'calls operation')
      requireRelayable(paying, 'payment operation', gatedPaymasterAndData(gate))
      requireRelayable(calling, 'calls operation', '0x')
      const [leg, ...more] = readExecuteBatch(paying.callData) ?? []
      if (!leg || more.length > 0) throw new ToolError('the payment operation is not executeBatch of one transfer: build it with simple7702_batch')
      const terms = readPaymentLeg(network, payments, { to: leg.target, value: leg.value, data: leg.data })
      if (typeof terms === 'string') throw new ToolError(`the payment operation is not payment-only: ${terms}`)
      return {
        call: { to: ENTRY_POINT, data: encodeHandleOps(calling, calling.sender) },
        payment: { token: terms.token, amountBaseUnits: terms.amount.toString(), batch: encodeHandleOps(paying, paying.sender) },
        ...(args.authorizationList ? { authorizationList: args.authorizationList } : {}),
      }
    },
  })
