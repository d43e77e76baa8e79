import { Type, type TSchema } from '@sinclair/typebox'
import { getAddress } from 'viem'
import { Address, defineTool, REVIEW_VIEW, described, requireAddress, requireToken, sameShapeAs, signedUnchanged, toBaseUnits, TokenAmount, TokenArgument, ToolError, TransferAuthorizationMessage } from '../../core/plugin.ts'
import { readTokenDomain } from '../../core/plugin.ts'
import { randomAuthorizationNonce, transferWithAuthorizationTypedData } from './typedData.ts'

/** The longest an authorization may stay valid: a signed transfer is a bearer instrument until used. */
export const MAX_VALID_FOR_SEC = 3_600

/**
 * How long a signed transfer stays usable (`validBefore` = now + this), the payment's and the
 * call's alike: more than `leastValidSec`, the least validity `submit` takes of either on any
 * configured chain (its payment margin and time to be included), so that every value the schema
 * admits can be submitted.
 *
 * @example
 * validForSecOver(60) // { type: 'integer', minimum: 61, maximum: 3600, … }
 */
export function validForSecOver(leastValidSec: number) {
  return Type.Integer({
    minimum: leastValidSec + 1,
    maximum: MAX_VALID_FOR_SEC,
    description: `seconds usable, over the ${leastValidSec} submit needs`,
  })
}

/**
 * TransferWithAuthorization typed data as tools return it (and `transfer_authorization_call` takes
 * it back), published as the object a wallet signs unchanged (the 3009 instructions say its shape).
 */
export const TypedDataOutput = signedUnchanged(Type.Object(
  {
    domain: Type.Object(
      { name: Type.String(), version: Type.String(), chainId: Type.Integer({ minimum: 1 }), verifyingContract: Address },
      { additionalProperties: false },
    ),
    types: Type.Record(Type.String(), Type.Array(Type.Object({ name: Type.String(), type: Type.String() }, { additionalProperties: false }))),
    primaryType: Type.Literal('TransferWithAuthorization'),
    message: TransferAuthorizationMessage,
  },
  { additionalProperties: false },
), 'EIP-712 {domain, types, primaryType: TransferWithAuthorization, message}: sign it unchanged')

const NEXT =
  'Sign typedData unchanged with the paying account\'s wallet (eth_signTypedData_v4), then call submit with ' +
  'payment {token, authorization, signature}: token and authorization exactly as in `payment`, signature the hex ' +
  'the wallet returned (a smart wallet\'s as it returned it). Submit before authorization.validBefore.'

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
 * registry.addGroup({ name: '3009', order: 30, instructions, tools: [paymentAuthorization(app.bruno.chainArgument, 60)] })
 */
export const paymentAuthorization = (chain: TSchema, leastValidSec: number) =>
  defineTool({
    name: 'payment_authorization',
    title: 'Prepare a signed-transfer payment',
    description:
      'Prepares the EIP-3009 transfer that pays Bruno\'s payee `amount` of `token` from `from`: pass the `amount` of a ' +
      'quote made with payment "authorization". Returns typedData for the payer\'s wallet (its key, or a smart wallet on the Runner\'s list) to ' +
      'sign unchanged, and `payment` for submit: add the signature, change nothing else. The account needs no ETH and ' +
      'no delegate; the unused part comes back.',
    input: Type.Object(
      {
        chain,
        from: { ...Address, description: 'the paying account' },
        token: { ...TokenArgument, description: 'as quoted' },
        amount: described(TokenAmount, 'whole token units: the quote\'s `amount`'),
        validForSec: Type.Optional(validForSecOver(leastValidSec)),
      },
      { additionalProperties: false },
    ),
    output: Type.Object(
      {
        typedData: TypedDataOutput,
        payment: Type.Object(
          { token: Address, authorization: sameShapeAs(TransferAuthorizationMessage, 'typedData.message', 'the transfer signed') },
          { additionalProperties: false, description: 'submit\'s, without its signature' },
        ),
        payee: Address,
        next: Type.String(),
      },
      { additionalProperties: false },
    ),
    annotations: { readOnlyHint: true, openWorldHint: true },
    ui: { resourceUri: REVIEW_VIEW },
    handler: async (args, { networks, relay }) => {
      // The schema admits only configured network names.
      const network = networks.get(args.chain as string)
      const { config } = network
      const from = requireAddress(args.from, 'from')
      await relay.requireTransferPayer(network.name, from)
      const found = requireToken(config, args.token)
      if (!found.configured) {
        const symbols = config.tokens.map((token) => token.symbol).join(', ')
        throw new ToolError(`${found.address} is not a token Bruno accepts on ${config.name}: pay in one of ${symbols}`)
      }
      const value = toBaseUnits(args.amount, found.configured.decimals, found.configured.symbol)
      if (value === 0n) throw new ToolError('amount is 0: quote first and pass the quote\'s amount')
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
