import pino from 'pino'
import { BaseError, ContractFunctionRevertedError, erc20Abi, encodeFunctionData, formatUnits, getAddress, isAddress, isHex, type Address, type Hex } from 'viem'
import { privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import { runnerAbi } from '../../contracts/abi.ts'
import { readFees } from '../chain/fees.ts'
import { Networks, resolveToken, type Network, type TokenRef } from '../chain/networks.ts'
import { openStore, type RelayStorage } from '../store/openStore.ts'
import { StoreInUseError } from '../store/sqliteLock.ts'
import { type Command, type CommandIo, commandFailure, parseFlags } from './command.ts'
import { configOrDevnet } from './configOrDevnet.ts'

const usage = `Usage: bruno sweep --config <file> --chain <name> --token <symbol|address> [--to <address>]

Sends the Runner contract's whole balance of a token to the payee (or --to): tokens sent to the
Runner by mistake, which a relayed call to that token could otherwise move (the Runner calls as
itself). The runner key signs (Runner.sweep is operator-only) and pays the gas.

Stop Bruno's runner for the chain first: it owns the runner key's nonces, and a transaction sent
beside it takes the nonce its next relay would use.

Options:
  --config <file>    deployment config (JSON), checked as serve checks it (required)
  --chain <name>     the configured chain (required when the config has more than one)
  --token <token>    a configured symbol, or any token's address (required)
  --to <address>     where the tokens go (default: the chain's payee)
  -h, --help         show this help

Exit codes: 0 swept, or nothing held; 1 the sweep failed; 2 a flag or the config is wrong.
`

/**
 * `bruno sweep`: the Runner's balance of a token sent on by its operator (`Runner.sweep`).
 *
 * @example
 * // npx tsx core/cli.ts sweep --config /etc/bruno/bruno.json --chain base --token USDC
 */
export const sweepCommand: Command = {
  name: 'sweep',
  summary: 'send tokens sent to the Runner contract by mistake to the payee (the runner key signs)',
  usage,
  async run(argv, io) {
    const { values } = parseFlags('bruno sweep', {
      args: [...argv],
      options: { config: { type: 'string' }, chain: { type: 'string' }, token: { type: 'string' }, to: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    })
    if (values.help) {
      io.stdout.write(usage)
      return 0
    }
    const refuse = (code: number, message: string) => {
      io.stderr.write(`bruno sweep: ${message}\n`)
      return code
    }
    if (!values.config) return refuse(2, '--config <file> is required: the deployment whose Runner to sweep (see --help)')
    if (!values.token) return refuse(2, '--token <symbol|address> is required (see --help)')
    if (values.to !== undefined && !isAddress(values.to, { strict: true })) return refuse(2, `--to: ${values.to} is not an address with a valid EIP-55 checksum (or all lowercase)`)
    const { config } = await configOrDevnet(values.config, io.env)
    const names = config.networks.map((network) => network.name)
    const name = values.chain ?? (names.length === 1 ? names[0] : undefined)
    if (name === undefined || !names.includes(name)) return refuse(2, `--chain: name one of the configured chains (${names.join(', ')})`)
    const network = new Networks(config, io.env).get(name)
    const token = resolveToken(network.config, values.token)
    if (!token) return refuse(2, `--token: "${values.token}" is neither a token configured on ${name} nor an address`)
    const key = io.env[network.config.runner.key.env]
    if (!key || !isHex(key) || key.length !== 66) return refuse(2, `environment variable ${network.config.runner.key.env} must hold the runner's 32-byte hex private key`)
    const account = privateKeyToAccount(key as Hex)
    const runner = getAddress(network.config.runner.contract)
    const to = getAddress(values.to ?? network.config.payee)
    // The runner key sends for one process at a time: a running serve assigns its nonces. Taken here as serve takes it.
    let storage: RelayStorage
    try {
      storage = openStore(config.store, io.env)
    } catch (error) {
      if (error instanceof StoreInUseError) return refuse(1, `${error.message}. A running Bruno sends with the runner key; stop it, then sweep (nothing was sent)`)
      throw error
    }
    const ownership = storage.ownership({ name, chainId: network.config.chainId }, { operator: account.address, wake: () => {} }, pino({ level: 'silent' }))
    try {
      if (!(await ownership.acquire())) {
        return refuse(1, `the runner key ${account.address} on ${name} is held by a running Bruno replica (store.url's lock): it assigns the key's nonces; stop it, then sweep (nothing was sent)`)
      }
      return await sendSweep(io, refuse, { network, name, token, account, runner, to })
    } finally {
      await ownership.release()
      await storage.store.close()
    }
  },
}

/** Sends the Runner's whole balance of `token` to `to`, signed by the runner key (which this process holds now). */
async function sendSweep(
  io: CommandIo,
  refuse: (code: number, message: string) => number,
  { network, name, token, account, runner, to }: { network: Network; name: string; token: TokenRef; account: PrivateKeyAccount; runner: Address; to: Address },
): Promise<number> {
  const { client } = network
  const units = (amount: bigint) => (token.configured ? `${formatUnits(amount, token.configured.decimals)} ${token.configured.symbol}` : `${amount} base units of ${token.address}`)
  try {
    const held = await client.readContract({ address: token.address, abi: erc20Abi, functionName: 'balanceOf', args: [runner] })
    if (held === 0n) {
      io.stdout.write(`The Runner ${runner} on ${name} holds no ${token.configured?.symbol ?? token.address}: nothing to sweep.\n`)
      return 0
    }
    const data = encodeFunctionData({ abi: runnerAbi, functionName: 'sweep', args: [token.address, to] })
    // Estimated first: a key that is not the Runner's operator, or a token that refuses, sends nothing.
    const estimate = await client.estimateContractGas({ account: account.address, address: runner, abi: runnerAbi, functionName: 'sweep', args: [token.address, to] }).catch((error: unknown) => {
      const reverted = error instanceof BaseError ? error.walk((cause) => cause instanceof ContractFunctionRevertedError) : null
      const name = reverted instanceof ContractFunctionRevertedError ? reverted.data?.errorName : undefined
      if (name === 'NotOperator') throw new Error(`the Runner refused (NotOperator): ${account.address}, the key in ${network.config.runner.key.env}, is not its operator`)
      if (name === 'SweepFailed') throw new Error(`the Runner refused (SweepFailed): ${token.address} would not transfer what it holds`)
      throw error
    })
    const gas = (estimate * 6n) / 5n
    const [fees, nonce] = await Promise.all([readFees(client), client.getTransactionCount({ address: account.address, blockTag: 'pending' })])
    const raw = await account.signTransaction({ chainId: network.config.chainId, to: runner, data, gas, nonce, ...fees, type: 'eip1559' })
    const hash = await client.sendRawTransaction({ serializedTransaction: raw })
    const receipt = await client.waitForTransactionReceipt({ hash, timeout: 300_000 })
    if (receipt.status !== 'success') return refuse(1, `the sweep transaction ${hash} reverted: nothing was swept`)
    io.stdout.write(`Swept ${units(held)} from the Runner ${runner} on ${name} to ${to} (transaction ${hash}).\n`)
    return 0
  } catch (error) {
    return refuse(1, `the sweep failed: ${commandFailure(error)}`)
  }
}
