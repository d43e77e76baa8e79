import { definePlugin } from '../../core/plugin.ts'
import { erc20Approve } from './approve.ts'
import { erc20Transfer } from './transfer.ts'
import { wethUnwrap } from './unwrap.ts'

const instructions = `erc20 tools encode calls and send nothing. erc20_approve, erc20_transfer and weth_unwrap each return \`calls\` ([{to, value, data}]) that must run FROM the user's account — pass them to calibur_batch, alone or with other calls in order, or have the account's wallet send them — never from Bruno, and never to submit as they are. Tokens are configured symbols (e.g. "USDC") or addresses, resolved in the result (address, symbol, decimals; an unconfigured token's decimals are read from the chain); \`amount\` is whole units ("12.5", more than 0 for a transfer or an unwrap), and the result gives it back with its base units (\`amountBaseUnits\`, \`amountWei\`).`

/**
 * The erc20 group: encoders for the account's own token calls (approve, transfer, unwrap WETH).
 *
 * @example
 * await buildApp({ config, groups: [erc20Group], logger, serverInfo }) // serves it where config.groups names 'erc20'
 */
export const erc20Group = definePlugin({
  name: 'erc20',
  order: 40,
  setup: ({ chainArgument }) => ({ instructions, tools: [erc20Approve(chainArgument), erc20Transfer(chainArgument), wethUnwrap(chainArgument)] }),
})
