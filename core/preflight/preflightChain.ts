import { erc20Abi, formatEther, getAddress, isHex, type Address, type PublicClient } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { payeeVaultArtifact, runnerArtifact } from '../../contracts/artifacts.ts'
import { readTokenDomain } from '../chain/tokenDomain.ts'
import { runnerKeys } from '../chain/runnerKeys.ts'
import type { Network } from '../chain/networks.ts'
import { poolAddress, PRICE_WINDOW_SEC, readOldestObservation, uniswapV3PoolAbi } from '../chain/tokenPrice.ts'
import type { GroupCheck } from '../tool/groupPlugin.ts'
import { ToolError } from '../tool/tool.ts'
import { CheckFailed, runCheck, type PreflightCheck } from './check.ts'
import { creationRuntime } from './creationRuntime.ts'

/**
 * Checks that one configured chain can be served: the RPC's chain id, Uniswap's contracts, the
 * served groups' own checks (`groups`: a delegate group's contract, say), the Runner and its operator, the payee (a PayeeVault
 * refunds, for this Runner only), the runner's ETH, each further lane (an operator, funded), each token, each swap-path pool (its liquidity, and a
 * price history that holds the 600 s window and reaches back over it now). Every check is
 * named in the result, passed or failed with its reason; after a wrong chain id nothing else is
 * checked, since every other answer would be about another chain.
 *
 * @example
 * const checks = await preflightChain(networks.get('base'), process.env, groupChecks(served))
 * const ok = checks.every((check) => check.ok)
 */
export async function preflightChain(network: Network, env: NodeJS.ProcessEnv, groups: readonly GroupCheck[]): Promise<PreflightCheck[]> {
  const { client, config } = network
  // Read once, before the chain: a key that is not there is one failure, not one per check that signs or reads its address.
  const keyEnv = config.runner.key.env
  const runnerKey = await runCheck('runner key', async () => `${runnerAddress(env[keyEnv], keyEnv)} (${keyEnv})`)
  const operator = runnerKey.ok ? runnerAddress(env[keyEnv], keyEnv) : undefined
  const chainId = await runCheck('chain id', async () => {
    const answered = await client.getChainId()
    if (answered !== config.chainId) throw new CheckFailed(`the RPC answers chain id ${answered}, the config says ${config.chainId}`)
    return `${answered}`
  })
  if (!chainId.ok) return [runnerKey, chainId]

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

    ...groups.map((group) => runCheck(group.name, () => group.check(network))),

    ...(operator === undefined ? [] : [runCheck('runner contract', async () => {
      const contract = getAddress(config.runner.contract)
      const code = await codeAt(contract)
      if (!code) throw new CheckFailed(`no code at runner.contract ${contract}`)
      const [actual, owner] = await Promise.all(
        (['operator', 'owner'] as const).map((functionName) => client.readContract({ address: contract, abi: runnerArtifact.abi, functionName }).catch(() => undefined)),
      )
      if (owner !== undefined && code === (await creationRuntime(client, runnerArtifact, [operator, owner]))) return `the Runner artifact's code at ${contract}, operator ${operator}, owner ${getAddress(owner)}`
      if (actual && getAddress(actual) !== operator) throw new CheckFailed(`${contract}'s operator() is ${getAddress(actual)}, not the runner key's address ${operator}`)
      throw new CheckFailed(`the code at ${contract} is not the committed Runner artifact's`)
    })]),

    // The payee refunds only as this Runner's PayeeVault; an account keeps every payment whole.
    runCheck('payee', async () => {
      const payee = getAddress(config.payee)
      const contract = getAddress(config.runner.contract)
      const code = await codeAt(payee)
      if (!code) return `${payee} is an account: payments are kept whole, nothing is refunded (a PayeeVault refunds what a relay did not cost: bruno deploy --treasury)`
      const [runner, owner] = await Promise.all(
        (['runner', 'owner'] as const).map((functionName) => client.readContract({ address: payee, abi: payeeVaultArtifact.abi, functionName }).catch(() => undefined)),
      )
      if (runner === undefined || owner === undefined || code !== (await creationRuntime(client, payeeVaultArtifact, [runner, owner]))) {
        return `${payee} is a contract, not a PayeeVault: payments are kept whole, nothing is refunded`
      }
      if (getAddress(runner) !== contract) {
        throw new CheckFailed(`${payee} is the PayeeVault of Runner ${getAddress(runner)}, not of runner.contract ${contract}: it would refund nothing and keep every payment; deploy this Runner's vault (bruno deploy --treasury)`)
      }
      return `${payee} is this Runner's PayeeVault (owner ${getAddress(owner)}): each relay refunds what it did not cost, the vault keeps ${config.margins.markupBps / 100} % over cost`
    }),

    ...(operator === undefined ? [] : [runCheck('runner balance', async () => {
      const floor = BigInt(config.runner.minBalanceWei)
      const balance = await client.getBalance({ address: operator })
      const stated = `${formatEther(balance)} ETH at ${operator} (floor ${formatEther(floor)} ETH, runner.minBalanceWei)`
      if (balance < floor) throw new CheckFailed(stated)
      return stated
    })]),

    ...(config.runner.lanes === undefined ? [] : [runCheck('runner lanes', () => checkLanes(network, env))]),

    ...config.tokens.map((token) =>
      runCheck(`token ${token.symbol}`, async () => {
        const address = getAddress(token.address)
        if (!(await codeAt(address))) throw new CheckFailed(`no code at ${address}`)
        const [decimals, name] = await Promise.all([
          client.readContract({ address, abi: erc20Abi, functionName: 'decimals' }),
          client.readContract({ address, abi: erc20Abi, functionName: 'name' }),
        ])
        if (decimals !== token.decimals) throw new CheckFailed(`${address}'s decimals() is ${decimals}, the config says ${token.decimals}`)
        // A token without an EIP-712 domain (WETH9) still pays through a delegate batch; only
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
  return [runnerKey, chainId, ...(await Promise.all(checks))]
}

/** How many blocks back preflight measures a chain's block time over. */
const BLOCK_TIME_SPAN = 100n

/**
 * The chain's seconds per block over its last 100 blocks (fewer on a young chain), at least 1: a
 * chain that mines several blocks a second (a devnet) writes at most one price observation per
 * block, and Uniswap's observations are as fine as a second. A chain's cadence is its protocol's,
 * so 100 blocks (200 s on Base, 20 min on Ethereum) tell it as well as more would.
 */
async function measureBlockTimeSec(client: PublicClient): Promise<number> {
  const latest = await client.getBlock({ blockTag: 'latest' })
  const span = latest.number < BLOCK_TIME_SPAN ? latest.number : BLOCK_TIME_SPAN
  if (span === 0n) return 1
  const earlier = await client.getBlock({ blockNumber: latest.number - span })
  return Math.max(1, Math.floor(Number(latest.timestamp - earlier.timestamp) / Number(span)))
}

/**
 * Each further lane (`runner.lanes`): an operator the Runner allows (its owner's `setOperator`), holding
 * at least `runner.minBalanceWei`. One line for all, naming every lane that fails and why.
 */
async function checkLanes(network: Network, env: NodeJS.ProcessEnv): Promise<string> {
  const { client, config } = network
  let lanes: Address[]
  try {
    lanes = runnerKeys(config, env).slice(1).map((account) => getAddress(account.address))
  } catch (error) {
    throw new CheckFailed((error as Error).message)
  }
  const contract = getAddress(config.runner.contract)
  const floor = BigInt(config.runner.minBalanceWei)
  const read = await Promise.all(
    lanes.map(async (lane) => {
      const [allowed, balance] = await Promise.all([
        client.readContract({ address: contract, abi: runnerArtifact.abi, functionName: 'isOperator', args: [lane] }),
        client.getBalance({ address: lane }),
      ])
      return { lane, allowed, balance }
    }),
  )
  const failures = read.flatMap(({ lane, allowed, balance }) => [
    ...(allowed ? [] : [`${lane} is not an operator of ${contract} (its owner allows it: setOperator(${lane}, true))`]),
    ...(balance < floor ? [`${lane} holds ${formatEther(balance)} ETH, under the floor ${formatEther(floor)} ETH`] : []),
  ])
  if (failures.length > 0) throw new CheckFailed(failures.join('; '))
  const least = read.reduce((low, each) => (each.balance < low ? each.balance : low), read[0]!.balance)
  return `${lanes.length} further lane(s), each an operator of ${contract}, the poorest holding ${formatEther(least)} ETH (floor ${formatEther(floor)} ETH)`
}

function runnerAddress(key: string | undefined, envName: string): Address {
  if (!key) throw new CheckFailed(`environment variable ${envName} is not set: it must hold the runner's private key (0x + 64 hex)`)
  if (!isHex(key) || key.length !== 66) throw new CheckFailed(`environment variable ${envName} must hold a 32-byte hex private key`)
  return getAddress(privateKeyToAccount(key).address)
}
