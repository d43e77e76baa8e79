/**
 * x402 version 1 names EVM networks rather than numbering them: the chain ids it has a name for
 * (the table `@x402/evm` 2.27.0 keeps for v1). On any other chain only version 2 (`eip155:<id>`) pays.
 * The legacy `x402` 1.2.0 client knows fewer of them: base, base-sepolia, avalanche(-fuji), polygon(-amoy),
 * abstract(-testnet), iotex, sei(-testnet), peaq, story, educhain, skale-base-sepolia; not ethereum nor sepolia.
 *
 * @example
 * x402V1Network(8453) // 'base'
 * x402V1Network(31337) // undefined
 */
export function x402V1Network(chainId: number): string | undefined {
  return V1_NETWORK_NAMES[chainId]
}

const V1_NETWORK_NAMES: Readonly<Record<number, string>> = {
  1: 'ethereum',
  11155111: 'sepolia',
  2741: 'abstract',
  11124: 'abstract-testnet',
  84532: 'base-sepolia',
  8453: 'base',
  43113: 'avalanche-fuji',
  43114: 'avalanche',
  4689: 'iotex',
  1329: 'sei',
  1328: 'sei-testnet',
  137: 'polygon',
  80002: 'polygon-amoy',
  3338: 'peaq',
  1514: 'story',
  41923: 'educhain',
  324705682: 'skale-base-sepolia',
  4326: 'megaeth',
  143: 'monad',
  988: 'stable',
  2201: 'stable-testnet',
  42220: 'celo',
  14: 'flare',
}
