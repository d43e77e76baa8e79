import t from 'tap'
import { EVM_NETWORK_CHAIN_ID_MAP } from '@x402/evm/v1'
import { x402V1Network } from '../../core/x402/v1Networks.ts'

// x402 v1's network names (core/x402/v1Networks.ts) against the official table, @x402/evm's v1
// EVM_NETWORK_CHAIN_ID_MAP: every name it knows, each at its chain id, and nothing else.

t.test('every v1 name the official package knows, at its chain id', async (t) => {
  const official = Object.entries(EVM_NETWORK_CHAIN_ID_MAP) as [string, number][]
  t.ok(official.length >= 20, `${official.length} names`)
  for (const [name, chainId] of official) t.equal(x402V1Network(chainId), name, `${chainId} is "${name}"`)
  for (const chainId of [31337, 42161, 10, 0]) t.equal(x402V1Network(chainId), undefined, `${chainId} has no v1 name`)
})
