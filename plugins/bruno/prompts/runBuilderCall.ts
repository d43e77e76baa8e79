import { definePrompt } from '../../../core/plugin.ts'
import { accountArgument, chainArgument, promptAccount, promptNetwork, promptPaymentSymbol, tokenArgument } from './arguments.ts'
import { ON_REFUSAL, numbered, signedBatchSteps } from './steps.ts'

/**
 * Flow 1 with a builder MCP server's transaction: the builder builds for the account, the account
 * runs it in a Calibur batch that pays Bruno (calibur_batch → sign → calibur_execute → submit → status).
 *
 * @example
 * registry.addGroup({ name: 'bruno', …, prompts: [runBuilderCall, …] })
 */
export const runBuilderCall = definePrompt({
  name: 'run_builder_call',
  title: 'Run a builder\'s call from my account',
  description:
    'Run a transaction another MCP server builds (a bridge, a deposit, a swap) from your Calibur-delegated account, ' +
    'paying the gas in USDC inside the same batch (builder → calibur_batch → sign → calibur_execute → submit → status).',
  requires: ['calibur'],
  arguments: [
    chainArgument,
    accountArgument,
    { name: 'request', title: 'What to build', description: 'what to ask the builder for, e.g. "deposit 100 USDC into Aave"', required: true },
    tokenArgument,
  ],
  render: (args, context) => {
    const network = promptNetwork(args, context)
    const account = promptAccount(args.account!)
    const symbol = promptPaymentSymbol(network, args.token)
    const chain = network.name
    return [
      `Run a builder's transaction on ${chain} (chain id ${network.chainId}) from the account ${account}, paying the gas in ${symbol} inside the same Calibur batch.`,
      '',
      ...numbered(1, [
        `\`account\` with {chain: "${chain}", address: "${account}"}. \`delegateName\` must be "Calibur"; if it is not, stop and tell me the account must be delegated to Calibur first (the delegate_and_run prompt).`,
        `Ask the builder MCP server for: ${args.request}. Give it ${account} as the fromAddress AND as the recipient (the calls run from the account; never give it Bruno's addresses). Keep its transactionRequest(s), in order, and any approvals it says are needed.`,
        `\`calibur_batch\` with {chain: "${chain}", account: "${account}", calls: the builder's transactionRequest(s) as they are (gas fields and from are ignored; a chainId other than ${network.chainId} is refused), approvals: the needed approvals as {token, spender, amountBaseUnits} (base units: the builder's figures), token: "${symbol}"}. It returns \`paymentTypedData\` and \`typedData\`.`,
      ]),
      ...signedBatchSteps(4, chain, false),
      'Never send the builder\'s transactionRequest to `submit` or to a wallet as it is: it runs inside the signed batch.',
      '',
      ON_REFUSAL,
    ].join('\n')
  },
})
