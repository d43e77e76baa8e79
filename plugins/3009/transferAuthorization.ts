import { Type, type TSchema } from '@sinclair/typebox'
import { encodeFunctionData, formatUnits, maxUint256, getAddress, isAddressEqual, isErc6492Signature, parseAbi, parseErc6492Signature, recoverTypedDataAddress, size, type Address as Addr, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { readContract } from 'viem/actions'
import {
  Address,
  BaseUnits,
  defineTool,
  described,
  passedBack,
  PaymentSignature,
  RelayCall,
  requireAddress,
  requireToken,
  toBaseUnits,
  TokenAmount,
  TokenArgument,
  TokenInfo,
  ToolError,
  type Network,
  REVIEW_VIEW,
} from '../../core/plugin.ts'
import { eip3009Abi } from './abi.ts'
import { TypedDataOutput, validForSecOver } from './paymentAuthorization.ts'
import { readTokenDomain } from '../../core/plugin.ts'
import {
  authorizationSignatureParts,
  randomAuthorizationNonce,
  transferWithAuthorizationTypedData,
  transferWithAuthorizationTypes,
  type TransferWithAuthorizationMessage,
  type TransferWithAuthorizationTypedData,
} from './typedData.ts'

/**
 * The relay call `transferWithAuthorization` on `token`: its `(v, r, s)` form for an account's 65-byte
 * signature, its `bytes` form for a smart wallet's (FiatToken v2.2), unwrapped from ERC-6492's wrapper
 * (the call runs after the payment, whose own wrapper deploys the wallet).
 */
function transferWithAuthorizationCall(token: Addr, message: TransferWithAuthorizationMessage, signature: Hex): { to: Addr; data: Hex } {
  for (const field of ['value', 'validAfter', 'validBefore'] as const)
    if (BigInt(message[field]) > maxUint256) throw new ToolError(`typedData.message.${field} is out of the uint256 range`)
  const fields = [getAddress(message.from), getAddress(message.to), BigInt(message.value), BigInt(message.validAfter), BigInt(message.validBefore), message.nonce] as const
  if (size(signature) !== 65) {
    const own = isErc6492Signature(signature) ? parseErc6492Signature(signature).signature : signature
    return { to: token, data: encodeFunctionData({ abi: transferWithAuthorizationBytesAbi, functionName: 'transferWithAuthorization', args: [...fields, own] }) }
  }
  const { v, r, s } = authorizationSignatureParts(signature)
  return { to: token, data: encodeFunctionData({ abi: eip3009Abi, functionName: 'transferWithAuthorization', args: [...fields, v, r, s] }) }
}

/** FiatToken v2.2's `bytes` form of `transferWithAuthorization`, which a smart wallet's ERC-1271 signature takes. */
const transferWithAuthorizationBytesAbi = parseAbi([
  'function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)',
])

const TypeEntries = Type.Array(Type.Object({ name: Type.String(), type: Type.String() }, { additionalProperties: false }))

/** The typed data taken back: as returned, `types` closed to its two entries (input schemas are closed). */
const TypedDataInput = passedBack(
  Type.Object(
    {
      ...TypedDataOutput.properties,
      types: Type.Object({ EIP712Domain: TypeEntries, TransferWithAuthorization: TypeEntries }, { additionalProperties: false }),
    },
    { additionalProperties: false },
  ),
  'transfer_authorization\'s typedData',
)

// The typed data as tools return it: `types` widened to JSON's shape.
const asJson = (typedData: TransferWithAuthorizationTypedData) => ({
  ...typedData,
  types: typedData.types as unknown as Record<string, { name: string; type: string }[]>,
})

const PREPARE_NEXT =
  'quote {call: quoteCall, token, payment: "authorization"}; payment_authorization with the quote\'s amount; have ' +
  'the account\'s wallet sign both typedData unchanged; transfer_authorization_call with this typedData and its ' +
  'signature returns the call; submit that call with the signed payment.'

/**
 * `transfer_authorization`: prepares a gasless token transfer (EIP-3009) from an account with no
 * ETH to any recipient, the call of flow 2. Returns the typed data of the recipient's
 * `transferWithAuthorization` for the account's wallet to sign, and `quoteCall`, the call to
 * quote before it is signed.
 *
 * `quoteCall` is a real, succeeding `transferWithAuthorization` of 0 to the recipient, signed by a
 * throwaway key Bruno then forgets: the same function, calldata size and work (signature
 * recovery, a fresh nonce written, the event), so `quote` can measure it from the Runner, where
 * the unsigned transfer would revert. It spends less gas than the real one only in its two
 * balance writes (no change, about 23,000 gas below a first transfer to a fresh recipient), which
 * the quote's payment-phase allowance and margin cover; `submit` simulates the signed call itself
 * and refuses a payment that falls short.
 *
 * @example
 * registry.addGroup({ name: '3009', order: 30, instructions, tools: [transferAuthorization(app.bruno.chainArgument, 60), …] })
 */
export const transferAuthorization = (chain: TSchema, leastValidSec: number) =>
  defineTool({
    name: 'transfer_authorization',
    title: 'Prepare a gasless token transfer',
    description:
      'Prepares a gasless transfer of `amount` of `token` from `from` to `to` (flow 2: no ETH). The call runs from ' +
      'Bruno\'s Runner contract, so only calls that act by signature belong there, as this transfer does. Returns ' +
      'typedData for from\'s own wallet (its key, or a smart wallet) to sign unchanged, and `quoteCall` to quote (payment ' +
      '"authorization") before signing; transfer_authorization_call then returns the call.',
    input: Type.Object(
      {
        chain,
        from: { ...Address, description: 'sends the tokens and signs' },
        to: Address,
        token: TokenArgument,
        amount: TokenAmount,
        validForSec: Type.Optional(validForSecOver(leastValidSec)),
      },
      { additionalProperties: false },
    ),
    output: Type.Object(
      {
        typedData: TypedDataOutput,
        quoteCall: { ...RelayCall, description: 'to quote, never to submit: a like transfer of 0 by a throwaway key' },
        token: TokenInfo,
        from: Address,
        to: Address,
        amount: described(TokenAmount, 'whole token units'),
        amountBaseUnits: BaseUnits,
        next: Type.String(),
      },
      { additionalProperties: false },
    ),
    annotations: { readOnlyHint: true, openWorldHint: true },
    ui: { resourceUri: REVIEW_VIEW },
    handler: async (args, { networks }) => {
      // The schema admits only configured network names.
      const network = networks.get(args.chain as string)
      const { config } = network
      const from = requireAddress(args.from, 'from')
      const to = requireAddress(args.to, 'to')
      const found = requireToken(config, args.token)
      if (!found.configured) {
        const symbols = config.tokens.map((token) => token.symbol).join(', ')
        throw new ToolError(`${found.address} is not a token configured on ${config.name}: transfer one of ${symbols}`)
      }
      const { symbol, decimals } = found.configured
      const value = toBaseUnits(args.amount, decimals, symbol)
      if (value === 0n) throw new ToolError('amount is 0: a transfer of nothing does nothing')
      const domain = await readTokenDomain(network.client, found.address)
      const token = { address: found.address, name: domain.name, version: domain.version, chainId: config.chainId }
      const validBefore = BigInt(Math.floor(Date.now() / 1000) + (args.validForSec ?? config.relay.quoteTtlSec))
      const typedData = transferWithAuthorizationTypedData({ token, from, to, value, validAfter: 0n, validBefore, nonce: randomAuthorizationNonce() })

      // The stand-in for quoting: the same transfer, of 0, from a throwaway key that signs it here.
      const stand = privateKeyToAccount(generatePrivateKey())
      const standIn = transferWithAuthorizationTypedData({ token, from: stand.address, to, value: 0n, validAfter: 0n, validBefore, nonce: randomAuthorizationNonce() })
      const quoteCall = transferWithAuthorizationCall(found.address, standIn.message, await stand.signTypedData(standIn))

      return {
        typedData: asJson(typedData),
        quoteCall,
        token: { address: found.address, symbol, decimals },
        from,
        to,
        amount: formatUnits(value, decimals),
        amountBaseUnits: value.toString(),
        next: PREPARE_NEXT,
      }
    },
  })

/**
 * `transfer_authorization_call`: takes the typed data `transfer_authorization` returned and the
 * wallet's signature, checks them as the token will (the domain read now, the signer is `from`,
 * the window open, the nonce unused), and returns the `transferWithAuthorization` call for
 * `submit`.
 *
 * @example
 * registry.addGroup({ name: '3009', order: 30, instructions, tools: [transferAuthorizationCall(app.bruno.chainArgument), …] })
 */
export const transferAuthorizationCall = (chain: TSchema) =>
  defineTool({
    name: 'transfer_authorization_call',
    title: 'Encode a signed gasless transfer',
    description:
      'Takes transfer_authorization\'s typedData and the wallet\'s signature (a smart wallet\'s as it returned it), checks them as the token will, and ' +
      'returns `call` for submit, beside payment_authorization\'s signed payment.',
    input: Type.Object(
      {
        chain,
        typedData: TypedDataInput,
        signature: PaymentSignature,
      },
      { additionalProperties: false },
    ),
    output: Type.Object(
      {
        call: { ...RelayCall, description: 'submit\'s `call`' },
        next: Type.String(),
      },
      { additionalProperties: false },
    ),
    annotations: { readOnlyHint: true, openWorldHint: true },
    handler: async (args, { networks }) => {
      const network = networks.get(args.chain as string)
      const { domain } = args.typedData
      if (JSON.stringify(args.typedData.types) !== JSON.stringify(transferWithAuthorizationTypes))
        throw new ToolError('typedData.types are not EIP-3009\'s: pass the typedData transfer_authorization returned, unchanged')
      const message = args.typedData.message as TransferWithAuthorizationMessage
      if (domain.chainId !== network.config.chainId)
        throw new ToolError(`typedData is for chain ${domain.chainId}, not ${network.config.name} (${network.config.chainId})`)
      const token = requireAddress(domain.verifyingContract, 'typedData.domain.verifyingContract')
      const from = requireAddress(message.from, 'typedData.message.from')
      requireAddress(message.to, 'typedData.message.to')
      const signature = args.signature as Hex
      const call = transferWithAuthorizationCall(token, message, signature)
      // Checked under the canonical types, the ones the token hashes, whatever `types` came back.
      const signed = { domain: { ...domain, verifyingContract: token }, types: transferWithAuthorizationTypes as unknown as TransferWithAuthorizationTypedData['types'], primaryType: 'TransferWithAuthorization' as const, message, signature }
      if (size(signature) !== 65) {
        // A smart wallet's: its own ERC-1271 answer, as the token will ask it (an undeployed one's by ERC-6492).
        if (!(await network.client.verifyTypedData({ address: from, ...signed }))) {
          throw new ToolError(`${from} does not accept the signature (its ERC-1271 isValidSignature says no): have ${from}'s own wallet sign typedData unchanged`)
        }
      } else {
        const signer = await recoverTypedDataAddress(signed).catch(() => {
          // An r in range that is no point's x coordinate: no key made it.
          throw new ToolError('signature is not a valid ECDSA signature: it recovers to no address (its r is no point of secp256k1)')
        })
        // A wallet whose ERC-1271 takes its owner's 65-byte signature (a multisig of one) is asked too.
        if (!isAddressEqual(signer, from) && !(await network.client.verifyTypedData({ address: from, ...signed })))
          throw new ToolError(`the signature is by ${signer}, not by the sender ${from}: have ${from}'s own wallet sign typedData unchanged`)
      }
      if (BigInt(message.validBefore) <= BigInt(Math.floor(Date.now() / 1000)))
        throw new ToolError(`the transfer expired at ${message.validBefore} (validBefore): prepare it again with transfer_authorization`)
      await checkDomainAndNonce(network, token, domain, from, message.nonce)
      return {
        call,
        next: 'submit {chain, call, payment: {token, authorization, signature}} with payment_authorization\'s payment and its signature.',
      }
    },
  })

// The domain must be the token's own (a signature for another is refused on chain), the nonce unused.
async function checkDomainAndNonce(network: Network, token: Addr, domain: { name: string; version: string }, from: Addr, nonce: Hex) {
  const [own, used] = await Promise.all([
    readTokenDomain(network.client, token),
    readContract(network.client, { address: token, abi: eip3009Abi, functionName: 'authorizationState', args: [from, nonce] }),
  ])
  if (own.name !== domain.name || own.version !== domain.version)
    throw new ToolError(`${token} signs under "${own.name}" version "${own.version}", not "${domain.name}" version "${domain.version}": prepare it again with transfer_authorization`)
  if (used) throw new ToolError(`the transfer's nonce ${nonce} is already used or cancelled: prepare it again with transfer_authorization`)
}
