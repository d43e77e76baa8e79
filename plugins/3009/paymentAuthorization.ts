import { Type, type TSchema } from '@sinclair/typebox'
import { getAddress } from 'viem'
import { Address, BaseUnits, defineTool, requireAddress, requireToken, SignedTransferPayment, TokenArgument, ToolError } from '../../core/plugin.ts'
import { readTokenDomain } from './readTokenDomain.ts'
import { randomAuthorizationNonce, transferWithAuthorizationTypedData } from './typedData.ts'

/** The longest an authorization may stay valid: a signed transfer is a bearer instrument until used. */
export const MAX_VALID_FOR_SEC = 3_600

/** The TransferWithAuthorization message: the very schema `submit`'s payment.authorization is checked with. */
const AuthorizationMessage = SignedTransferPayment.properties.authorization

/** TransferWithAuthorization typed data as tools return it (and `transfer_authorization_call` takes it back). */
export const TypedDataOutput = Type.Object(
  {
    domain: Type.Object(
      { name: Type.String(), version: Type.String(), chainId: Type.Integer({ minimum: 1 }), verifyingContract: Address },
      { additionalProperties: false, description: 'the token\'s own EIP-712 domain, read from the token' },
    ),
    types: Type.Record(Type.String(), Type.Array(Type.Object({ name: Type.String(), type: Type.String() }, { additionalProperties: false })), {
      description: 'EIP712Domain and TransferWithAuthorization',
    }),
    primaryType: Type.Literal('TransferWithAuthorization'),
    message: AuthorizationMessage,
  },
  { additionalProperties: false, description: 'standard EIP-712 typed data: pass it to the paying account\'s wallet unchanged (eth_signTypedData_v4)' },
)

const NEXT =
  'Sign typedData unchanged with the paying account\'s wallet (eth_signTypedData_v4), then call submit with ' +
  'payment {token, authorization, signature}: token and authorization exactly as in `payment`, signature the 65-byte ' +
  'hex the wallet returned. Submit before authorization.validBefore.'

/**
 * `payment_authorization`: the typed data of an EIP-3009 `transferWithAuthorization` that pays
 * Bruno's payee a quoted amount, for flow 2 (an account with only USDC: no ETH, no delegate).
 *
 * `validAfter` is 0, not "now minus a margin": the token checks `validAfter < block.timestamp`,
 * and a chain whose clock runs behind Bruno's would refuse a recent `validAfter`; the window is
 * bounded by `validBefore` and the single-use random nonce, which is all a payment needs.
 * `validBefore` is Bruno's clock now + `validForSec` (default: the network's quote ttl).
 *
 * @example
 * registry.addGroup({ name: '3009', order: 30, instructions, tools: [paymentAuthorization(app.bruno.chainArgument)] })
 */
export const paymentAuthorization = (chain: TSchema) =>
  defineTool({
    name: 'payment_authorization',
    title: 'Prepare a signed-transfer payment',
    description:
      'Prepares the EIP-3009 transferWithAuthorization that pays Bruno\'s payee `amount` (base units, exactly the ' +
      '`amount` quote returned — quote with payment: "authorization") of `token` from `from`, the paying account. ' +
      'Returns standard EIP-712 typed data {domain, types, primaryType, message} for the paying account\'s wallet ' +
      'to sign: pass it unchanged, the payee (`to`) is Bruno\'s and the nonce is random and single-use. The signer ' +
      'must be the paying account\'s own key (an EOA): the runner uses the (v, r, s) transfer, which does not accept ' +
      'smart wallets\' ERC-1271 signatures. Then call submit with payment {token, authorization, signature}: ' +
      '`payment` here holds token and authorization; add the signature. The account needs no ETH and no delegate. ' +
      'validAfter is 0 (usable at once); validBefore is now + validForSec (default: the network\'s quote validity, ' +
      'at most 3600), which bounds how long the signature can be used.',
    input: Type.Object(
      {
        chain,
        from: { ...Address, description: 'the paying account: its wallet signs, its tokens pay' },
        token: { ...TokenArgument, description: 'the token to pay in, as quoted: a configured symbol (e.g. "USDC") or its address' },
        amount: { ...BaseUnits, description: 'base units, exactly the quote\'s `amount` (not amountFormatted)' },
        validForSec: Type.Optional(
          Type.Integer({ minimum: 10, maximum: MAX_VALID_FOR_SEC, description: 'seconds the signature stays usable (default: the network\'s quote validity)' }),
        ),
      },
      { additionalProperties: false },
    ),
    output: Type.Object(
      {
        typedData: TypedDataOutput,
        payment: Type.Object(
          { token: Address, authorization: AuthorizationMessage },
          { additionalProperties: false, description: 'submit\'s payment without its signature: add signature, change nothing else' },
        ),
        payee: { ...Address, description: 'Bruno\'s payee on this chain, the transfer\'s `to`' },
        next: Type.String(),
      },
      { additionalProperties: false },
    ),
    annotations: { readOnlyHint: true, openWorldHint: true },
    handler: async (args, { networks }) => {
      // The schema admits only configured network names.
      const network = networks.get(args.chain as string)
      const { config } = network
      const from = requireAddress(args.from, 'from')
      const value = BigInt(args.amount)
      if (value === 0n) throw new ToolError('amount is 0: quote first and pass the quote\'s amount')
      const found = requireToken(config, args.token)
      if (!found.configured) {
        const symbols = config.tokens.map((token) => token.symbol).join(', ')
        throw new ToolError(`${found.address} is not a token Bruno accepts on ${config.name}: pay in one of ${symbols}`)
      }
      const domain = await readTokenDomain(network.client, found.address)
      const payee = getAddress(config.payee)
      const now = BigInt(Math.floor(Date.now() / 1000))
      const typedData = transferWithAuthorizationTypedData({
        token: { address: found.address, name: domain.name, version: domain.version, chainId: config.chainId },
        from,
        to: payee,
        value,
        validAfter: 0n,
        validBefore: now + BigInt(args.validForSec ?? config.relay.quoteTtlSec),
        nonce: randomAuthorizationNonce(),
      })
      return {
        // `types` is transferWithAuthorizationTypes, readonly as declared; the JSON is the same.
        typedData: { ...typedData, types: typedData.types as unknown as Record<string, { name: string; type: string }[]> },
        payment: { token: found.address, authorization: typedData.message },
        payee,
        next: NEXT,
      }
    },
  })
