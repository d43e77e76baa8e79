import { Type, type TSchema } from '@sinclair/typebox'
import { formatUnits, getAddress, isAddressEqual, zeroAddress, zeroHash, type Hex } from 'viem'
import { authorizationListAs, defineTool, ExecutedBatch, passedBack, requireAddress, requirePinnedPayment, ToolError, type Network } from '../../core/plugin.ts'
import { caliburWords } from './errors.ts'
import { CaliburTypedDataSchema, delegationOverride, readCaliburState } from './batch.ts'
import { encodeSignedExecute, recoverCaliburSigner } from './executeCalldata.ts'
import type { CaliburOn } from './networkOptions.ts'
import { splitCaliburNonce } from './nonce.ts'
import { readPaymentBatch, requireInOrder } from './paymentFirstBatch.ts'
import { caliburTypedData, caliburTypes, type CaliburBatch, type CaliburCall, type CaliburDomain, type CaliburTypedData } from './typedData.ts'

type GivenTypedData = {
  domain: { chainId: number; verifyingContract: string; salt: string }
  types: unknown
  message: {
    batchedCall: { calls: { to: string; value: string; data: string }[]; revertOnFailure: boolean }
    nonce: string
    keyHash: string
    executor: string
    deadline: string
  }
}

/**
 * Checks one signed batch as Calibur will run it from the Runner: for this chain, Calibur's types,
 * an executor that lets the Runner run it, the root key, a deadline ahead, the account's domain salt
 * as read now, and the account's own signature. Returns the typed data rebuilt from the account's
 * domain (what Calibur hashes).
 */
async function checkSignedBatch(network: Network, domain: CaliburDomain, given: GivenTypedData, signature: Hex, which: string): Promise<CaliburTypedData> {
  const { config } = network
  const account = domain.account
  if (given.domain.chainId !== config.chainId) {
    throw new ToolError(`the ${which} is signed for chain ${given.domain.chainId}, not ${config.name} (${config.chainId})`)
  }
  if (!isAddressEqual(getAddress(given.domain.verifyingContract), account)) {
    throw new ToolError(`the ${which} is signed for ${given.domain.verifyingContract}, not the account ${account}: both batches are the same account's`)
  }
  if (JSON.stringify(given.types) !== JSON.stringify(caliburTypes)) {
    throw new ToolError(`the ${which}'s types are not Calibur's: pass the typed data calibur_batch returned, unchanged`)
  }
  const { message } = given
  if (!isAddressEqual(getAddress(message.executor), zeroAddress) && !isAddressEqual(getAddress(message.executor), getAddress(config.runner.contract))) {
    throw new ToolError(`the ${which} may only be executed by ${message.executor}, not by Bruno's runner`)
  }
  if (message.keyHash.toLowerCase() !== zeroHash) {
    throw new ToolError(`the ${which} names a registered key (keyHash is not zero): Bruno relays batches signed by the account's own (root) key only`)
  }
  const deadline = BigInt(message.deadline)
  const now = BigInt(Math.floor(Date.now() / 1000))
  if (deadline !== 0n && deadline <= now) {
    throw new ToolError(`the ${which}'s deadline ${deadline} has passed (now ${now}): prepare the batches again with calibur_batch and sign anew`)
  }
  if (domain.salt.toLowerCase() !== given.domain.salt.toLowerCase()) {
    throw new ToolError(`the ${which}'s domain salt ${given.domain.salt} is not the account's now (${domain.salt}): prepare the batches again with calibur_batch`)
  }
  const typedData: CaliburTypedData = caliburTypedData({
    domain,
    batch: message.batchedCall as CaliburBatch,
    nonce: BigInt(message.nonce),
    deadline,
    executor: message.executor as Hex,
    keyHash: message.keyHash as Hex,
  })
  let signer
  try {
    signer = await recoverCaliburSigner(typedData, signature)
  } catch (error) {
    throw new ToolError(`bad signature of the ${which}: it is not a valid secp256k1 signature (${(error as Error).message.split('\n')[0]})`)
  }
  if (!isAddressEqual(signer, account)) {
    throw new ToolError(
      `the ${which}'s signature recovers to ${signer}, not the account ${account}: the account's own key must sign the typed data, unchanged ` +
        '(smart-wallet signers, ERC-1271 / ERC-6492, cannot sign a Calibur batch)',
    )
  }
  return typedData
}

const Signature = Type.String({ pattern: '^0x[0-9a-fA-F]{130}$', description: 'by the account\'s own key' })

/**
 * `calibur_execute`: takes back the two batches calibur_batch prepared, whole, each with the
 * account's signature; checks them as Calibur will (domain, signer, nonces in order, deadline) and
 * that the payment batch only pays, and returns the call and payment for submit; Calibur is at
 * `caliburOn(network)`.
 *
 * @example
 * tools: [caliburExecute(services.chainArgument, optionsOn), …]
 */
export const caliburExecute = (chain: TSchema, caliburOn: CaliburOn) =>
  defineTool({
    name: 'calibur_execute',
    title: 'Check signed Calibur batches',
    description:
      'Takes calibur_batch\'s paymentTypedData and typedData, unchanged, with the account\'s signature of each; checks ' +
      'them as Calibur will and that the payment batch only pays; returns `call` and `payment` for submit. Pass ' +
      'calibur_batch\'s authorizationList too, if any.',
    input: Type.Object(
      {
        chain,
        paymentTypedData: passedBack(CaliburTypedDataSchema, 'calibur_batch\'s paymentTypedData'),
        paymentSignature: Signature,
        typedData: passedBack(CaliburTypedDataSchema, 'calibur_batch\'s typedData'),
        signature: Signature,
        authorizationList: Type.Optional(authorizationListAs('as given to calibur_batch', 1)),
      },
      { additionalProperties: false },
    ),
    output: ExecutedBatch,
    annotations: { readOnlyHint: true, openWorldHint: true },
    handler: async (args, { networks, payment: payments }) => {
      // The schema admits only configured network names.
      const network = networks.get(args.chain as string)
      const account = requireAddress(args.paymentTypedData.domain.verifyingContract, 'paymentTypedData.domain.verifyingContract')
      const paymentNonce = BigInt(args.paymentTypedData.message.nonce)
      requireInOrder(paymentNonce, BigInt(args.typedData.message.nonce))
      const payment = readPaymentBatch(network, payments, {
        calls: args.paymentTypedData.message.batchedCall.calls as CaliburCall[],
        revertOnFailure: args.paymentTypedData.message.batchedCall.revertOnFailure,
      })

      const { key, seq } = splitCaliburNonce(paymentNonce)
      const calibur = caliburOn(network)
      const stateOverride = await delegationOverride(network, account, args.authorizationList, calibur)
      const { domain, seq: current } = await readCaliburState(network, account, key, stateOverride, calibur)
      if (seq < current) {
        throw new ToolError(`the payment batch's nonce (key ${key}, seq ${seq}) was used already (the account is at seq ${current}): these batches ran, or others took their place`)
      }
      if (seq > current) {
        throw new ToolError(`the payment batch's nonce (key ${key}, seq ${seq}) skips ahead of the account's (seq ${current}): it cannot run until the batches before it do`)
      }
      const paid = await checkSignedBatch(network, domain, args.paymentTypedData, args.paymentSignature as Hex, 'payment batch')
      const calls = await checkSignedBatch(network, domain, args.typedData, args.signature as Hex, 'calls batch')

      const paymentBatch = encodeSignedExecute({ message: paid.message, signature: args.paymentSignature as Hex })
      await requirePinnedPayment(network, { account, delegate: calibur, target: account, paymentData: paymentBatch }, caliburWords)
      const paymentFormatted = `${formatUnits(payment.amount, payment.decimals)} ${payment.symbol}`
      const withAuthorization = stateOverride !== undefined
      return {
        call: { to: account, data: encodeSignedExecute({ message: calls.message, signature: args.signature as Hex }) },
        payment: {
          token: payment.token,
          amountBaseUnits: payment.amount.toString(),
          batch: paymentBatch,
        },
        ...(withAuthorization ? { authorizationList: args.authorizationList } : {}),
        account,
        paymentFormatted,
        next:
          `call submit with {chain: "${network.name}", call, payment${withAuthorization ? ', authorizationList' : ''}} as given here; ` +
          'then poll status with the id it returns until done',
      }
    },
  })
