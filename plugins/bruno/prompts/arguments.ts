import { getAddress, isAddress, zeroAddress, type Address } from 'viem'
import {
  PromptArgumentError,
  completeChain,
  completePaymentToken,
  type NetworkConfig,
  type PromptArgumentDefinition,
  type ToolContext,
} from '../../../core/plugin.ts'

/** The arguments every relay prompt shares. */
export const chainArgument: PromptArgumentDefinition = {
  name: 'chain',
  title: 'Chain',
  description: 'the network, by its configured name',
  required: true,
  complete: completeChain,
}

export const accountArgument: PromptArgumentDefinition = {
  name: 'account',
  title: 'Account',
  description: 'your account\'s address (0x…): it makes the calls, pays and signs',
  required: true,
}

export const tokenArgument: PromptArgumentDefinition = {
  name: 'token',
  title: 'Pay in',
  description: 'the token to pay the gas in, a configured symbol (default: the first configured token Bruno can price, e.g. USDC)',
  complete: completePaymentToken,
}

/** The network a prompt's `chain` names, or a refusal that lists the configured ones. */
export function promptNetwork(args: Readonly<Record<string, string>>, { networks }: ToolContext): NetworkConfig {
  const chain = args.chain!
  if (!networks.names.includes(chain)) throw new PromptArgumentError(`chain "${chain}" is not configured: this deployment serves ${networks.names.join(', ')}`)
  return networks.get(chain).config
}

/**
 * The symbol to pay in: the named token if the network prices it (it has a swap path to WETH),
 * else a refusal; with none named, the first such configured token.
 */
export function promptPaymentSymbol(network: NetworkConfig, token: string | undefined): string {
  const priced = network.tokens.filter((candidate) => candidate.swapPath)
  if (token === undefined) {
    const first = priced[0]
    if (!first) throw new PromptArgumentError(`${network.name} has no token Bruno can price (none has a swapPath)`)
    return first.symbol
  }
  const named = token.toLowerCase()
  const found = network.tokens.find((candidate) => candidate.symbol.toLowerCase() === named || candidate.address.toLowerCase() === named)
  if (!found?.swapPath) {
    throw new PromptArgumentError(`Bruno is not paid in "${token}" on ${network.name}: pay in ${priced.map((candidate) => candidate.symbol).join(', ') || 'nothing (no token has a swapPath)'}`)
  }
  return found.symbol
}

/** The account address, checksummed; a malformed, badly checksummed or zero address is refused. */
export function promptAccount(value: string): Address {
  if (!/^0x[0-9a-fA-F]{40}$/.test(value) || !isAddress(value, { strict: true }) || getAddress(value) === zeroAddress) {
    throw new PromptArgumentError(`account "${value}" is not an address (0x and 40 hex digits; mixed case must carry its EIP-55 checksum)`)
  }
  return getAddress(value)
}
