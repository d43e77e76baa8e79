import { decodeFunctionData, formatUnits, getAddress, isAddress, parseAbi, type Address, type Hex } from 'viem'

/**
 * What a view and the signing page know of a chain, to put calls into words: the deployment's own
 * contracts and configured tokens (the published `bruno://<chain>/config`, never the tool result).
 */
export interface KnownChain {
  readonly chain: string
  readonly chainId: number
  readonly payee: Address
  readonly runner: Address
  readonly weth: Address
  readonly swapRouter02: Address
  /** What the runner keeps beyond the gas it paid, in basis points (`margins.markupBps`). */
  readonly markupBps: number
  readonly tokens: readonly { readonly symbol: string; readonly address: Address; readonly decimals: number }[]
  readonly delegates: readonly { readonly name: string; readonly address: Address }[]
}

/** One call in words: a headline a person reads, and the facts under it. */
export interface CallWords {
  readonly title: string
  readonly details: readonly string[]
  /** True where Bruno could not decode the call: the target and selector are all it shows. */
  readonly unknown?: true
}

/** A call as the typed data carries it: `value` a decimal string (wei). */
export interface PlainCall {
  readonly to: string
  readonly value: string
  readonly data: string
}

const erc20 = parseAbi(['function transfer(address to, uint256 amount)', 'function approve(address spender, uint256 amount)'])
const weth = parseAbi(['function withdraw(uint256 amount)', 'function deposit()'])
const swapRouter = parseAbi([
  'function multicall(bytes[] data)',
  'function multicall(uint256 deadline, bytes[] data)',
  'function exactInput((bytes path, address recipient, uint256 amountIn, uint256 amountOutMinimum) params)',
  'function exactInputSingle((address tokenIn, address tokenOut, uint24 fee, address recipient, uint256 amountIn, uint256 amountOutMinimum, uint160 sqrtPriceLimitX96) params)',
  'function unwrapWETH9(uint256 amountMinimum, address recipient)',
])

const MAX_UINT256 = (1n << 256n) - 1n
/** SwapRouter02's `ADDRESS_THIS`: the router keeps the output (to unwrap it). */
const ROUTER_ITSELF = '0x0000000000000000000000000000000000000002'

/**
 * Text from outside (a token symbol, a name) as a person may safely read it: control, format and
 * bidirectional characters removed (a symbol with U+202E could show another amount), at most 24
 * characters. Rendering is always as text, never HTML; this guards what the text says.
 *
 * @example
 * plainText('USDC\u202E0001') // 'USDC0001'
 */
export function plainText(text: string, max = 24): string {
  const plain = text.replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu, '').trim()
  return plain.length > max ? `${plain.slice(0, max - 1)}…` : plain
}

/**
 * An address as a person checks it: checksummed, the first six and last four hex digits, and what
 * Bruno knows it to be on that chain.
 *
 * @example
 * addressWords(known, '0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48') // '0xA0b869…eB48 (USDC)'
 */
export function addressWords(known: KnownChain | undefined, address: string, account?: string): string {
  if (!isAddress(address, { strict: false })) return `an invalid address (${plainText(address, 44)})`
  const checksummed = getAddress(address)
  const short = `${checksummed.slice(0, 8)}…${checksummed.slice(-4)}`
  const name = nameOf(known, checksummed, account)
  return name ? `${short} (${name})` : short
}

function nameOf(known: KnownChain | undefined, address: Address, account?: string): string | undefined {
  if (account && isAddress(account, { strict: false }) && getAddress(account) === address) return 'your account'
  if (!known) return undefined
  if (address === known.payee) return "Bruno's payee"
  if (address === known.runner) return "Bruno's Runner"
  if (address === known.swapRouter02) return 'Uniswap SwapRouter02'
  if (address === known.weth) return 'WETH'
  const token = known.tokens.find((candidate) => candidate.address === address)
  if (token) return plainText(token.symbol)
  const delegate = known.delegates.find((candidate) => candidate.address === address)
  return delegate ? plainText(delegate.name) : undefined
}

/**
 * An amount of a token in whole units with its symbol, when Bruno knows the token; else the base
 * units and the token's address.
 *
 * @example
 * tokenAmount(known, USDC, 2_500_000n) // '2.5 USDC'
 */
export function tokenAmount(known: KnownChain | undefined, token: string, amount: bigint): string {
  const found = known && isAddress(token, { strict: false }) ? known.tokens.find((candidate) => candidate.address === getAddress(token)) : undefined
  if (!found) return `${amount} base units of the token ${addressWords(known, token)}`
  if (amount === MAX_UINT256) return `an unlimited amount of ${plainText(found.symbol)}`
  return `${formatUnits(amount, found.decimals)} ${plainText(found.symbol)}`
}

/** A token as a person names it: its symbol where Bruno knows it, else its address. */
export function tokenName(known: KnownChain | undefined, token: string): string {
  const found = known && isAddress(token, { strict: false }) ? known.tokens.find((candidate) => candidate.address === getAddress(token)) : undefined
  return found ? plainText(found.symbol) : `token ${addressWords(known, token)}`
}

/** Wei as ETH in words. */
export function ethAmount(wei: bigint): string {
  return `${formatUnits(wei, 18)} ETH`
}

/**
 * A call in words, decoded where Bruno knows the contract on that chain: a configured token's
 * transfer or approve (symbol and amount), WETH's unwrap, a Uniswap SwapRouter02 swap (what goes in,
 * the least that comes out, who receives it); ETH sent with it. Anything else: the target, the
 * function's selector and the value, marked unknown. Pure: the review view and the signing page
 * both show calls through it.
 *
 * @example
 * describeCall(known, { to: USDC, value: '0', data: '0xa9059cbb…' }, account)
 * // { title: 'Send 2.5 USDC', details: ['to 0x90F79b…b906', 'token contract 0xA0b869…eB48 (USDC)'] }
 */
export function describeCall(known: KnownChain | undefined, call: PlainCall, account?: string): CallWords {
  const value = readValue(call.value)
  const data = typeof call.data === 'string' && /^0x([0-9a-fA-F]{2})*$/.test(call.data) ? (call.data as Hex) : undefined
  const target = addressWords(known, call.to, account)
  const withValue = value > 0n ? [`sends ${ethAmount(value)} with it`] : []
  if (data === undefined) return { title: `Call ${target}`, details: ['its data is not hex: a wallet would refuse it', ...withValue], unknown: true }
  if (data === '0x') return { title: `Send ${ethAmount(value)}`, details: [`to ${target}`] }
  const to = isAddress(call.to, { strict: false }) ? getAddress(call.to) : undefined
  const decoded = to && known ? decodeKnown(known, to, data, account) : undefined
  if (decoded) return { title: decoded.title, details: [...decoded.details, ...withValue] }
  return { title: `Call ${target}`, details: [`function ${data.slice(0, 10)} with ${(data.length - 10) / 2} bytes of arguments`, ...withValue], unknown: true }
}

function readValue(value: string): bigint {
  try {
    return BigInt(value)
  } catch {
    return 0n
  }
}

function decodeKnown(known: KnownChain, to: Address, data: Hex, account?: string): Omit<CallWords, 'unknown'> | undefined {
  const words = (address: string) => addressWords(known, address, account)
  const isToken = known.tokens.some((token) => token.address === to) || to === known.weth
  try {
    if (isToken) {
      const { functionName, args } = decodeFunctionData({ abi: erc20, data })
      if (functionName === 'transfer') {
        const [recipient, amount] = args
        const title = getAddress(recipient) === known.payee ? `Pay Bruno ${tokenAmount(known, to, amount)}` : `Send ${tokenAmount(known, to, amount)}`
        return { title, details: [`to ${words(recipient)}`] }
      }
      const [spender, amount] = args
      return { title: `Allow ${words(spender)} to spend ${tokenAmount(known, to, amount)}`, details: [`of your account's ${words(to)}`] }
    }
  } catch {
    // Not a transfer or approve: WETH's own functions, or unknown.
  }
  if (to === known.weth) {
    try {
      const decoded = decodeFunctionData({ abi: weth, data })
      if (decoded.functionName === 'withdraw') return { title: `Unwrap ${formatUnits(decoded.args[0], 18)} WETH to ETH`, details: [] }
      return { title: 'Wrap ETH into WETH', details: [] }
    } catch {
      return undefined
    }
  }
  if (to === known.swapRouter02) return describeSwap(known, data, account)
  return undefined
}

/** A SwapRouter02 call: a multicall's parts in order, each a swap or an unwrap. */
function describeSwap(known: KnownChain, data: Hex, account?: string): Omit<CallWords, 'unknown'> | undefined {
  let parts: readonly Hex[]
  try {
    const decoded = decodeFunctionData({ abi: swapRouter, data })
    parts = decoded.functionName === 'multicall' ? (decoded.args.length === 1 ? decoded.args[0] : decoded.args[1]) : [data]
  } catch {
    return undefined
  }
  const lines: string[] = []
  let title: string | undefined
  for (const part of parts) {
    let decoded
    try {
      decoded = decodeFunctionData({ abi: swapRouter, data: part })
    } catch {
      lines.push(`and a router call ${part.slice(0, 10)} Bruno does not read`)
      continue
    }
    if (decoded.functionName === 'exactInput' || decoded.functionName === 'exactInputSingle') {
      const params = decoded.args[0] as { path?: Hex; tokenIn?: Address; tokenOut?: Address; recipient: Address; amountIn: bigint; amountOutMinimum: bigint }
      const [tokenIn, tokenOut] = params.path ? pathEnds(params.path) : [params.tokenIn!, params.tokenOut!]
      const out = getAddress(tokenOut) === known.weth ? `${formatUnits(params.amountOutMinimum, 18)} WETH` : tokenAmount(known, tokenOut, params.amountOutMinimum)
      title = `Swap ${tokenAmount(known, tokenIn, params.amountIn)} on Uniswap`
      // Kept by the router for the next part (an unwrap), the least out is that part's to say.
      const kept = getAddress(params.recipient) === ROUTER_ITSELF
      if (!kept || params.amountOutMinimum > 0n) lines.push(`for at least ${out}`)
      if (!kept) lines.push(`paid to ${addressWords(known, params.recipient, account)}`)
    } else if (decoded.functionName === 'unwrapWETH9') {
      const [minimum, recipient] = decoded.args as readonly [bigint, Address]
      lines.push(`unwrapped to ETH (at least ${ethAmount(minimum)}) and paid to ${addressWords(known, recipient, account)}`)
    } else {
      lines.push('and a nested multicall Bruno does not read')
    }
  }
  return { title: title ?? 'A Uniswap router call', details: lines }
}

/** A V3 path's first and last token (20 bytes, then 3 of fee and 20 of token per hop). */
function pathEnds(path: Hex): [Address, Address] {
  const hex = path.slice(2)
  return [getAddress(`0x${hex.slice(0, 40)}`), getAddress(`0x${hex.slice(-40)}`)]
}

/**
 * A deadline as a person reads it: the UTC time and how far off it is from `now` (unix seconds).
 *
 * @example
 * deadlineWords(1_800_000_600, 1_800_000_000) // '2027-01-15T08:10:00Z (in 10 min)'
 */
export function deadlineWords(deadline: number, now: number): string {
  if (!Number.isFinite(deadline) || deadline <= 0 || deadline > 253_402_300_799) return `an unreadable deadline (${String(deadline).slice(0, 24)})`
  const left = deadline - now
  const when = new Date(deadline * 1000).toISOString().replace('.000Z', 'Z')
  if (left <= 0) return `${when} (passed)`
  const minutes = Math.round(left / 60)
  return `${when} (in ${minutes < 1 ? 'under a minute' : minutes < 120 ? `${minutes} min` : `${Math.round(minutes / 60)} h`})`
}
