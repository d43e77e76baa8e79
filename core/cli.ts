import { dirname, resolve as resolvePath } from 'node:path'
import { parseArgs } from 'node:util'
import { DEVNET_RPC_ENV, devnetConfig } from '../config/devnet.ts'
import { loadConfig } from '../config/load.ts'
import type { BrunoConfig } from '../config/schema.ts'
import { builtinGroups } from '../plugins/index.ts'
import { startAnvil } from './devnet/anvil.ts'
import { deployDevnet } from './devnet/deploy.ts'
import { bufferedLogDestination, createLogger } from './logger.ts'
import type { Command } from './commands/command.ts'
import { preflightCommand } from './commands/preflight.ts'
import { setupCommand } from './commands/setup.ts'
import { preflightServe } from './preflight/preflightServe.ts'
import { configuredSecrets } from './secrets.ts'
import { startServer } from './server.ts'

const commands: readonly Command[] = [preflightCommand, setupCommand]

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
  --host <address>     override server.host
  --port <number>      override server.port (0 = any free port)
  --log-level <level>  trace | debug | info | warn | error (default: info)
  --skip-preflight <chain>  serve this chain even if its preflight checks fail (repeatable)
  --no-preflight       start without running the preflight checks
  -h, --help           show this help
`

interface ServeOptions {
  readonly config?: string
  readonly host?: string
  readonly port?: string
  readonly 'log-level'?: string
  readonly 'skip-preflight'?: string[]
  readonly 'no-preflight'?: boolean
}

async function main(argv: string[]): Promise<number> {
  const command = commands.find((candidate) => candidate.name === argv[0])
  if (command) return command.run(argv.slice(1), { env: process.env, stdout: process.stdout, stderr: process.stderr })
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      config: { type: 'string' },
      host: { type: 'string' },
      port: { type: 'string' },
      'log-level': { type: 'string' },
      'skip-preflight': { type: 'string', multiple: true },
      'no-preflight': { type: 'boolean' },
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
  const stops: (() => Promise<void>)[] = []
  let config: BrunoConfig
  const env = process.env
  if (options.config) {
    config = await loadConfig(options.config, env)
  } else {
    process.stdout.write('Starting the devnet (anvil + USDC, WETH, Uniswap V3, SwapRouter02)…\n')
    const anvil = await startAnvil()
    stops.push(() => anvil.stop())
    config = devnetConfig(await deployDevnet(anvil.rpcUrl), env)
  }
  config = {
    ...config,
    server: {
      ...config.server,
      ...(options.host ? { host: options.host } : {}),
      ...(options.port ? { port: Number(options.port) } : {}),
    },
  }
  const destination = bufferedLogDestination()
  process.once('exit', () => destination.flushSync())
  const logger = createLogger({ secrets: configuredSecrets(config, env), level: options['log-level'] ?? 'info', destination })
  if (!options['no-preflight']) {
    const refusal = await preflightServe(config, env, options['skip-preflight'] ?? [], logger)
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
  process.stdout.write(banner(server.url, config, !options.config))

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

function banner(url: string, config: BrunoConfig, devnet: boolean): string {
  const mcp = `${url}/mcp`
  const clientConfig = JSON.stringify({ mcpServers: { bruno: { type: 'http', url: mcp } } }, null, 2)
  return [
    '',
    `Bruno is serving MCP at ${mcp}`,
    `  groups: ${config.groups.join(', ')} (one group only: ${mcp}/<group>, several: ${mcp}/${config.groups.slice(0, 2).join(',')})`,
    `  chains: ${config.networks.map((network) => `${network.name} (chainId ${network.chainId})`).join(', ')}`,
    ...(devnet ? [`  devnet: local anvil, RPC URL in $${DEVNET_RPC_ENV} of this process; demo accounts are anvil's #1–#3 with 10,000 USDC each`] : []),
    '',
    'Client configuration (.mcp.json, Claude Code / Cursor style):',
    clientConfig,
    `or write it into each agent's project config: npm run bruno -- setup --url ${url}`,
    '',
    'Ctrl-C stops Bruno' + (devnet ? ' and the devnet.' : '.'),
    '',
  ].join('\n')
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`bruno: ${error instanceof Error ? error.message : String(error)}\n`)
    process.exit(1)
  },
)
