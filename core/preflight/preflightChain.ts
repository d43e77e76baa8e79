import { concat, erc20Abi, formatEther, getAddress, isHex, keccak256, toHex, type Address, type PublicClient } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { caliburCompatibleAbi } from '../../contracts/abi.ts'
import { runnerArtifact } from '../../contracts/artifacts.ts'
import { readTokenDomain } from '../chain/tokenDomain.ts'
import { ChainUnavailableError } from '../chain/guardedTransport.ts'
import type { Network } from '../chain/networks.ts'
import { poolAddress, PRICE_WINDOW_SEC, readOldestObservation, uniswapV3PoolAbi } from '../chain/tokenPrice.ts'
import { ToolError } from '../tool.ts'
import { CheckFailed, runCheck, type PreflightCheck } from './check.ts'
import { creationRuntime } from './creationRuntime.ts'

/**
 * The account preflight asks "what does a delegated account report?": an `eth_call` gives it the
 * code `0xef0100 ‖ calibur` (an EIP-7702 delegation) by a state override, so nothing is signed or
 * sent. Any address with no code and no storage would do; this one is the low 20 bytes of
 * keccak256("bruno preflight: calibur delegation probe").
 */
const DELEGATION_PROBE: Address = getAddress(`0x${keccak256(toHex('bruno preflight: calibur delegation probe')).slice(-40)}`)


/**
 * Checks that one configured chain can be served: the RPC's chain id, Uniswap's contracts, Calibur,
 * the Runner and its operator, the runner's ETH, each token, each swap-path pool (its liquidity, and a
 * price history that holds the 600 s window and reaches back over it now). Every check is
 * named in the result, passed or failed with its reason; after a wrong chain id nothing else is
 * checked, since every other answer would be about another chain.
 *
 * @example
 * const checks = await preflightChain(networks.get('base'), process.env)
 * const ok = checks.every((check) => check.ok)
 */
export async function preflightChain(network: Network, env: NodeJS.ProcessEnv): Promise<PreflightCheck[]> {
  const { client, config } = network
  const chainId = await runCheck('chain id', async () => {
    const answered = await client.getChainId()
    if (answered !== config.chainId) throw new CheckFailed(`the RPC answers chain id ${answered}, the config says ${config.chainId}`)
    return `${answered}`
  })
  if (!chainId.ok) return [chainId]

  const codeAt = async (address: Address) => {
    const code = await client.getCode({ address })
    return code && code !== '0x' ? code : undefined
  }
  const blockTimeSec = measureBlockTimeSec(client)
  const symbolOf = (address: Address) => config.tokens.find((token) => getAddress(token.address) === address)?.symbol ?? address

  const checks: Promise<PreflightCheck>[] = [
    runCheck('uniswap', async () => {
      const { factory, swapRouter02, quoterV2 } = config.uniswap
      const named = { factory, swapRouter02, quoterV2 }
      for (const [name, address] of Object.entries(named)) {
        if (!(await codeAt(getAddress(address)))) throw new CheckFailed(`no code at uniswap.${name} ${getAddress(address)}`)
      }
      return 'code at factory, swapRouter02 and quoterV2'
    }),

    runCheck('calibur', () => checkCalibur(client, config.chainId, getAddress(config.calibur))),

    runCheck('runner contract', async () => {
      const contract = getAddress(config.runner.contract)
      const operator = runnerAddress(env[config.runner.key.env], config.runner.key.env)
      const code = await codeAt(contract)
      if (!code) throw new CheckFailed(`no code at runner.contract ${contract}`)
      if (code === (await creationRuntime(client, runnerArtifact, [operator]))) return `the Runner artifact's code at ${contract}, operator ${operator}`
      const actual = await client.readContract({ address: contract, abi: runnerArtifact.abi, functionName: 'operator' }).catch(() => undefined)
      if (actual && getAddress(actual) !== operator) throw new CheckFailed(`${contract}'s operator() is ${getAddress(actual)}, not the runner key's address ${operator}`)
      throw new CheckFailed(`the code at ${contract} is not the committed Runner artifact's`)
    }),

    runCheck('runner balance', async () => {
      const operator = runnerAddress(env[config.runner.key.env], config.runner.key.env)
      const floor = BigInt(config.runner.minBalanceWei)
      const balance = await client.getBalance({ address: operator })
      const stated = `${formatEther(balance)} ETH at ${operator} (floor ${formatEther(floor)} ETH, runner.minBalanceWei)`
      if (balance < floor) throw new CheckFailed(stated)
      return stated
    }),

    ...config.tokens.map((token) =>
      runCheck(`token ${token.symbol}`, async () => {
        const address = getAddress(token.address)
        if (!(await codeAt(address))) throw new CheckFailed(`no code at ${address}`)
        const [decimals, name] = await Promise.all([
          client.readContract({ address, abi: erc20Abi, functionName: 'decimals' }),
          client.readContract({ address, abi: erc20Abi, functionName: 'name' }),
        ])
        if (decimals !== token.decimals) throw new CheckFailed(`${address}'s decimals() is ${decimals}, the config says ${token.decimals}`)
        // A token without an EIP-712 domain (WETH9) still pays through a Calibur batch; only
        // payment_authorization needs the domain, so its absence is reported, not failed.
        const domain = await readTokenDomain(client, address).catch((error: unknown) => {
          if (error instanceof ToolError) return error.message
          throw error
        })
        const eip712 = typeof domain === 'string' ? `no EIP-3009 domain (${domain})` : `EIP-712 domain "${domain.name}" version "${domain.version}"`
        return `"${name}", ${decimals} decimals, ${eip712}`
      }),
    ),

    // Every price is a swap path's WETH per token: WETH that is not WETH would value every payment
    // in whatever it is (the config refuses a path not ending at the configured WETH).
    runCheck('weth', async () => {
      const address = getAddress(config.weth)
      if (!(await codeAt(address))) throw new CheckFailed(`no code at weth ${address}`)
      const [symbol, decimals] = await Promise.all([
        client.readContract({ address, abi: erc20Abi, functionName: 'symbol' }),
        client.readContract({ address, abi: erc20Abi, functionName: 'decimals' }),
      ])
      if (symbol !== 'WETH' || decimals !== 18) throw new CheckFailed(`${address} is not WETH: its symbol() is "${symbol}" and decimals() ${decimals}; every swap path must end at the chain's wrapped ether`)
      const paths = config.tokens.filter((token) => token.swapPath).map((token) => token.symbol)
      return `WETH (18 decimals) at ${address}${paths.length > 0 ? `, where the swap paths of ${paths.join(', ')} end` : ''}`
    }),

    ...config.tokens.flatMap((token) => {
      let tokenIn = getAddress(token.address)
      return (token.swapPath ?? []).map((hop) => {
        const [from, to] = [tokenIn, getAddress(hop.tokenOut)]
        tokenIn = to
        return runCheck(`pool ${symbolOf(from)}→${symbolOf(to)} ${hop.fee / 10_000}%`, async () => {
          const pool = poolAddress(getAddress(config.uniswap.factory), from, to, hop.fee)
          if (!(await codeAt(pool))) throw new CheckFailed(`no pool at ${pool} (the factory has not created it)`)
          const [liquidity, slot0, blockSec, latest] = await Promise.all([
            client.readContract({ address: pool, abi: uniswapV3PoolAbi, functionName: 'liquidity' }),
            client.readContract({ address: pool, abi: uniswapV3PoolAbi, functionName: 'slot0' }),
            blockTimeSec,
            client.getBlock({ blockTag: 'latest' }),
          ])
          if (liquidity === 0n) throw new CheckFailed(`the pool at ${pool} has no liquidity in range`)
          // The ring must hold the price window's blocks, or a burst of swaps flushes the history and
          // Bruno refuses to price (core/chain/tokenPrice.ts).
          const [, , index, cardinality, cardinalityNext] = slot0
          const ring = Math.max(cardinality, cardinalityNext)
          const needed = Math.ceil(PRICE_WINDOW_SEC / blockSec)
          const raise = `call its increaseObservationCardinalityNext(${needed}) (anyone may, paying the gas)`
          // And it must reach back the whole window now: a shorter history is a shorter average, which
          // one block's push moves more.
          const oldest = await readOldestObservation(client, pool, index, cardinality)
          const age = Math.max(0, Number(latest.timestamp) - oldest.timestamp)
          if (age < PRICE_WINDOW_SEC) {
            throw new CheckFailed(
              oldest.first
                ? `the pool at ${pool} is ${age} s old, younger than the ${PRICE_WINDOW_SEC} s price window: its price would be averaged over less; serve it in ${PRICE_WINDOW_SEC - age} s`
                : `the oldest price observation the pool at ${pool} keeps is ${age} s old, younger than the ${PRICE_WINDOW_SEC} s price window: swaps overwrote its ring of ${cardinality}; ` +
                    (ring < needed ? `${raise}, then wait for the ring to fill` : `wait for its ring of ${ring} to fill`),
            )
          }
          if (ring < needed) {
            throw new CheckFailed(`the pool at ${pool} keeps ${ring} price observations; at ${blockSec} s a block its ${PRICE_WINDOW_SEC} s price window needs ${needed}: ${raise}`)
          }
          return `${pool}, liquidity ${liquidity}, ${ring} price observations (${needed} needed at ${blockSec} s a block), the oldest ${age} s old`
        })
      })
    }),
  ]
  return [chainId, ...(await Promise.all(checks))]
}

/**
 * The chain's seconds per block over its last 1,000 blocks (fewer on a young chain), at least 1: a
 * chain that mines several blocks a second (a devnet) writes at most one price observation per
 * block, and Uniswap's observations are as fine as a second.
 */
async function measureBlockTimeSec(client: PublicClient): Promise<number> {
  const latest = await client.getBlock({ blockTag: 'latest' })
  const span = latest.number < 1_000n ? latest.number : 1_000n
  if (span === 0n) return 1
  const earlier = await client.getBlock({ blockNumber: latest.number - span })
  return Math.max(1, Math.floor(Number(latest.timestamp - earlier.timestamp) / Number(span)))
}

/**
 * Calibur, recognised by what it does rather than by its bytes (the real contract and the devnet's
 * stand-in differ in code and agree in behaviour): its ERC-5267 `eip712Domain()` answers name
 * `Calibur`, version `1.0.0`; and an account delegated to it reports the domain Bruno has wallets
 * sign — fields 0x1f, name and version as above, this chain's id, the account itself as
 * verifyingContract, a salt whose low 160 bits are Calibur's address (prefix 0 on a fresh account)
 * — and nonce sequence 0 for key 0.
 */
async function checkCalibur(client: PublicClient, chainId: number, calibur: Address): Promise<string> {
  const code = await client.getCode({ address: calibur })
  if (!code || code === '0x') throw new CheckFailed(`no code at ${calibur}`)
  const own = await client.readContract({ address: calibur, abi: caliburCompatibleAbi, functionName: 'eip712Domain' }).catch(notAnswered)
  if (!own) throw new CheckFailed(`${calibur} does not answer ERC-5267 eip712Domain(): it is not Calibur`)
  const [, name, version] = own
  if (name !== 'Calibur' || version !== '1.0.0') throw new CheckFailed(`${calibur}'s eip712Domain() is "${name}" version "${version}", not Calibur 1.0.0`)

  const stateOverride = [{ address: DELEGATION_PROBE, code: concat(['0xef0100', calibur]) }]
  const delegated = { address: DELEGATION_PROBE, abi: caliburCompatibleAbi, stateOverride }
  const reported = await client.readContract({ ...delegated, functionName: 'eip712Domain' }).catch(notAnswered)
  if (!reported) throw new CheckFailed(`an account delegated to ${calibur} does not answer eip712Domain() (the RPC must run an eth_call with a state override on an EIP-7702 chain)`)
  const [fields, delegatedName, delegatedVersion, domainChainId, verifyingContract, salt] = reported
  const wrong: string[] = []
  if (fields !== '0x1f') wrong.push(`fields ${fields}, not 0x1f`)
  if (delegatedName !== 'Calibur' || delegatedVersion !== '1.0.0') wrong.push(`"${delegatedName}" version "${delegatedVersion}", not Calibur 1.0.0`)
  if (domainChainId !== BigInt(chainId)) wrong.push(`chain id ${domainChainId}, not ${chainId}`)
  if (getAddress(verifyingContract) !== DELEGATION_PROBE) wrong.push(`verifyingContract ${getAddress(verifyingContract)}, not the account itself`)
  if (BigInt(salt) !== BigInt(calibur)) wrong.push(`salt ${salt}, not Calibur's address`)
  if (wrong.length > 0) throw new CheckFailed(`an account delegated to ${calibur} reports an EIP-712 domain that is not Calibur's: ${wrong.join('; ')}`)
  const seq = await client.readContract({ ...delegated, functionName: 'getSeq', args: [0n] }).catch(notAnswered)
  if (seq !== 0n) throw new CheckFailed(`an account delegated to ${calibur} ${seq === undefined ? 'does not answer getSeq(0)' : `reports nonce sequence ${seq} for a fresh account, not 0`}`)
  return `Calibur 1.0.0 at ${calibur}; a delegated account reports its own EIP-712 domain (chain id ${chainId}, salt Calibur's address) and nonce sequence 0`
}

/** A call the contract did not answer (reverted, returned nothing): `undefined`. A chain that cannot be reached stays an error. */
function notAnswered(error: unknown): undefined {
  for (let cause = error; cause instanceof Error; cause = cause.cause) {
    if (cause instanceof ChainUnavailableError) throw error
  }
  return undefined
}

function runnerAddress(key: string | undefined, envName: string): Address {
  if (!key || !isHex(key) || key.length !== 66) throw new CheckFailed(`environment variable ${envName} must hold a 32-byte hex private key`)
  return getAddress(privateKeyToAccount(key).address)
}
