import { getAddress, isAddress, maxUint256, zeroAddress, type Address } from 'viem'
import type { NetworkConfig, TokenConfig } from '../../config/schema.ts'
import { resolveToken, type TokenRef } from './networks.ts'
import type { TokenInfo } from '../tool/schemas.ts'
import { ToolError } from '../tool/tool.ts'

/** What tools check in their arguments beyond what a JSON Schema can say. Each refusal is a `ToolError`. */

/**
 * An address argument, checksummed. A mixed-case address whose EIP-55 checksum does not match is
 * refused: it is most likely mistyped, and calls built for it cannot be taken back. The zero
 * address is refused too: tokens sent or approved there are lost or revert.
 *
 * @example
 * requireAddress('0x70997970c51812dc3a010c7d01b50e0d17dc79c8', 'to') // '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'
 */
export function requireAddress(value: string, field: string): Address {
  let address = checkedAddresses.get(value)
  if (address === undefined) {
    address = isAddress(value, { strict: true }) ? getAddress(value) : null
    if (checkedAddresses.size >= CHECKED_ADDRESSES_KEPT) checkedAddresses.clear()
    checkedAddresses.set(value, address)
  }
  if (address === null) {
    throw new ToolError(`${field} ${value} does not match its EIP-55 checksum (its mixed case is wrong): check it, or write it all lowercase`)
  }
  if (address === zeroAddress) throw new ToolError(`${field} is the zero address`)
  return address
}

// Each address argument's verdict (checksummed, or null for a bad checksum), so a busy caller's
// recurring addresses are hashed once; emptied when full rather than kept in LRU order.
const CHECKED_ADDRESSES_KEPT = 4096
const checkedAddresses = new Map<string, Address | null>()

/**
 * The token a caller named (a configured symbol, any case, or an address), or a refusal that
 * lists the symbols the network knows, so a model can retry with one of them.
 *
 * @example
 * requireToken(network.config, 'usdc') // { address: '0xA0b8…eB48', configured: { symbol: 'USDC', decimals: 6, … } }
 * requireToken(network.config, 'PEPE') // throws ToolError: unknown token "PEPE" on base: …
 */
export function requireToken(network: NetworkConfig, token: string): TokenRef {
  const found = resolveToken(network, token)
  if (found) return found
  const symbols = network.tokens.map((candidate) => candidate.symbol).join(', ')
  throw new ToolError(`unknown token "${token}" on ${network.name}: neither a configured symbol (${symbols}) nor a token address`)
}

/** A token resolved, as tools report it (`TokenInfo`), its address typed for encoding. */
export type ResolvedToken = TokenInfo & { readonly address: Address }

/**
 * A configured token as tools report it.
 *
 * @example
 * configuredTokenInfo({ symbol: 'USDC', address: '0xa0b8…eb48', decimals: 6 }) // { address: '0xA0b8…eB48', symbol: 'USDC', decimals: 6 }
 */
export function configuredTokenInfo(token: TokenRef & { configured: TokenConfig }): ResolvedToken {
  return { address: token.address, symbol: token.configured.symbol, decimals: token.configured.decimals }
}

/**
 * Whole units as people write them ("12.5") to base units, exactly. viem's `parseUnits` would
 * round digits the token cannot hold; a payment or allowance must never differ from what was
 * asked, so those are refused instead (trailing zeros are fine: "1.5000000" USDC is 1.5).
 * `unit` names the token in the refusal.
 *
 * @example
 * toBaseUnits('12.5', 6, 'USDC')      // 12_500_000n
 * toBaseUnits('0.1234567', 6, 'USDC') // throws ToolError: amount "0.1234567" has 7 decimals; USDC has 6
 */
export function toBaseUnits(amount: string, decimals: number, unit: string): bigint {
  const match = /^([0-9]+)(?:\.([0-9]+))?$/.exec(amount)
  if (!match) throw new ToolError(`amount "${amount}" is not a decimal number of whole units such as "12.5"`)
  const whole = match[1] ?? ''
  const fraction = (match[2] ?? '').replace(/0+$/, '')
  if (fraction.length > decimals) throw new ToolError(`amount "${amount}" has ${fraction.length} decimals; ${unit} has ${decimals}`)
  const base = BigInt(whole + fraction.padEnd(decimals, '0'))
  if (base > maxUint256) throw new ToolError(`amount "${amount}" ${unit} does not fit in a uint256`)
  return base
}
