import { formatUnits, getAddress, type Address, type SignedAuthorization as ViemAuthorization } from 'viem'
import { requireToken } from '../arguments.ts'
import { expectChainId } from '../chain/expectChainId.ts'
import { readWeiPerBaseUnit, type Fraction } from '../chain/tokenPrice.ts'
import { ToolError } from '../tool.ts'
import type { RelayContext } from './context.ts'
import { revertReason } from './revertReason.ts'
import { encodeRunnerCall } from './runnerCall.ts'
import type { Payment, Quote, QuoteRequest, RelayCall, SignedAuthorization } from './schemas.ts'

/**
 * Gas of FiatToken v2's `transferWithAuthorization` inside the Runner, which a quote cannot
 * measure before the transfer is signed (the signature depends on the quoted amount). Set above
 * what the real token spends with a cold nonce slot and a fresh payee balance. Submit measures the
 * signed transfer for real, so a quote that under-counted it would be refused there; the flow-2
 * tests submit quoted amounts.
 */
export const AUTHORIZATION_TRANSFER_GAS = 90_000n

/** A payment token the relay accepts: configured, and priced along a swap path (or WETH itself). */
export function paymentToken(context: Pick<RelayContext, 'network'>, token: string): { address: Address; symbol: string; decimals: number } {
  const { config } = context.network
  const found = requireToken(config, token)
  const weth = getAddress(config.weth)
  if (!found.configured || (!found.configured.swapPath && found.address !== weth)) {
    const accepted = config.tokens.filter((candidate) => candidate.swapPath || getAddress(candidate.address) === weth).map((candidate) => candidate.symbol)
    throw new ToolError(`${token} is not accepted as payment on ${config.name}: pay in one of ${accepted.join(', ')}`)
  }
  return { address: found.address, symbol: found.configured.symbol, decimals: found.configured.decimals }
}

/** viem's form of a signed 7702 authorization. */
export function viemAuthorizations(list: readonly SignedAuthorization[] | undefined): ViemAuthorization[] | undefined {
  return list?.map((item) => ({ address: getAddress(item.address), chainId: item.chainId, nonce: item.nonce, r: item.r as `0x${string}`, s: item.s as `0x${string}`, yParity: item.yParity }))
}

/**
 * Measures the whole runner transaction for a call (the Runner's `relay` around it, with the
 * authorizations), prices it at current fees plus the configured margin, and converts it to the
 * payment token at the configured pool's price, rounded up.
 *
 * @example
 * await quoteCall(context, { call: { to: account, data }, token: 'USDC' }) // { amount: '151234', payee, validUntil, … }
 */
export async function quoteCall(context: RelayContext, request: QuoteRequest): Promise<Quote> {
  const { config } = context.network
  const token = paymentToken(context, request.token)
  const payee = getAddress(config.payee)
  const measured = await measureRunnerCost(context, request.call, request.authorizationList, token)
  const gas = measured.gas + (request.payment === 'authorization' ? AUTHORIZATION_TRANSFER_GAS : 0n)
  const costWei = gas * measured.feePerGas
  const amount = chargeForGas(gas, measured.feePerGas, config.margins.quoteBps, measured.price)
  return {
    token: token.address,
    symbol: token.symbol,
    amount: amount.toString(),
    amountFormatted: formatUnits(amount, token.decimals),
    payee,
    validUntil: Math.floor(Date.now() / 1000) + config.relay.quoteTtlSec,
    gas: gas.toString(),
    feePerGas: measured.feePerGas.toString(),
    costWei: costWei.toString(),
  }
}

/**
 * Simulates a runner transaction against the latest state, and reads fees and the token's price
 * in the same JSON-RPC batch. Without `payment` the call is measured with amount 0 (a quote: the
 * payment is not known yet); with it, the exact transaction submit will have sent. A revert is a
 * `ToolError` reading `${refusal}: <reason>`.
 */
export async function measureRunnerCost(
  context: RelayContext,
  call: RelayCall,
  authorizationList: readonly SignedAuthorization[] | undefined,
  token: { address: Address; symbol: string; decimals: number },
  payment: Payment = { token: token.address, amount: '0' },
  refusal = 'the call cannot be relayed',
): Promise<{ gas: bigint; feePerGas: bigint; price: Fraction }> {
  const { network, operator } = context
  const payee = getAddress(network.config.payee)
  const data = encodeRunnerCall(call, payment, payee)
  const authorizations = viemAuthorizations(authorizationList)
  const [gas, fees, price] = await Promise.all([
    network.client
      // The latest block, as the design asks: some nodes estimate against the pending block, where
      // the runner's own queued transactions would change the answer.
      .estimateGas({
        account: operator,
        to: getAddress(network.config.runner.contract),
        data,
        blockTag: 'latest',
        ...(authorizations ? { authorizationList: authorizations } : {}),
      })
      .catch((error: unknown) => {
        const reason = revertReason(error, token.decimals, token.symbol)
        if (reason) throw new ToolError(`${refusal}: ${reason}`)
        throw error
      }),
    network.client.estimateFeesPerGas(),
    readWeiPerBaseUnit(network, token.address),
    expectChainId(network),
  ])
  return { gas, feePerGas: fees.maxFeePerGas, price }
}

/**
 * What the relay charges for `gas`, in token base units: the gas at `feePerGas`, plus `marginBps`,
 * converted at the token's price, rounded up. Quotes and payment legs are sized by this one rule.
 *
 * @example
 * chargeForGas(100_000n, 2_000_000_000n, 2_000, { numerator: 333_333_333n, denominator: 1n }) // 720_001n (0.720001 USDC)
 */
export function chargeForGas(gas: bigint, feePerGas: bigint, marginBps: number, weiPerBaseUnit: Fraction): bigint {
  return weiToToken(ceilDiv(gas * feePerGas * BigInt(10_000 + marginBps), 10_000n), weiPerBaseUnit)
}

/** Token base units worth `wei`, rounded up: the relay never under-charges by rounding. */
export function weiToToken(wei: bigint, weiPerBaseUnit: Fraction): bigint {
  return ceilDiv(wei * weiPerBaseUnit.denominator, weiPerBaseUnit.numerator)
}

function ceilDiv(a: bigint, b: bigint): bigint {
  return (a + b - 1n) / b
}
