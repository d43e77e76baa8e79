import { readFileSync } from 'node:fs'
import { createHash } from 'node:crypto'
import t from 'tap'
import { type Abi, type Hex, toFunctionSelector } from 'viem'
import { formatAbiItem } from 'viem/utils'
import { caliburCompatibleArtifact, payeeVaultArtifact, runnerArtifact } from '../contracts/artifacts.ts'
import { renderArtifacts } from '../contracts/build.ts'

const root = new URL('../', import.meta.url)

t.test('the committed artifacts are what the pinned compiler builds from the sources', async (t) => {
  const started = performance.now()
  const files = renderArtifacts()
  t.comment(`compiled in ${Math.round(performance.now() - started)} ms`)
  t.same(Object.keys(files).sort(), [
    'contracts/abi.ts',
    'contracts/artifacts/CaliburCompatible.json',
    'contracts/artifacts/PayeeVault.json',
    'contracts/artifacts/PaymentFirstEnforcer.json',
    'contracts/artifacts/Runner.json',
  ])
  for (const [path, contents] of Object.entries(files))
    t.equal(readFileSync(new URL(path, root), 'utf8'), contents, `${path} is up to date (npm run build:contracts)`)
})

t.test('the typed ABIs are the artifacts\' ABIs', async (t) => {
  for (const artifact of [caliburCompatibleArtifact, payeeVaultArtifact, runnerArtifact]) {
    const json = JSON.parse(
      readFileSync(new URL(`contracts/artifacts/${artifact.contractName}.json`, root), 'utf8'),
    ) as { abi: unknown }
    t.same(artifact.abi, json.abi, artifact.contractName)
  }
})

// Signature → selector of each function or error in an ABI.
const selectorsOf = (abi: Abi, type: 'function' | 'error') =>
  Object.fromEntries(
    abi
      .filter((item) => item.type === type)
      .map((item) => [formatAbiItem(item), toFunctionSelector(formatAbiItem(item))]),
  )

t.test('CaliburCompatible has the real Calibur\'s selectors and error selectors', async (t) => {
  const vector = (
    JSON.parse(readFileSync(new URL('golden/calibur-vectors.json', root), 'utf8')) as {
      vectors: { selectors: Record<string, Hex>; errorSelectors: Record<string, Hex> }[]
    }
  ).vectors[0]!
  const functions = selectorsOf(caliburCompatibleArtifact.abi, 'function')
  for (const [signature, selector] of Object.entries(vector.selectors)) t.equal(functions[signature], selector, signature)
  // Every error we raise is one of Calibur's, by the same name and so the same selector.
  for (const [signature, selector] of Object.entries(selectorsOf(caliburCompatibleArtifact.abi, 'error')))
    t.equal(vector.errorSelectors[signature], selector, signature)
})

t.test('a third party\'s pinned artifact (contracts/vendor) is the bytecode its provenance names, unchanged', async (t) => {
  const pinned = JSON.parse(readFileSync(new URL('contracts/vendor/SwapRouter02.json', root), 'utf8')) as { source: string; bytecodeSha256: string; abi: Abi; bytecode: Hex }
  t.match(pinned.source, /^npm @uniswap\/swap-router-contracts@1\.3\.1, artifacts\/contracts\/SwapRouter02\.sol\/SwapRouter02\.json/)
  t.equal(createHash('sha256').update(pinned.bytecode).digest('hex'), pinned.bytecodeSha256, 'the creation code hashes to the recorded SHA-256')
  // The selectors Bruno's uniswap group encodes (golden/uniswap.json): the ABI the devnet deploys with has them.
  const selectors = pinned.abi.filter((item) => item.type === 'function').map((item) => toFunctionSelector(formatAbiItem(item as never)))
  for (const selector of ['0xac9650d8', '0xb858183f', '0x49404b7c']) t.ok(selectors.includes(selector as Hex), `its ABI has ${selector}`)
})
