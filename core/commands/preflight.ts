import { PRESET_NAMES, type PresetName } from '../../config/presets.ts'
import { suggestion } from '../../config/suggest.ts'
import { groupChecks } from '../tool/groupPlugin.ts'
import { formatPreflight, preflight } from '../preflight/preflight.ts'
import { parseFlags, type Command } from './command.ts'
import { configOrDevnet } from './configOrDevnet.ts'

const usage = `Usage: bruno preflight [options]

Checks that each configured chain can be served, and names every check with pass or FAIL and why:
  chain id         the RPC answers with the configured chainId
  uniswap          code at the factory, SwapRouter02 and QuoterV2
  <group>          each served group's own check, named after it: a delegate's group checks
                   that its contracts are where its options put them and behave as they must
                   (DEPLOYMENT.md, Preflight, lists the built-in groups' checks)
  runner contract  runner.contract holds the committed Runner artifact's code with the runner
                   key's address as operator
  runner balance   the runner holds at least runner.minBalanceWei
  token <SYMBOL>   code, decimals() as configured, name() and the EIP-712 domain
  weth             the configured weth is WETH (symbol() "WETH", 18 decimals): every swap path
                   ends there, and prices are WETH per token
  pool <A→B fee>   each swapPath hop's pool exists and has liquidity
Exits 1 if any check fails. \`bruno serve\` runs the same checks before it starts.

Options:
  --config <file>   deployment config (JSON), checked as serve checks it. Omit for the embedded devnet.
  --as <preset>     (no --config) the devnet with a preset's identity, as serve --as starts it
  --chain <name>    check only this chain (repeatable)
  -h, --help        show this help
`

/**
 * `bruno preflight`: runs the preflight checks and prints the report; exit code 1 on a failure.
 *
 * @example
 * // npx tsx core/cli.ts preflight --config /etc/bruno/bruno.json
 */
export const preflightCommand: Command = {
  name: 'preflight',
  summary: 'check each configured chain (RPC, contracts, runner funds, tokens, pools); exit 1 on a failure',
  usage,
  async run(argv, io) {
    const { values } = parseFlags('bruno preflight', {
      args: [...argv],
      options: {
        config: { type: 'string' },
        as: { type: 'string' },
        chain: { type: 'string', multiple: true },
        help: { type: 'boolean', short: 'h' },
      },
    })
    if (values.help) {
      io.stdout.write(usage)
      return 0
    }
    if (values.as !== undefined && (values.config !== undefined || !(PRESET_NAMES as string[]).includes(values.as))) {
      io.stderr.write(
        `bruno preflight: ${values.config !== undefined ? '--as is for the devnet; with --config, name the preset in the config file' : `--as: no preset is named "${values.as}"; ${suggestion(values.as, PRESET_NAMES, 'the presets are')}`}\n`,
      )
      return 2
    }
    const target = await configOrDevnet(values.config, io.env, values.as as PresetName | undefined)
    try {
      const unknown = values.chain?.filter((name) => !target.config.networks.some((network) => network.name === name)) ?? []
      if (unknown.length > 0) {
        io.stderr.write(`bruno preflight: no configured chain named ${unknown.map((name) => `"${name}"`).join(', ')}\n`)
        return 2
      }
      const results = await preflight(target.config, io.env, groupChecks(target.groups), values.chain)
      io.stdout.write(formatPreflight(results))
      return results.every((result) => result.ok) ? 0 : 1
    } finally {
      await target.stop()
    }
  },
}
