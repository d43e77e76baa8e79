import { mkdir, writeFile } from 'node:fs/promises'
import { BUNDLES, bundleSource } from './bundle.ts'

/** `npm run build`'s last step: the browser scripts into dist/ui/, so a packed install needs no bundler. */
await mkdir(new URL('../../dist/ui/', import.meta.url), { recursive: true })
for (const name of BUNDLES) await writeFile(new URL(`../../dist/ui/${name}.js`, import.meta.url), await bundleSource(name))
