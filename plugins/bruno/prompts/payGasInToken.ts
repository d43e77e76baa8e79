import { definePrompt } from '../../../core/plugin.ts'
import { accountArgument, chainArgument, promptAccount, promptNetwork, promptPaymentSymbol, tokenArgument } from './arguments.ts'
import { ON_REFUSAL, numbered } from './steps.ts'

/**
 * Flow 2: an account with tokens but no ETH and no delegate pays for a call with a signed
 * EIP-3009 transfer (quote → payment_authorization → sign → submit → status).
 *
 * @example
 * registry.addGroup({ name: 'bruno', …, prompts: [payGasInToken, …] })
 */
export const payGasInToken = definePrompt({
  name: 'pay_gas_in_token',
  title: 'Pay gas in USDC with a signed transfer',
  description:
    'Relay a call for an account that holds USDC but no ETH and no delegate: its gas is paid by a signed EIP-3009 ' +
    'transfer in the same transaction (quote → payment_authorization → sign → submit → status).',
  requires: ['3009'],
  arguments: [
    chainArgument,
    accountArgument,
    tokenArgument,
    { name: 'call', title: 'Call', description: 'the call to relay, {to, data} (a call that acts by signature, e.g. transfer_authorization_call\'s); asked for when missing' },
  ],
  render: (args, context) => {
    const network = promptNetwork(args, context)
    const account = promptAccount(args.account!)
    const symbol = promptPaymentSymbol(network, args.token)
    const chain = network.name
    const call = args.call
      ? `The call to relay: ${args.call}.`
      : 'First ask me for the call to relay, {to, data}: Bruno\'s runner sends it from its Runner contract (value 0), not from the account, so it must act by signature (a permit, a signed transfer). To pay someone: `transfer_authorization` prepares the transfer; quote its `quoteCall`, have the wallet sign its `typedData` too, and `transfer_authorization_call` returns the call.'
    return [
      `Relay a call on ${chain} for the account ${account}, paying its gas in ${symbol} with a signed EIP-3009 transfer made in the same transaction. The account needs no ETH and no delegate.`,
      call,
      '',
      ...numbered(1, [
        `\`quote\` with {chain: "${chain}", call, token: "${symbol}", payment: "authorization"}. Keep its \`amount\` (whole units) and note \`validUntil\`.`,
        `\`payment_authorization\` with {chain: "${chain}", from: "${account}", token: "${symbol}", amount: the quote's \`amount\`}. It returns \`typedData\` and \`payment\`.`,
        'Have the account\'s wallet sign `typedData` with its sign-typed-data tool, passing it UNCHANGED (domain, types, primaryType, message exactly as returned). Only the account\'s own EOA key can sign it: smart-wallet signatures (ERC-1271 / ERC-6492) are refused by the transfer.',
        `\`submit\` with {chain: "${chain}", call, payment: {token, authorization, signature}}: \`token\` and \`authorization\` are payment_authorization's \`payment\` as returned, \`signature\` the wallet's. It answers at once with an \`id\`.`,
        'Poll `status` with {id} until the stage is `done` (give me the transaction hash, the fee and whether outcome.callSucceeded: ' +
          'a call that failed on chain still paid) or `failed` (give me the reason).',
      ]),
      '',
      ON_REFUSAL,
    ].join('\n')
  },
})
