import { definePlugin, leastPaymentValiditySec } from '../../core/plugin.ts'
import { paymentAuthorization } from './paymentAuthorization.ts'
import { transferAuthorization, transferAuthorizationCall } from './transferAuthorization.ts'

const instructions =
  '3009 — pay with a signed USDC transfer, for an account with tokens but no ETH and no delegate. `quote` the call ' +
  'with payment: "authorization", then `payment_authorization` with the quote\'s amount returns EIP-712 typed data: ' +
  'the paying account\'s own wallet signs it unchanged (eth_signTypedData_v4), and `submit` takes payment {token, ' +
  'authorization, signature}: token and authorization exactly as in its `payment`, signature the hex the wallet returned ' +
  '(an account\'s key: 65 bytes; a smart wallet on the Runner\'s list, or an account delegated to Calibur or MetaMask: ' +
  'what it returns, checked by the token through ERC-1271; one not deployed yet: ERC-6492-wrapped, and quote with ' +
  'payerDeployment). The transfer goes to ' +
  'Bruno\'s payee in the same transaction as the call. Typed data here is standard {domain (the token\'s own, read ' +
  'from the token), types, primaryType, message}; its message is EIP-3009\'s {from, to, value (base units), ' +
  'validAfter "0", validBefore (unix seconds: now + validForSec, default the quote\'s validity), nonce (random, single use)}; submit before validBefore. ' +
  'The call runs from Bruno\'s Runner contract, so it must act by signature: to pay someone, `transfer_authorization` ' +
  'prepares the transfer (quote its quoteCall: a transfer of 0 to the same recipient, signed by a throwaway key, so ' +
  'the Runner can run it; the wallet signs its typedData too) and `transfer_authorization_call` returns the call.'

/**
 * The `3009` group: `payment_authorization`, `transfer_authorization`, `transfer_authorization_call`.
 *
 * @example
 * await buildApp({ config, groups: [paymentAuthorizationGroup], logger, serverInfo }) // serves it where config.groups names '3009'
 */
export const paymentAuthorizationGroup = definePlugin({
  name: '3009',
  order: 30,
  setup: ({ chainArgument, networks }) => {
    // One schema for every chain: the longest least validity among them, for the payment and the call alike.
    const leastValidSec = Math.max(...networks.names.map((name) => leastPaymentValiditySec(networks.get(name).config.relay)))
    return { instructions, tools: [paymentAuthorization(chainArgument, leastValidSec), transferAuthorization(chainArgument, leastValidSec), transferAuthorizationCall(chainArgument)] }
  },
})
