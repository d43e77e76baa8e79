import { createPublicClient, custom, decodeFunctionData, encodeFunctionResult, type Abi, type Address, type Hex, type PublicClient } from 'viem'
import type { NetworkConfig } from '../../config/schema.ts'
import type { Network } from '../../core/chain/networks.ts'
import { OFFLINE_RPC_URL, offlineConfig } from '../fixtures/bruno.ts'

// A chain for unit tests that need one read or two: a JSON-RPC node answered by the test itself
// (viem's `custom` transport), so the code under test runs unchanged through a real viem client.
// Only the node is fake; nothing of Bruno's is.

/** One JSON-RPC request as the node saw it. */
export interface SeenRequest {
  readonly method: string
  readonly params: readonly unknown[]
}

/** Answers one request: a JSON-RPC result, or throws (viem reports it as the node's error). */
export type NodeAnswer = (request: SeenRequest) => unknown

/** A viem client on a node that answers `methods`; every request is recorded in `seen`. */
export function fakeClient(methods: Record<string, NodeAnswer>): { client: PublicClient; seen: SeenRequest[] } {
  const seen: SeenRequest[] = []
  const client = createPublicClient({
    transport: custom({
      async request({ method, params }: { method: string; params?: unknown }) {
        const request = { method, params: (params ?? []) as readonly unknown[] }
        seen.push(request)
        const answer = methods[method]
        if (!answer) throw new Error(`the fake node does not answer ${method}`)
        return answer(request)
      },
    }, { retryCount: 0 }),
  }) as PublicClient
  return { client, seen }
}

/** The chain-free test config's network (USDC priced through its USDC/WETH pool), with `overrides`. */
export function networkConfig(overrides: Partial<NetworkConfig> = {}): NetworkConfig {
  const config = offlineConfig({ ...process.env }).networks[0]!
  return { ...config, ...overrides }
}

/** A `Network` on `client`; it sends nothing, and keeps each price window it is told in `priceWindows`. */
export function fakeNetwork(client: PublicClient, config: NetworkConfig = networkConfig()): Network & { priceWindows: { pool: Address; seconds: number }[] } {
  const priceWindows: { pool: Address; seconds: number }[] = []
  return {
    name: config.name,
    config,
    client,
    runnerClient: client,
    laneClient: () => client,
    sendRawTransaction: () => Promise.reject(new Error(`a unit test sends nothing (${OFFLINE_RPC_URL})`)),
    notePriceWindow: (pool, seconds) => priceWindows.push({ pool, seconds }),
    priceWindows,
  }
}

/**
 * An `eth_call` answer for contracts given by address: each call's function is decoded with the
 * contract's ABI (the test's own, written independently of Bruno's) and answered by `answer`.
 */
export function ethCall(contracts: Record<string, { abi: Abi; answer: (functionName: string, args: readonly unknown[]) => unknown }>): NodeAnswer {
  return ({ params }) => {
    const { to, data } = params[0] as { to: string; data: Hex }
    const contract = Object.entries(contracts).find(([address]) => address.toLowerCase() === to.toLowerCase())?.[1]
    if (!contract) throw new Error(`no contract at ${to}`)
    const { functionName, args } = decodeFunctionData({ abi: contract.abi, data })
    const result = contract.answer(functionName, args ?? [])
    return encodeFunctionResult({ abi: contract.abi, functionName, result } as Parameters<typeof encodeFunctionResult>[0])
  }
}
