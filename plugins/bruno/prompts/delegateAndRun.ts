import { definePrompt, PromptArgumentError } from '../../../core/plugin.ts'
import { accountArgument, chainArgument, promptAccount, promptNetwork, promptPaymentSymbol, tokenArgument } from './arguments.ts'
import { ON_REFUSAL, numbered, signedBatchSteps } from './steps.ts'

/**
 * An account not yet delegated signs an EIP-7702 authorization to Calibur, and its first batch runs
 * in the same transaction that delegates it (calibur_batch with authorizationList → sign →
 * calibur_execute → submit → status).
 *
 * @example
 * registry.addGroup({ name: 'bruno', …, prompts: [delegateAndRun, …] })
 */
export const delegateAndRun = definePrompt({
  name: 'delegate_and_run',
  title: 'Delegate to Calibur and run',
  description:
    'Delegate your account to Calibur (EIP-7702) and run its first batch in the same transaction, paying the gas in ' +
    'USDC (authorization → calibur_batch → sign → calibur_execute → submit → status).',
  requires: ['calibur'],
  arguments: [
    chainArgument,
    accountArgument,
    { name: 'calls', title: 'What to run', description: 'the batch\'s calls, [{to, value, data}], or what they should do; asked for when missing' },
    tokenArgument,
  ],
  render: (args, context) => {
    const network = promptNetwork(args, context)
    const account = promptAccount(args.account!)
    const symbol = promptPaymentSymbol(network, args.token)
    const chain = network.name
    const calibur = context.relay.delegates(chain).find((delegate) => delegate.name === 'Calibur')?.address
    if (!calibur) throw new PromptArgumentError(`Calibur is not served on ${chain}`)
    return [
      `Delegate the account ${account} to Calibur (${calibur}) on ${chain} (chain id ${network.chainId}) and run its batch in the same transaction, paying the gas in ${symbol}.`,
      args.calls ? `The batch's calls: ${args.calls}.` : 'First ask me what the batch should do; its calls are [{to, value, data}], in order (helpers\' `calls`, or a builder\'s transactionRequest).',
      '',
      ...numbered(1, [
        `\`account\` with {chain: "${chain}", address: "${account}"}. If \`delegateName\` is already "Calibur", skip step 2 and leave authorizationList out below. Note \`nonce\`: the account's EOA nonce.`,
        `Have the account's wallet sign an EIP-7702 authorization {chainId: ${network.chainId}, address: "${calibur}", nonce: the EOA nonce from step 1, as it is (not plus one: Bruno's runner sends the transaction, not the account)}. Bruno does not prepare it; the account's own key signs it. Its signed form is {chainId, address, nonce, r, s, yParity}.`,
        `\`calibur_batch\` with {chain: "${chain}", account: "${account}", calls, token: "${symbol}", authorizationList: [the signed authorization]}. It reads and measures the batch as if the account were delegated and returns \`paymentTypedData\` and \`typedData\`.`,
      ]),
      ...signedBatchSteps(4, chain, true),
      '',
      ON_REFUSAL,
    ].join('\n')
  },
})
