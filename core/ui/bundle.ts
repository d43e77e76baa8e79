import { readFile } from 'node:fs/promises'

/** The browser scripts Bruno serves: both views' (one script) and the signing page's (core/ui/browser). */
export const BUNDLES = ['view', 'signPage'] as const
export type BundleName = (typeof BUNDLES)[number]

const built = new Map<BundleName, Promise<string>>()

/**
 * A browser script as one minified ES module, made once per process. A packed install reads the
 * one `npm run build` wrote (dist/ui/<name>.js, beside dist/core); a checkout bundles the
 * TypeScript with esbuild, a development dependency, on first use (about half a second).
 *
 * @example
 * (await browserBundle('signPage')).length // ≈ 102,000
 */
export function browserBundle(name: BundleName): Promise<string> {
  let script = built.get(name)
  if (!script) {
    script = readFile(new URL(`../../ui/${name}.js`, import.meta.url), 'utf8').catch(() => bundleSource(name))
    built.set(name, script)
  }
  return script
}

/**
 * Bundles `core/ui/browser/<name>.ts` and what it imports (viem, ext-apps) for the browser.
 * ext-apps is taken as its own browser build (`app-with-deps`, its dependencies inside): 65 kB
 * less than bundling its modules and their zod.
 */
export async function bundleSource(name: BundleName): Promise<string> {
  const { build } = await import('esbuild')
  const result = await build({
    entryPoints: [new URL(`./browser/${name}.ts`, import.meta.url).pathname],
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    minify: true,
    legalComments: 'none',
    logLevel: 'silent',
    alias: { '@modelcontextprotocol/ext-apps': '@modelcontextprotocol/ext-apps/app-with-deps' },
  })
  return result.outputFiles[0]!.text
}
