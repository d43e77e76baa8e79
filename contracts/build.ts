import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import solc from 'solc'
import type { Abi, Hex } from 'viem'

/** The contracts we own, each in `contracts/<name>.sol`. */
export const contractNames = ['CaliburCompatible', 'PayeeVault', 'PaymentFirstEnforcer', 'Runner'] as const

export type ContractName = (typeof contractNames)[number]

/**
 * The compiler settings every artifact is built with, pinned so a rebuild is byte-identical.
 * `prague` is the EVM the contracts run on (EIP-7702); `bytecodeHash: none` keeps source comments
 * and paths out of the bytecode.
 *
 * @example
 * compilerSettings.evmVersion // 'prague'
 */
export const compilerSettings = {
  evmVersion: 'prague',
  metadata: { bytecodeHash: 'none' },
  // They run on every relay and deploy rarely: favour runtime gas over code size.
  optimizer: { enabled: true, runs: 10_000 },
  viaIR: false,
} as const

/** One compiled contract, as written to `contracts/artifacts/<name>.json`. */
export type ContractArtifact = {
  contractName: ContractName
  abi: Abi
  /** Creation code; constructor arguments are appended. */
  bytecode: Hex
  /** Runtime code with its immutables zeroed (they are written by the constructor). */
  deployedBytecode: Hex
  /** solc's full version string, e.g. `0.8.37+commit.f401782d.Emscripten.clang`. */
  solcVersion: string
  settings: typeof compilerSettings
}

const contractsDir = dirname(fileURLToPath(import.meta.url))

/**
 * Compiles the contracts with the solc-js of `package.json` (the sources pin its exact version).
 * Any diagnostic, warnings included, fails the build.
 *
 * @example
 * const { Runner } = compileContracts()
 * Runner.bytecode // '0x60a0…'
 */
export function compileContracts(): Record<ContractName, ContractArtifact> {
  const sources = Object.fromEntries(
    contractNames.map((name) => [`${name}.sol`, { content: readFileSync(join(contractsDir, `${name}.sol`), 'utf8') }]),
  )
  const input = {
    language: 'Solidity',
    sources,
    settings: {
      ...compilerSettings,
      outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object', 'evm.deployedBytecode.object'] } },
    },
  }
  const output = JSON.parse(solc.compile(JSON.stringify(input))) as SolcOutput
  const diagnostics = output.errors ?? []
  if (diagnostics.length > 0)
    throw new Error(`compileContracts: solc reported:\n${diagnostics.map((d) => d.formattedMessage).join('\n')}`)

  const solcVersion = solc.version() as string
  const compiled = (name: ContractName): ContractArtifact => {
    const contract = output.contracts?.[`${name}.sol`]?.[name]
    if (!contract) throw new Error(`compileContracts: solc produced no ${name}`)
    return {
      contractName: name,
      abi: sortKeys(contract.abi) as Abi,
      bytecode: `0x${contract.evm.bytecode.object}`,
      deployedBytecode: `0x${contract.evm.deployedBytecode.object}`,
      solcVersion,
      settings: compilerSettings,
    }
  }
  return Object.fromEntries(contractNames.map((name) => [name, compiled(name)])) as Record<ContractName, ContractArtifact>
}

/**
 * The files the build writes, by path relative to the repository root, with their exact contents:
 * one JSON artifact per contract and `contracts/abi.ts`, the ABIs `as const` for viem's inference.
 *
 * @example
 * Object.keys(renderArtifacts())
 * // ['contracts/artifacts/CaliburCompatible.json', 'contracts/artifacts/PayeeVault.json', 'contracts/artifacts/Runner.json', 'contracts/abi.ts']
 */
export function renderArtifacts(): Record<string, string> {
  const artifacts = compileContracts()
  const files: Record<string, string> = {}
  for (const name of contractNames)
    files[`contracts/artifacts/${name}.json`] = `${JSON.stringify(artifacts[name], null, 2)}\n`
  files['contracts/abi.ts'] = renderAbiModule(artifacts)
  return files
}

const abiExamples: Record<ContractName, string> = {
  CaliburCompatible: "client.readContract({ address: account, abi: caliburCompatibleAbi, functionName: 'getSeq', args: [0n] })",
  PayeeVault: "encodeFunctionData({ abi: payeeVaultAbi, functionName: 'withdraw', args: [usdc, treasury, amount] })",
  PaymentFirstEnforcer: "client.readContract({ address: paymentFirstEnforcer, abi: paymentFirstEnforcerAbi, functionName: 'redemptions', args: [delegationManager, delegationHash] })",
  Runner: "encodeFunctionData({ abi: runnerAbi, functionName: 'relayBatch', args: [account, calibur, { target: account, payment: paymentExecute, paymentGas, data: signedExecute }, callGas, usdc, payee, amount, charge] })",
}

function renderAbiModule(artifacts: Record<ContractName, ContractArtifact>): string {
  const blocks = contractNames.map((name) =>
    [
      `/**`,
      ` * ${name}'s ABI, as solc emitted it.`,
      ` *`,
      ` * @example`,
      ` * ${abiExamples[name]}`,
      ` */`,
      `export const ${abiConstName(name)} = ${JSON.stringify(artifacts[name].abi, null, 2)} as const`,
    ].join('\n'),
  )
  const header = '// Generated by contracts/build.ts (npm run build:contracts): edit the .sol sources, not this file.'
  return `${header}\n\n${blocks.join('\n\n')}\n`
}

/**
 * The name `contracts/abi.ts` exports a contract's ABI under.
 *
 * @example
 * abiConstName('CaliburCompatible') // 'caliburCompatibleAbi'
 */
export function abiConstName(name: ContractName): string {
  return `${name[0]!.toLowerCase()}${name.slice(1)}Abi`
}

// Objects' keys in code-point order, arrays kept in order: the files then depend on solc's output
// alone, not on the order it happened to list keys in.
function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys)
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(
      Object.entries(value)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([key, inner]) => [key, sortKeys(inner)]),
    )
  return value
}

type SolcOutput = {
  errors?: { severity: string; formattedMessage: string }[]
  contracts?: Record<
    string,
    Record<string, { abi: unknown; evm: { bytecode: { object: string }; deployedBytecode: { object: string } } }>
  >
}

// `npm run build:contracts` runs this file: write every artifact.
if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const root = dirname(contractsDir)
  const started = performance.now()
  const files = renderArtifacts()
  for (const [path, contents] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true })
    writeFileSync(join(root, path), contents)
    console.log(`wrote ${path}`)
  }
  console.log(`compiled with solc ${solc.version()} in ${Math.round(performance.now() - started)} ms`)
}
