import { definePlugin } from '../../core/plugin.ts'
import { paymentAuthorization } from './paymentAuthorization.ts'
import { transferAuthorization, transferAuthorizationCall } from './transferAuthorization.ts'

const instructions =
  '3009 — pay with a signed USDC transfer, for an account with tokens but no ETH and no delegate. `quote` the call ' +
  'with payment: "authorization", then `payment_authorization` with the quote\'s amount returns EIP-712 typed data: ' +
  'the paying account\'s own wallet (an EOA key, not a smart wallet) signs it unchanged, and `submit` takes payment ' +
  '{token, authorization, signature}. The transfer goes to Bruno\'s payee in the same transaction as the call. ' +
  'The call runs from Bruno\'s Runner contract, so it must act by signature: to pay someone, `transfer_authorization` ' +
  'prepares the transfer (quote its quoteCall; the wallet signs its typedData too) and `transfer_authorization_call` returns the call.'

/**
 * The `3009` group: `payment_authorization`, `transfer_authorization`, `transfer_authorization_call`.
 *
 * @example
 * await buildApp({ config, groups: [paymentAuthorizationGroup], logger, serverInfo }) // serves it where config.groups names '3009'
 */
export const paymentAuthorizationGroup = definePlugin({
  name: '3009',
  order: 30,
  setup: ({ chainArgument }) => ({ instructions, tools: [paymentAuthorization(chainArgument), transferAuthorization(chainArgument), transferAuthorizationCall(chainArgument)] }),
})
