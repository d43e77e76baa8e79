import type { FastifyBaseLogger } from 'fastify'
import type { BrunoConfig } from '../../config/schema.ts'
import type { GroupCheck } from '../tool/groupPlugin.ts'
import { formatPreflight, preflight } from './preflight.ts'

/**
 * The preflight `bruno serve` runs before it listens. Every check is logged; a failing chain
 * refuses the start unless it is listed in `skip` (`--skip-preflight <chain>`), in which case its
 * failures are logged as warnings and it is served anyway. Returns the report to print on refusal,
 * or `undefined` when the start may go on.
 *
 * @example
 * const refusal = await preflightServe(config, process.env, groupChecks(served), ['base'], logger)
 * if (refusal) { process.stderr.write(refusal); return 1 }
 */
export async function preflightServe(
  config: BrunoConfig,
  env: NodeJS.ProcessEnv,
  groups: readonly GroupCheck[],
  skip: readonly string[],
  log: FastifyBaseLogger,
): Promise<string | undefined> {
  const unknown = skip.filter((name) => !config.networks.some((network) => network.name === name))
  if (unknown.length > 0) throw new Error(`--skip-preflight: no configured chain named ${unknown.map((name) => `"${name}"`).join(', ')}`)
  const results = await preflight(config, env, groups)
  for (const result of results) {
    for (const check of result.checks) {
      const fields = { chain: result.chain, check: check.name, detail: check.detail }
      if (check.ok) log.info(fields, 'preflight check passed')
      else if (skip.includes(result.chain)) log.warn(fields, 'preflight check failed; chain served anyway (--skip-preflight)')
      else log.error(fields, 'preflight check failed')
    }
  }
  const refused = results.filter((result) => !result.ok && !skip.includes(result.chain))
  if (refused.length === 0) return undefined
  return `${formatPreflight(refused)}\nBruno did not start: fix the failing checks, or serve a chain anyway with --skip-preflight <chain>.\n`
}
