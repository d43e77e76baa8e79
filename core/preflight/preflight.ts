import type { BrunoConfig } from '../../config/schema.ts'
import { Networks } from '../chain/networks.ts'
import type { GroupCheck } from '../tool/groupPlugin.ts'
import type { PreflightCheck } from './check.ts'
import { preflightChain } from './preflightChain.ts'

/** One chain's checks, and whether all passed. */
export interface ChainPreflight {
  readonly chain: string
  readonly chainId: number
  readonly ok: boolean
  readonly checks: readonly PreflightCheck[]
}

/**
 * Runs the preflight checks of every configured chain (or of `only` those), chains in parallel:
 * core's, then each served group's (`groups`, from `groupChecks`).
 *
 * @example
 * const results = await preflight(config, process.env, groupChecks(served))
 * process.stdout.write(formatPreflight(results))
 * process.exitCode = results.every((chain) => chain.ok) ? 0 : 1
 */
export async function preflight(config: BrunoConfig, env: NodeJS.ProcessEnv, groups: readonly GroupCheck[], only?: readonly string[]): Promise<ChainPreflight[]> {
  const networks = new Networks(config, env)
  const chosen = config.networks.filter((network) => !only || only.includes(network.name))
  return Promise.all(
    chosen.map(async (network) => {
      const checks = await preflightChain(networks.get(network.name), env, groups)
      return { chain: network.name, chainId: network.chainId, ok: checks.every((check) => check.ok), checks }
    }),
  )
}

/**
 * The report a person reads: each chain, then each check as `[pass]` or `[FAIL]` with its detail.
 *
 * @example
 * formatPreflight(results) // "local (chainId 31337): ok\n  [pass] chain id: 31337\n…"
 */
export function formatPreflight(results: readonly ChainPreflight[]): string {
  return results
    .map((result) =>
      [
        `${result.chain} (chainId ${result.chainId}): ${result.ok ? 'ok' : `${result.checks.filter((check) => !check.ok).length} check(s) failed`}`,
        ...result.checks.map((check) => `  [${check.ok ? 'pass' : 'FAIL'}] ${check.name}: ${check.detail}`),
      ].join('\n'),
    )
    .join('\n\n')
    .concat('\n')
}
