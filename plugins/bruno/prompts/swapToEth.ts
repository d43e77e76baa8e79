import { PromptArgumentError, definePrompt } from '../../../core/plugin.ts'
import { accountArgument, chainArgument, promptAccount, promptNetwork, promptPaymentSymbol, tokenArgument } from './arguments.ts'
import { ON_REFUSAL, numbered, signedBatchSteps } from './steps.ts'

const WHOLE_UNITS = /^[0-9]{1,40}(\.[0-9]{1,36})?$/

/**
 * Flow 3: a Calibur-delegated account with tokens and no ETH swaps some to ETH, paying Bruno from
 * the same batch (uniswap_swap_to_eth → calibur_batch → sign → calibur_execute → submit → status).
 *
 * @example
 * registry.addGroup({ name: 'bruno', …, prompts: [swapToEth, …] })
 */
export const swapToEth = definePrompt({
  name: 'swap_to_eth',
  title: 'Swap to ETH with no ETH',
  description:
    'Swap a token (USDC) to ETH from a Calibur-delegated account that holds no ETH; the gas is paid in the token from ' +
    'the same batch (uniswap_swap_to_eth → calibur_batch → sign → calibur_execute → submit → status).',
  requires: ['calibur', 'uniswap'],
  arguments: [
    chainArgument,
    accountArgument,
    { name: 'amount', title: 'Amount', description: 'how much of the token to swap, in whole units (e.g. "25")', required: true },
    { ...tokenArgument, description: 'the token to swap and to pay the gas in, a configured symbol (default: the first configured token Bruno can price, e.g. USDC)' },
  ],
  render: (args, context) => {
    const network = promptNetwork(args, context)
    const account = promptAccount(args.account!)
    const symbol = promptPaymentSymbol(network, args.token)
    if (!WHOLE_UNITS.test(args.amount!)) throw new PromptArgumentError(`amount "${args.amount}" is not a whole-unit amount such as "25" or "12.5"`)
    const chain = network.name
    return [
      `Swap ${args.amount} ${symbol} to ETH on ${chain} for the account ${account}, which needs no ETH: the swap, its approval and Bruno's payment in ${symbol} run in one Calibur batch that Bruno's runner sends.`,
      '',
      ...numbered(1, [
        `\`account\` with {chain: "${chain}", address: "${account}"}. \`delegateName\` must be "Calibur"; if it is not, stop and tell me the account must be delegated to Calibur first (the delegate_and_run prompt). Check its ${symbol} balance covers ${args.amount} plus the gas.`,
        `\`uniswap_swap_to_eth\` with {chain: "${chain}", token: "${symbol}", amount: "${args.amount}", recipient: "${account}"}. Keep its \`calls\`, \`approvals\` and \`minimumOut\`.`,
        `\`calibur_batch\` with {chain: "${chain}", account: "${account}", calls: the swap's \`calls\`, approvals: the swap's \`approvals\`, token: "${symbol}"}. It adds the approval where the allowance is short and the payment leg, measures the batch and returns \`paymentTypedData\` and \`typedData\`.`,
      ]),
      ...signedBatchSteps(4, chain, false),
      `When it is done, the account's ETH has risen by at least \`minimumOut\` from step 2.`,
      '',
      ON_REFUSAL,
    ].join('\n')
  },
})
