#!/usr/bin/env node
import { dirname, resolve as resolvePath } from 'node:path'
import { devnetConfig, devnetServer } from '../config/devnet.ts'
import { parseServerConfig } from '../config/load.ts'
import { loadCheckedConfig, loadGroups, withDevnetPlugins } from '../config/loadGroups.ts'
import { PRESET_NAMES, PRESETS } from '../config/presets.ts'
import type { BrunoConfig } from '../config/schema.ts'
import { builtinGroups } from '../plugins/index.ts'
import type { DevnetDeployment } from './devnet/deploy.ts'
import { loadDevnet } from './devnet/load.ts'
import { bufferedLogDestination, createLogger } from './logger.ts'
import { parseFlags, type Command } from './commands/command.ts'
import { deployCommand } from './commands/deploy.ts'
import { preflightCommand } from './commands/preflight.ts'
import { setupCommand } from './commands/setup.ts'
import { sweepCommand } from './commands/sweep.ts'
import { checkPortFree, checkServeFlags, FlagError, LOG_LEVELS } from './commands/serveFlags.ts'
import { groupChecks, type ServedGroup } from './tool/groupPlugin.ts'
import { preflightServe } from './preflight/preflightServe.ts'
import { isLoopbackHost } from '../config/loopback.ts'
import { configuredSecrets } from './secrets.ts'
import { startServer } from './server.ts'

const commands: readonly Command[] = [deployCommand, preflightCommand, setupCommand, sweepCommand]

const USAGE = `Usage: bruno [serve] [options]
       bruno <command> [options]     (bruno <command> --help lists its flags)

Commands:
  serve        (the default) serve Bruno; the options below
${commands.map((command) => `  ${command.name.padEnd(12)} ${command.summary}`).join('\n')}

Serves Bruno over MCP (POST /mcp and /mcp/<groups>).
With no --config, starts the embedded devnet: a local anvil chain with USDC, WETH, a Uniswap V3
pool and SwapRouter02 deployed, and serves Bruno on it.
Before listening, runs \`bruno preflight\`'s checks and refuses to start on a failing chain.

Options:
  --config <file>      deployment config (JSON); see DEPLOYMENT.md. Omit for the devnet.
  --as <preset>        the devnet takes a preset's identity: its chain id, and the real contracts
                       at the preset's addresses (${PRESET_NAMES.join(', ')})
  --lanes <n>          the devnet's runner sends from n keys (lanes, runner.lanes), each allowed
                       by its Runner and funded (default 1)
  --plugin <path|package>  also serve this group on the devnet (repeatable); its devnet hook
                       deploys its contracts and gives its options (PLUGINS.md)
  --host <address>     override server.host
  --port <number>      override server.port (0 = any free port)
  --log-level <level>  ${LOG_LEVELS.join(' | ')} (default: info)
  --skip-preflight <chain>  serve this chain even if its preflight checks fail (repeatable)
  --no-preflight       start without running the preflight checks
  -h, --help           show this help

Flags, the config and the port are checked before the devnet is deployed or preflight runs.
`

interface ServeOptions {
  readonly config?: string
  readonly as?: string
  readonly lanes?: string
  readonly host?: string
  readonly port?: string
  readonly 'log-level'?: string
  readonly 'skip-preflight'?: string[]
  readonly 'no-preflight'?: boolean
  readonly plugin?: string[]
}

async function main(argv: string[]): Promise<number> {
  const command = commands.find((candidate) => candidate.name === argv[0])
  if (command) return command.run(argv.slice(1), { env: process.env, stdout: process.stdout, stderr: process.stderr })
  const { values, positionals } = parseFlags('bruno', {
    args: argv,
    allowPositionals: true,
    options: {
      config: { type: 'string' },
      as: { type: 'string' },
      lanes: { type: 'string' },
      host: { type: 'string' },
      port: { type: 'string' },
      'log-level': { type: 'string' },
      'skip-preflight': { type: 'string', multiple: true },
      'no-preflight': { type: 'boolean' },
      plugin: { type: 'string', multiple: true },
      help: { type: 'boolean', short: 'h' },
    },
  })
  if (values.help) {
    process.stdout.write(USAGE)
    return 0
  }
  if ((positionals[0] ?? 'serve') !== 'serve' || positionals.length > 1) {
    process.stderr.write(`bruno: unknown command "${positionals.join(' ')}"\n\n${USAGE}`)
    return 2
  }
  return serve(values)
}

async function serve(options: ServeOptions): Promise<number> {
  stopWhenOrphaned()
  let flags: ReturnType<typeof checkServeFlags>
  try {
    flags = checkServeFlags(options)
  } catch (error) {
    if (!(error instanceof FlagError)) throw error
    process.stderr.write(`bruno: ${error.message}\n(bruno --help lists every flag)\n`)
    return 2
  }
  const stops: (() => Promise<void>)[] = []
  let config: BrunoConfig
  let served: ServedGroup[]
  let deployment: DevnetDeployment | undefined
  const env = process.env
  const overrides = { server: { host: flags.host, port: flags.port } }
  if (options.config) {
    // The same check `bruno preflight` makes (groups and plugins included), with the flags in place.
    ;({ config, groups: served } = await loadCheckedConfig(options.config, env, builtinGroups, overrides))
    await checkPortFree(config.server.host, config.server.port)
  } else {
    // Everything the devnet's config will hold but the addresses, checked before anything is deployed.
    const server = parseServerConfig(devnetServer(flags))
    await checkPortFree(server.host, server.port)
    const identity = flags.as ? ` as ${PRESETS[flags.as].title} (chain id ${PRESETS[flags.as].chainId}, its contracts at their addresses)` : ''
    // Loaded first: a production install refuses here, before it says it is starting anything.
    const { startAnvil, deployDevnet } = await loadDevnet()
    process.stdout.write(`Starting the devnet${identity} (anvil + USDC, WETH, Uniswap V3, SwapRouter02, the Runner, and each group's own contracts)…\n`)
    const anvil = await startAnvil(flags.as ? { chainId: PRESETS[flags.as].chainId } : {})
    stops.push(() => anvil.stop())
    try {
      deployment = await deployDevnet(anvil.rpcUrl, { ...(flags.as ? { as: flags.as } : {}), ...(flags.lanes ? { lanes: flags.lanes - 1 } : {}) })
      config = await withDevnetPlugins(devnetConfig(deployment, env, flags), flags.plugins, deployment, process.cwd())
      served = await loadGroups(config, builtinGroups, process.cwd())
    } catch (error) {
      await anvil.stop()
      throw error
    }
  }
  const destination = bufferedLogDestination()
  process.once('exit', () => destination.flushSync())
  const logger = createLogger({ secrets: configuredSecrets(config, env), level: flags.logLevel, destination })
  if (!options['no-preflight']) {
    const refusal = await preflightServe(config, env, groupChecks(served), options['skip-preflight'] ?? [], logger)
    if (refusal) {
      process.stderr.write(refusal)
      for (const close of stops) await close()
      return 1
    }
  }
  // A config's `plugins` paths are relative to the config file.
  const configDir = options.config ? dirname(resolvePath(options.config)) : process.cwd()
  const server = await startServer({ config, groups: builtinGroups, configDir, logger, env })
  stops.unshift(() => server.close())
  // Written to stdout on purpose, not through the logger: the devnet's RPC URL is a local chain's,
  // no secret (a configured RPC URL stays scrubbed from every log line).
  process.stdout.write(banner(server.url, config, deployment))

  await new Promise<void>((resolve) => {
    const stop = () => resolve()
    process.once('SIGINT', stop)
    process.once('SIGTERM', stop)
  })
  process.stdout.write('\nStopping…\n')
  for (const close of stops) await close()
  return 0
}

/**
 * When the process that started Bruno dies without stopping it (`npm start`'s npm killed with
 * SIGKILL, which it cannot pass on), Bruno is adopted by init and no one would stop it: it stops
 * itself as on SIGTERM (gracefully once serving; before that, as SIGTERM's default does, the
 * devnet's anvil with it). Not when started by init itself (a container's PID 1, systemd): its
 * parent never changes.
 */
function stopWhenOrphaned(): void {
  const parent = process.ppid
  if (parent <= 1) return
  const watch = setInterval(() => {
    if (process.ppid === parent) return
    clearInterval(watch)
    process.stderr.write(`bruno: the process that started it (PID ${parent}) is gone; stopping\n`)
    process.kill(process.pid, 'SIGTERM')
  }, 1_000).unref()
}

/** How a user runs `bruno` here: the checkout's npm script, or the installed package's bin. */
const BRUNO_COMMAND = import.meta.url.endsWith('.ts') ? 'npm run bruno --' : 'npx bruno'

function banner(url: string, config: BrunoConfig, devnet: DevnetDeployment | undefined): string {
  const mcp = `${url}/mcp`
  const host = onlyHost(config.server)
  // Where the bound address answers only another Host, clients reach Bruno by that host (through the
  // proxy in front of it), and whatever probes this address must send it.
  const clientUrl = host ? `https://${host}` : url
  const clientConfig = JSON.stringify({ mcpServers: { bruno: { type: 'http', url: `${clientUrl}/mcp` } } }, null, 2)
  return [
    '',
    `Bruno is serving MCP at ${mcp}`,
    ...(host
      ? [
          `  answered only for Host ${config.server.allowedHosts.join(', ')} (server.allowedHosts): a request to ${url} without it is refused (403).`,
          `  clients use ${clientUrl}/mcp, through your proxy; health probes of this address send the Host: curl -H 'Host: ${host}' ${url}/healthz`,
        ]
      : []),
    `  groups: ${config.groups.join(', ')} (one group only: ${clientUrl}/mcp/<group>, several: ${clientUrl}/mcp/${config.groups.slice(0, 2).join(',')})`,
    `  chains: ${config.networks.map((network) => `${network.name} (chainId ${network.chainId})`).join(', ')}`,
    ...(devnet ? devnetLines(mcp, config, devnet) : []),
    '',
    'Client configuration (.mcp.json, Claude Code / Cursor style):',
    clientConfig,
    `or write it into each agent's project config: ${BRUNO_COMMAND} setup --url ${clientUrl}`,
    '',
    'Ctrl-C stops Bruno' + (devnet ? ' and the devnet.' : '.'),
    '',
  ].join('\n')
}

/**
 * The host clients must name when `server.allowedHosts` answers no loopback name (and not "*"): its
 * first entry; `undefined` when the bound address answers as it is.
 */
function onlyHost(server: BrunoConfig['server']): string | undefined {
  const hosts = server.allowedHosts
  if (hosts.length === 0 || hosts.includes('*') || hosts.some((host) => isLoopbackHost(host))) return undefined
  return hosts[0]
}

/** The devnet's RPC URL, its demo accounts with their (public, test-only) keys, and three calls to try first. */
function devnetLines(mcp: string, config: BrunoConfig, devnet: DevnetDeployment): string[] {
  const chain = config.networks[0]!.name
  const noEth = devnet.noEthAccount
  const call = (method: string, params: object) =>
    `curl -s ${mcp} -H 'content-type: application/json' -d '${JSON.stringify({ jsonrpc: '2.0', id: 1, method, params })}'`
  return [
    '',
    `Devnet (local anvil; its keys are public test keys, never use them elsewhere):`,
    `  RPC URL: ${devnet.rpcUrl}`,
    `  USDC ${devnet.usdc}  WETH ${devnet.weth}`,
    '  demo accounts (10,000 USDC each):',
    ...devnet.demoAccounts.map(({ address, privateKey }, index) => `    ${address}  key ${privateKey}  (anvil #${index + 1}, 10,000 ETH)`),
    `    ${noEth.address}  key ${noEth.privateKey}  (0 ETH, not delegated: an agent's fresh account)`,
    '',
    'Try first:',
    `  1. the tools:               ${call('tools/list', {})}`,
    `  2. the no-ETH account:      ${call('tools/call', { name: 'account', arguments: { chain, address: noEth.address } })}`,
    `  3. a gasless transfer:      ${call('tools/call', { name: 'transfer_authorization', arguments: { chain, from: noEth.address, to: devnet.demoAccounts[0]!.address, token: 'USDC', amount: '1' } })}`,
    '     (then pass its quoteCall to the tool "quote" with payment "authorization"; or ask your agent to send 1 USDC from the no-ETH account with Bruno)',
  ]
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`bruno: ${error instanceof Error ? error.message : String(error)}\n`)
    process.exit(error instanceof FlagError ? 2 : 1)
  },
)
