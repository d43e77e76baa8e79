import { Type, type TSchema } from '@sinclair/typebox'
import { formatUnits, getAddress, isAddressEqual, recoverTypedDataAddress, type Hex } from 'viem'
import {
  authorizationListAs,
  authorizationOverride,
  defineTool,
  described,
  ExecutedBatch,
  HexData,
  passedBack,
  readPaymentLeg,
  requireAddress,
  requireDelegatedTo,
  ToolError,
} from '../../core/plugin.ts'
import { paymentFirstEnforcerArtifact } from '../../contracts/artifacts.ts'
import { delegationManagerAbi } from './abi.ts'
import { metaMaskAt } from './batch.ts'
import { metaMaskContracts, paymentFirstEnforcer } from './contracts.ts'
import { decodeBatches, delegationHash, delegationTypedData, delegationTypes, encodeRedemption, pinnedBatches, readPaymentFirstDelegation, signedDelegation, type Delegation } from './delegation.ts'
import { DelegationTypedDataSchema } from './typedDataSchema.ts'

const Signature = Type.String({ pattern: '^0x[0-9a-fA-F]{130}$', description: 'by the account\'s own key' })

/**
 * `metamask_execute`: takes back the delegation metamask_batch prepared, whole, with the account's
 * signature and the two batches its hashes pin; checks it as the DelegationManager and Bruno's
 * enforcer will (domain, signer, caveat, the batches' hashes, deadline, not used or disabled) and
 * that its payment batch only pays, and returns the call and payment for submit: the two
 * redemptions of the one delegation.
 *
 * @example
 * registry.addGroup({ name: 'metamask', order: 25, instructions, tools: [metaMaskExecute(app.bruno.chainArgument), …] })
 */
export const metaMaskExecute = (chain: TSchema) =>
  defineTool({
    name: 'metamask_execute',
    title: 'Check a signed MetaMask delegation',
    description:
      'Takes metamask_batch\'s typedData and batches, unchanged, with the account\'s signature; checks it as the DelegationManager will and ' +
      'that it pays first; returns `call` and `payment` for submit. Pass metamask_batch\'s authorizationList too, if any.',
    input: Type.Object(
      {
        chain,
        typedData: passedBack(DelegationTypedDataSchema, 'metamask_batch\'s typedData'),
        signature: Signature,
        batches: described(HexData, 'metamask_batch\'s batches, unchanged'),
        authorizationList: Type.Optional(authorizationListAs('as given to metamask_batch', 1)),
      },
      { additionalProperties: false },
    ),
    output: ExecutedBatch,
    annotations: { readOnlyHint: true, openWorldHint: true },
    handler: async (args, { networks, payment: payments }) => {
      // The schema admits only configured network names.
      const network = networks.get(args.chain as string)
      const { client, config } = network
      const { domain, message } = args.typedData
      if (domain.chainId !== config.chainId) throw new ToolError(`the delegation is signed for chain ${domain.chainId}, not ${config.name} (${config.chainId})`)
      if (!isAddressEqual(getAddress(domain.verifyingContract), metaMaskContracts.delegationManager)) {
        throw new ToolError(`the delegation is signed for ${domain.verifyingContract}, not MetaMask's DelegationManager (${metaMaskContracts.delegationManager})`)
      }
      if (JSON.stringify(args.typedData.types) !== JSON.stringify(delegationTypes)) {
        throw new ToolError('the delegation\'s types are not the DelegationManager\'s: pass the typed data metamask_batch returned, unchanged')
      }
      const account = requireAddress(message.delegator, 'typedData.message.delegator')
      const unsigned: Delegation = {
        delegate: requireAddress(message.delegate, 'typedData.message.delegate'),
        delegator: account,
        authority: message.authority as Hex,
        caveats: message.caveats.map((caveat) => ({ enforcer: requireAddress(caveat.enforcer, 'typedData.message.caveats[].enforcer'), terms: caveat.terms as Hex, args: '0x' })),
        salt: BigInt(message.salt),
        signature: '0x',
      }
      const terms = readPaymentFirstDelegation(unsigned, getAddress(config.runner.contract))
      if (typeof terms === 'string') throw new ToolError(`the delegation is not a payment-first delegation to Bruno: ${terms}: build it with metamask_batch`)
      const batches = decodeBatches(args.batches as Hex)
      if (!batches) throw new ToolError('batches does not decode as two ERC-7579 batches: pass metamask_batch\'s batches, unchanged')
      const pinned = pinnedBatches(terms, batches.payment, batches.calls)
      if (typeof pinned === 'string') throw new ToolError(`batches are not what the delegation pins: ${pinned}: pass metamask_batch's typedData and batches together, unchanged`)
      const now = BigInt(Math.floor(Date.now() / 1000))
      if (terms.deadline < now) throw new ToolError(`the delegation's deadline ${terms.deadline} has passed (now ${now}): prepare it again with metamask_batch and sign anew`)
      const payment = readPaymentLeg(network, payments, { to: pinned.leg.target, value: pinned.leg.value, data: pinned.leg.callData })
      if (typeof payment === 'string') throw new ToolError(`the delegation's payment batch is not payment-only: ${payment}: build it with metamask_batch`)

      let signer
      try {
        const typed = delegationTypedData(config.chainId, unsigned)
        signer = await recoverTypedDataAddress({ ...typed, message: { ...typed.message, salt: unsigned.salt }, signature: args.signature as Hex })
      } catch (error) {
        throw new ToolError(`bad signature of the delegation: it is not a valid secp256k1 signature (${(error as Error).message.split('\n')[0]})`)
      }
      if (!isAddressEqual(signer, account)) {
        throw new ToolError(`the delegation's signature recovers to ${signer}, not the account ${account}: the account's own key must sign the typed data, unchanged`)
      }
      const stateOverride = await authorizationOverride(network, account, args.authorizationList, metaMaskAt)
      if (!stateOverride) await requireDelegatedTo(network, account, metaMaskAt)
      const hash = delegationHash(unsigned)
      const [redeemed, disabled] = await Promise.all([
        client.readContract({ address: paymentFirstEnforcer, abi: paymentFirstEnforcerArtifact.abi, functionName: 'redemptions', args: [metaMaskContracts.delegationManager, hash] }),
        client.readContract({ address: metaMaskContracts.delegationManager, abi: delegationManagerAbi, functionName: 'disabledDelegations', args: [hash] }),
      ])
      if (redeemed > 0n) throw new ToolError(`the delegation ${hash} was redeemed already (${redeemed} time${redeemed === 1n ? '' : 's'}): prepare a new one with metamask_batch`)
      if (disabled) throw new ToolError(`the account disabled the delegation ${hash}: prepare a new one with metamask_batch`)

      const signed = signedDelegation(unsigned, args.signature as Hex)
      const withAuthorization = stateOverride !== undefined
      return {
        call: { to: metaMaskContracts.delegationManager, data: encodeRedemption(signed, pinned.calls) },
        payment: { token: payment.token, amountBaseUnits: payment.amount.toString(), batch: encodeRedemption(signed, [pinned.leg]) },
        ...(withAuthorization ? { authorizationList: args.authorizationList } : {}),
        account,
        paymentFormatted: `${formatUnits(payment.amount, payment.decimals)} ${payment.symbol}`,
        next:
          `call submit with {chain: "${network.name}", call, payment${withAuthorization ? ', authorizationList' : ''}} as given here; ` +
          'then poll status with the id it returns until done',
      }
    },
  })
