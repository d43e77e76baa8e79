import type { Address } from 'viem'

/**
 * Network presets: `"preset": "<name>"` in a `networks[]` entry fills its name, chain id, WETH,
 * tokens (USDC with its swap path to WETH, and WETH), Uniswap V3 addresses and, on OP-stack
 * chains, `l1DataFee`. The operator adds the RPC URL, the payee and the Runner; anything
 * the entry gives itself overrides the preset's (objects merged key by key, arrays and values
 * replaced: a `tokens` array replaces the preset's list whole).
 *
 * Every address is the project's own documentation, cited beside it:
 * - Uniswap V3 factory, QuoterV2, SwapRouter02 and the WETH9 Uniswap routes through: Uniswap's
 *   deployment pages, docs.uniswap.org/contracts/v3/reference/deployments/<chain>-deployments
 *   (source: github.com/Uniswap/docs, content/protocols/v3/deployments/v3-<chain>-deployments.mdx).
 * - USDC: Circle's "USDC Contract Addresses",
 *   https://developers.circle.com/stablecoins/usdc-contract-addresses (native, Circle-issued USDC).
 * - The USDC→WETH hop's pool fee, 500 (0.05 %), is not a documented fact: it is the USDC/WETH fee
 *   tier Bruno's pricing reads, and `bruno preflight`'s `pool` check tells whether that pool
 *   exists and has liquidity on the chain. Where it does not (a testnet may lack it), give the
 *   token's `swapPath` yourself (see DEPLOYMENT.md, *Presets*).
 */
export interface NetworkPreset {
  /** The network's default `name` (the `chain` argument of every tool). */
  readonly name: string
  /** How the chain calls itself, for messages. */
  readonly title: string
  readonly chainId: number
  readonly weth: Address
  readonly usdc: Address
  readonly uniswap: { readonly factory: Address; readonly swapRouter02: Address; readonly quoterV2: Address }
  /** OP-stack chains charge an L1 data fee. */
  readonly l1DataFee?: 'op-stack'
}

/** The pool fee of the preset USDC→WETH hop: 0.05 % (see the note above; not a documented fact). */
export const PRESET_USDC_WETH_FEE = 500

export const PRESETS = {
  // https://docs.uniswap.org/contracts/v3/reference/deployments/ethereum-deployments ("Mainnet"
  // column: UniswapV3Factory, QuoterV2, SwapRouter02; "Wrapped Native Token Addresses": WETH).
  // USDC: https://developers.circle.com/stablecoins/usdc-contract-addresses ("Ethereum").
  ethereum: {
    name: 'ethereum',
    title: 'Ethereum',
    chainId: 1,
    weth: '0xC02aaA39b223FE8D0A0e5C4F27eAD9083C756Cc2',
    usdc: '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48',
    uniswap: {
      factory: '0x1F98431c8aD98523631AE4a59f267346ea31F984',
      quoterV2: '0x61fFE014bA17989E743c5F6cB21bF9697530B21e',
      swapRouter02: '0x68b3465833fb72A70ecDF485E0e4C7bD8665Fc45',
    },
  },
  // https://docs.uniswap.org/contracts/v3/reference/deployments/base-deployments ("Base Address"
  // column; WETH 0x4200…0006, Base's predeploy). Base's own https://docs.base.org/chain/contracts
  // lists the same factory, quoterV2 and swapRouter. USDC: Circle's page ("Base").
  base: {
    name: 'base',
    title: 'Base',
    chainId: 8453,
    weth: '0x4200000000000000000000000000000000000006',
    usdc: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
    uniswap: {
      factory: '0x33128a8fC17869897dcE68Ed026d694621f6FDfD',
      quoterV2: '0x3d4e44Eb1374240CE5F1B871ab261CD16335B76a',
      swapRouter02: '0x2626664c2603336E57B271c5C0b26F421741e481',
    },
    l1DataFee: 'op-stack',
  },
  // https://docs.uniswap.org/contracts/v3/reference/deployments/arbitrum-deployments ("Arbitrum
  // Addresses" column; WETH 0x82aF…Bab1). USDC: Circle's page ("Arbitrum", native USDC, not USDC.e).
  arbitrum: {
    name: 'arbitrum',
    title: 'Arbitrum One',
    chainId: 42161,
    weth: '0x82aF49447D8a07e3bd95BD0d56f35241523fBab1',
    usdc: '0xaf88d065e77c8cC2239327C5EDb3A432268e5831',
    uniswap: {
      factory: '0x1F98431c8aD98523631AE4a59f267346ea31F984',
      quoterV2: '0x61fFE014bA17989E743c5F6cB21bF9697530B21e',
      swapRouter02: '0x68b3465833fb72A70ecDF485E0e4C7bD8665Fc45',
    },
  },
  // https://docs.uniswap.org/contracts/v3/reference/deployments/optimism-deployments ("Optimism
  // Addresses" column; WETH 0x4200…0006). USDC: Circle's page ("OP Mainnet", native USDC, not USDC.e).
  optimism: {
    name: 'optimism',
    title: 'OP Mainnet',
    chainId: 10,
    weth: '0x4200000000000000000000000000000000000006',
    usdc: '0x0b2C639c533813f4Aa9D7837CAf62653d097Ff85',
    uniswap: {
      factory: '0x1F98431c8aD98523631AE4a59f267346ea31F984',
      quoterV2: '0x61fFE014bA17989E743c5F6cB21bF9697530B21e',
      swapRouter02: '0x68b3465833fb72A70ecDF485E0e4C7bD8665Fc45',
    },
    l1DataFee: 'op-stack',
  },
  // https://docs.uniswap.org/contracts/v3/reference/deployments/ethereum-deployments ("Ethereum
  // Sepolia Addresses" column; WETH 0xfff9…6b14, given there in lowercase). USDC: Circle's page,
  // testnet table ("Ethereum Sepolia").
  sepolia: {
    name: 'sepolia',
    title: 'Sepolia',
    chainId: 11155111,
    weth: '0xfFf9976782d46CC05630D1f6eBAb18b2324d6B14',
    usdc: '0x1c7D4B196Cb0C7B01d743Fbc6116a902379C7238',
    uniswap: {
      factory: '0x0227628f3F023bb0B980b67D528571c95c6DaC1c',
      quoterV2: '0xEd1f6473345F45b75F8179591dd5bA1888cf2FB3',
      swapRouter02: '0x3bFA4769FB09eefC5a80d6E87c3B9C650f7Ae48E',
    },
  },
  // https://docs.uniswap.org/contracts/v3/reference/deployments/base-deployments ("Base Sepolia
  // Address" column; WETH 0x4200…0006). USDC: Circle's page, testnet table ("Base Sepolia").
  'base-sepolia': {
    name: 'base-sepolia',
    title: 'Base Sepolia',
    chainId: 84532,
    weth: '0x4200000000000000000000000000000000000006',
    usdc: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
    uniswap: {
      factory: '0x4752ba5DBc23f44D87826276BF6Fd6b1C372aD24',
      quoterV2: '0xC5290058841028F1614F3A6F0F5816cAd0df5E27',
      swapRouter02: '0x94cC0AaC535CCDB3C01d6787D6413C739ae12bc4',
    },
    l1DataFee: 'op-stack',
  },
} as const satisfies Record<string, NetworkPreset>

export type PresetName = keyof typeof PRESETS

/** Every preset's name, in the order above. */
export const PRESET_NAMES = Object.keys(PRESETS) as PresetName[]

/**
 * The preset whose chain id this is, if any.
 *
 * @example
 * presetOfChain(8453)?.name // 'base'
 */
export function presetOfChain(chainId: number): (NetworkPreset & { readonly preset: PresetName }) | undefined {
  const name = PRESET_NAMES.find((candidate) => PRESETS[candidate].chainId === chainId)
  return name && { ...PRESETS[name], preset: name }
}

/**
 * The network entry a preset stands for, as a config file would spell it out (a plain object,
 * merged under what the entry itself gives).
 *
 * @example
 * presetEntry('base').uniswap.factory // '0x33128a8fC17869897dcE68Ed026d694621f6FDfD'
 */
export function presetEntry(name: PresetName) {
  const preset: NetworkPreset = PRESETS[name]
  return {
    name: preset.name,
    chainId: preset.chainId,
    weth: preset.weth,
    tokens: [
      { symbol: 'USDC', address: preset.usdc, decimals: 6, swapPath: [{ fee: PRESET_USDC_WETH_FEE, tokenOut: preset.weth }] },
      { symbol: 'WETH', address: preset.weth, decimals: 18 },
    ],
    uniswap: { ...preset.uniswap },
    ...(preset.l1DataFee ? { l1DataFee: preset.l1DataFee } : {}),
  }
}
