import { Type, type TSchema } from '@sinclair/typebox'
import { formatUnits, getAddress, isAddressEqual, zeroAddress, zeroHash, type Hex } from 'viem'
import { Address as AddressSchema, AuthorizationList, CallPayment, defineTool, passedBack, RelayCall, requireAddress, ToolError } from '../../core/plugin.ts'
import { CaliburTypedDataSchema, delegationOverride, readCaliburState } from './batch.ts'
import { encodeSignedExecute, recoverCaliburSigner } from './executeCalldata.ts'
import { splitCaliburNonce } from './nonce.ts'
import { readPaymentFirstBatch } from './paymentFirstBatch.ts'
import { caliburTypedData, caliburTypes, type CaliburCall, type CaliburTypedData } from './typedData.ts'

/**
 * `calibur_execute`: takes back a batch calibur_batch prepared, whole, with the account's
 * signature; checks it as Calibur will (domain, signer, nonce, deadline) and returns the call and
 * payment for submit.
 *
 * @example
 * registry.addGroup({ name: 'calibur', order: 20, instructions, tools: [caliburExecute(app.bruno.chainArgument), …] })
 */
export const caliburExecute = (chain: TSchema) =>
  defineTool({
    name: 'calibur_execute',
    title: 'Check a signed Calibur batch',
    description:
      'Takes calibur_batch\'s typedData, unchanged, and the account\'s signature of it; checks what Calibur will ' +
      '(domain, signer = the account, nonce, deadline) and that the batch pays first, and returns `call` (it acts by ' +
      'the account\'s signature, so it can run from Bruno\'s Runner) and `payment` for submit, as they are. Pass ' +
      'calibur_batch\'s authorizationList here too, if it had one.',
    input: Type.Object(
      {
        chain,
        typedData: passedBack(CaliburTypedDataSchema, 'calibur_batch\'s typedData'),
        signature: Type.String({ pattern: '^0x[0-9a-fA-F]{130}$', description: 'by the account\'s own key' }),
        authorizationList: Type.Optional({ ...AuthorizationList, maxItems: 1, description: 'as given to calibur_batch' }),
      },
      { additionalProperties: false },
    ),
    output: Type.Object(
      {
        call: RelayCall,
        payment: CallPayment,
        authorizationList: Type.Optional({ ...AuthorizationList, description: 'for submit' }),
        account: AddressSchema,
        paymentFormatted: Type.String({ description: 'whole token units and symbol' }),
        next: Type.String(),
      },
      { additionalProperties: false },
    ),
    annotations: { readOnlyHint: true, openWorldHint: true },
    handler: async (args, { networks, payment: payments }) => {
      // The schema admits only configured network names.
      const network = networks.get(args.chain as string)
      const { config } = network
      const given = args.typedData
      const account = requireAddress(given.domain.verifyingContract, 'typedData.domain.verifyingContract')
      const signature = args.signature as Hex
      if (given.domain.chainId !== config.chainId) {
        throw new ToolError(`the batch is signed for chain ${given.domain.chainId}, not ${config.name} (${config.chainId})`)
      }
      if (JSON.stringify(given.types) !== JSON.stringify(caliburTypes)) {
        throw new ToolError('typedData.types are not Calibur\'s: pass the typedData calibur_batch returned, unchanged')
      }
      const { message } = given
      if (!isAddressEqual(getAddress(message.executor), zeroAddress) && !isAddressEqual(getAddress(message.executor), getAddress(config.runner.contract))) {
        throw new ToolError(`the batch may only be executed by ${message.executor}, not by Bruno's runner`)
      }
      if (message.keyHash.toLowerCase() !== zeroHash) {
        throw new ToolError('the batch names a registered key (keyHash is not zero): Bruno relays batches signed by the account\'s own (root) key only')
      }
      const deadline = BigInt(message.deadline)
      const now = BigInt(Math.floor(Date.now() / 1000))
      if (deadline !== 0n && deadline <= now) {
        throw new ToolError(`the batch's deadline ${deadline} has passed (now ${now}): prepare it again with calibur_batch and sign anew`)
      }
      const { key, seq } = splitCaliburNonce(BigInt(message.nonce))
      const payment = readPaymentFirstBatch(network, payments, account, { calls: message.batchedCall.calls as CaliburCall[], revertOnFailure: message.batchedCall.revertOnFailure })

      const stateOverride = await delegationOverride(network, account, args.authorizationList)
      const { domain, seq: current } = await readCaliburState(network, account, key, stateOverride)
      if (domain.salt.toLowerCase() !== given.domain.salt.toLowerCase()) {
        throw new ToolError(`the batch's domain salt ${given.domain.salt} is not the account's now (${domain.salt}): prepare it again with calibur_batch`)
      }
      if (seq < current) {
        throw new ToolError(`the batch's nonce (key ${key}, seq ${seq}) was used already (the account is at seq ${current}): this batch ran, or another took its place`)
      }
      if (seq > current) {
        throw new ToolError(`the batch's nonce (key ${key}, seq ${seq}) skips ahead of the account's (seq ${current}): it cannot run until the batches before it do`)
      }

      // Rebuilt from the account's domain as read now: what Calibur will hash.
      const typedData: CaliburTypedData = caliburTypedData({
        domain,
        batch: message.batchedCall,
        nonce: BigInt(message.nonce),
        deadline,
        executor: message.executor as Hex,
        keyHash: message.keyHash as Hex,
      })
      let signer
      try {
        signer = await recoverCaliburSigner(typedData, signature)
      } catch (error) {
        throw new ToolError(`bad signature: it is not a valid secp256k1 signature of the batch (${(error as Error).message.split('\n')[0]})`)
      }
      if (!isAddressEqual(signer, account)) {
        throw new ToolError(
          `the signature recovers to ${signer}, not the account ${account}: the account's own key must sign this typedData, unchanged ` +
            '(smart-wallet signers, ERC-1271 / ERC-6492, cannot sign a Calibur batch)',
        )
      }
      const paymentFormatted = `${formatUnits(payment.amount, payment.decimals)} ${payment.symbol}`
      const withAuthorization = stateOverride !== undefined
      return {
        call: { to: account, data: encodeSignedExecute({ message: typedData.message, signature }) },
        payment: { token: payment.token, amountBaseUnits: payment.amount.toString() },
        ...(withAuthorization ? { authorizationList: args.authorizationList } : {}),
        account,
        paymentFormatted,
        next:
          `call submit with {chain: "${network.name}", call, payment${withAuthorization ? ', authorizationList' : ''}} as given here; ` +
          'then poll status with the id it returns until done',
      }
    },
  })
