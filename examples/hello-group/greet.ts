import { configuredTokenInfo, defineTool, requireToken, TokenArgument, TokenInfo, ToolError, Type, type BrunoServices } from 'bruno/plugin'

/**
 * `hello_greet`: a read-only tool. It reads the chain's configuration through the services and
 * refuses, with a `ToolError` the caller can act on, a token the chain does not configure.
 *
 * @example
 * await client.callTool({ name: 'hello_greet', arguments: { chain: 'base', token: 'usdc' } })
 * // structuredContent: { greeting: 'Hello from base (chain 8453): USDC has 6 decimals', token: { address: '0x8335…2913', symbol: 'USDC', decimals: 6 } }
 */
export const greet = (services: BrunoServices, greeting: string) =>
  defineTool({
    name: 'hello_greet',
    title: 'Greet a token',
    description: 'Greets a configured token of a chain and says what Bruno knows of it. Reads configuration only; sends nothing.',
    input: Type.Object({ chain: services.chainArgument, token: TokenArgument }, { additionalProperties: false }),
    output: Type.Object({ greeting: Type.String(), token: TokenInfo }, { additionalProperties: false }),
    annotations: { readOnlyHint: true, openWorldHint: false },
    handler: async (args) => {
      // The schema admits only configured network names.
      const { config } = services.networks.get(args.chain as string)
      const found = requireToken(config, args.token)
      if (!found.configured) throw new ToolError(`hello greets configured tokens only; ${found.address} is not one on ${config.name}`)
      const token = configuredTokenInfo({ ...found, configured: found.configured })
      return { greeting: `${greeting} from ${config.name} (chain ${config.chainId}): ${token.symbol} has ${token.decimals} decimals`, token }
    },
  })
