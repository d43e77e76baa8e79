import {
  BaseError,
  concat,
  createPublicClient,
  createWalletClient,
  encodeDeployData,
  formatEther,
  formatGwei,
  getAddress,
  http,
  InsufficientFundsError,
  isAddress,
  isHex,
  keccak256,
  type Abi,
  type Address,
  type Chain,
  type Hex,
  type PublicClient,
  type Transport,
  type WalletClient,
} from 'viem'
import { privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import { presetOfChain } from '../../config/presets.ts'
import { payeeVaultArtifact, paymentFirstEnforcerArtifact, runnerArtifact } from '../../contracts/artifacts.ts'
import { guardedTransport } from '../chain/guardedTransport.ts'
import { delegationCode } from '../relay/delegation7702.ts'
import { creationRuntime } from '../preflight/creationRuntime.ts'
import { type Command, commandFailure, parseFlags } from './command.ts'
import { DEPLOYMENT_PROXY, DEPLOYMENT_SALT, deterministicAddress } from '../chain/deterministicDeployment.ts'

/**
 * The gas a Runner deployment uses (1,771,922 measured on anvil since the `bytes` signature and the
 * wallet-factory list; the node estimates ≈1,797,000, and the limit is sent from the estimate): `--help` derives from it what the deployer must hold ETH
 * for, and test/deploy.test.ts holds it within 5% of a real deployment's, so a new Runner build that
 * costs more cannot leave the help (and DEPLOYMENT.md) behind.
 */
export const RUNNER_DEPLOYMENT_GAS = 1_800_000n

/**
 * The gas limit a deployment is sent with: the node's estimate + 20%, for a chain whose estimate
 * runs short. The deployer must hold ETH for all of it at the max fee per gas.
 */
export function deploymentGasLimit(estimate: bigint): bigint {
  return (estimate * 6n) / 5n
}

/**
 * The Runner's creation code for an operator and an owner: the artifact's bytecode with `operator`
 * (its first lane) and `owner` (who may allow further lanes) as its constructor arguments (the
 * CREATE2 address hashes exactly this).
 *
 * @example
 * runnerInitCode('0x15d3…6A65', '0x15d3…6A65') // '0x6080…' ‖ the operator and the owner, ABI-encoded
 */
export function runnerInitCode(operator: Address, owner: Address): Hex {
  return encodeDeployData({ abi: runnerArtifact.abi, bytecode: runnerArtifact.bytecode, args: [operator, owner] })
}

/**
 * Where `bruno deploy` puts the Runner of `operator` and `owner`: CREATE2 from the deployment proxy
 * with the fixed salt over the Runner's creation code. The same on every chain; a new Runner build
 * (new bytecode), operator or owner gives a new address.
 *
 * @example
 * runnerDeploymentAddress('0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65', '0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65') // '0x…' on every chain
 */
export function runnerDeploymentAddress(operator: Address, owner: Address): Address {
  return deterministicAddress(runnerInitCode(operator, owner))
}

/** The gas a PayeeVault deployment uses (354,166 measured on anvil; test/deploy.test.ts holds it within 5 %). */
export const PAYEE_VAULT_DEPLOYMENT_GAS = 354_000n

/**
 * Where `bruno deploy --treasury` puts the PayeeVault of a Runner and its owner: CREATE2 from the
 * deployment proxy with the fixed salt, like the Runner. The same on every chain for one Runner and treasury.
 *
 * @example
 * payeeVaultDeploymentAddress(runnerDeploymentAddress(operator), treasury) // '0x…' on every chain
 */
export function payeeVaultDeploymentAddress(runner: Address, owner: Address): Address {
  return deterministicAddress(payeeVaultInitCode(runner, owner))
}

/** The gas a PaymentFirstEnforcer deployment uses (416,458 measured on anvil; test/deploy.test.ts holds it within 5 %). */
export const PAYMENT_FIRST_ENFORCER_DEPLOYMENT_GAS = 416_000n

function payeeVaultInitCode(runner: Address, owner: Address): Hex {
  return encodeDeployData({ abi: payeeVaultArtifact.abi, bytecode: payeeVaultArtifact.bytecode, args: [runner, owner] })
}

const usage = `Usage: bruno deploy --rpc-url-env <NAME> --runner-key-env <NAME> [options]

Deploys the Runner contract for the runner key's address (its operator), owned by the deployer
key (who may allow further runner keys: lanes), through the deterministic deployment proxy at
${DEPLOYMENT_PROXY} (CREATE2, salt 0): one operator's and owner's
Runner has one address on every chain. Checks the deployed code against the committed Runner
artifact, and prints the network entry to paste into the config's "networks" (a preset's, when the
chain has one). Where your Runner is deployed already, a second run sends nothing and prints the
entry again; other code at that address is refused.

Keys and the RPC URL are read from environment variables, never from the command line:
  --rpc-url-env <NAME>       the variable holding the chain's RPC URL (required)
  --runner-key-env <NAME>    the variable holding the runner's private key (0x + 64 hex): its
                             address is the Runner's operator (required); also the printed
                             entry's runner.key.env
  --deployer-key-env <NAME>  the variable holding the key that pays for the deployment and owns
                             the Runner (default: the runner key); it needs ETH for ~${(Number(deploymentGasLimit(RUNNER_DEPLOYMENT_GAS)) / 1e6).toFixed(1)}M gas at the chain's max
                             fee per gas (the gas limit sent: the node's estimate + 20%)
Options:
  --treasury <address>       also deploy the Runner's PayeeVault (CREATE2, salt 0), owned by this
                             address, and make it the printed entry's payee: each relay then
                             refunds its payer what it did not cost, the vault keeps the charge,
                             and only the treasury withdraws it (~${(Number(deploymentGasLimit(PAYEE_VAULT_DEPLOYMENT_GAS)) / 1e6).toFixed(2)}M gas more)
  --lane <address>           a further runner key's address (a lane, runner.lanes), allowed as the
                             Runner's operator by its owner, the deployer (setOperator; once per
                             lane, repeat the flag for each; one already allowed is left alone)
  --wallet-delegate <address>
                             a 7702 delegate whose accounts may pay by signed transfer: the owner
                             lists their code (0xef0100 ‖ address) on the Runner (setPayerCode;
                             repeat for each; one already listed is left alone). Only a delegate
                             whose isValidSignature is the account's own key (SPEC, 3009 group)
  --wallet-factory <address>
                             a wallet factory whose ERC-6492 signatures the Runner may deploy
                             (setWalletFactory; repeat for each; one already listed is left alone).
                             Only a factory whose call deploys the same listed wallet whoever makes it
  --metamask                 also deploy Bruno's PaymentFirstEnforcer (CREATE2, salt 0: one address
                             on every chain, whoever deploys it), the caveat of every payment-first
                             MetaMask delegation: the metamask group needs it (~${(Number(deploymentGasLimit(PAYMENT_FIRST_ENFORCER_DEPLOYMENT_GAS)) / 1e6).toFixed(2)}M gas more; none
                             where it is deployed already)
  --payee <address>          the payee to put in the printed entry instead (an account: payments
                             are kept whole, nothing is refunded)
  --name <name>              the network's name in the printed entry (default: the preset's, or chain-<id>)
  -h, --help                 show this help

Exit codes: 0 deployed and verified, or your Runner (and vault) already deployed there; 1 refused (other code
at the address, no proxy on the chain, the deployer cannot pay, the deployment failed or its code
differs); 2 a flag or variable is wrong.
`

/**
 * `bruno deploy`: the Runner through the CREATE2 deployment proxy, verified, and the config entry
 * that serves it.
 *
 * @example
 * // BRUNO_BASE_RPC_URL=… BRUNO_BASE_RUNNER_KEY=0x… npx tsx core/cli.ts deploy --rpc-url-env BRUNO_BASE_RPC_URL --runner-key-env BRUNO_BASE_RUNNER_KEY
 */
export const deployCommand: Command = {
  name: 'deploy',
  summary: 'deploy the Runner contract for the runner key (CREATE2: one address on every chain) and print its network entry',
  usage,
  async run(argv, io) {
    const { values } = parseFlags('bruno deploy', {
      args: [...argv],
      options: {
        'rpc-url-env': { type: 'string' },
        'runner-key-env': { type: 'string' },
        'deployer-key-env': { type: 'string' },
        payee: { type: 'string' },
        treasury: { type: 'string' },
        lane: { type: 'string', multiple: true },
        'wallet-delegate': { type: 'string', multiple: true },
        'wallet-factory': { type: 'string', multiple: true },
        metamask: { type: 'boolean' },
        name: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    })
    if (values.help) {
      io.stdout.write(usage)
      return 0
    }
    const refuse = (code: number, message: string) => {
      io.stderr.write(`bruno deploy: ${message}\n`)
      return code
    }
    const rpcEnv = values['rpc-url-env']
    const runnerEnv = values['runner-key-env']
    if (!rpcEnv) return refuse(2, '--rpc-url-env <NAME> is required: the environment variable holding the RPC URL (see --help)')
    if (!runnerEnv) return refuse(2, '--runner-key-env <NAME> is required: the environment variable holding the runner\'s private key (see --help)')
    const deployerEnv = values['deployer-key-env'] ?? runnerEnv
    for (const name of [rpcEnv, runnerEnv, deployerEnv]) {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) return refuse(2, `"${name}" is not an environment variable name: the flags take the variable's name, not its value`)
    }
    const url = io.env[rpcEnv]
    if (!url) return refuse(2, `environment variable ${rpcEnv} (--rpc-url-env) is not set`)
    const runnerKey = io.env[runnerEnv]
    const deployerKey = io.env[deployerEnv]
    if (!runnerKey) return refuse(2, `environment variable ${runnerEnv} (--runner-key-env) is not set`)
    if (!deployerKey) return refuse(2, `environment variable ${deployerEnv} (--deployer-key-env) is not set`)
    if (!isPrivateKey(runnerKey)) return refuse(2, `environment variable ${runnerEnv} (--runner-key-env) must hold a 32-byte hex private key (0x + 64 hex)`)
    if (!isPrivateKey(deployerKey)) return refuse(2, `environment variable ${deployerEnv} (--deployer-key-env) must hold a 32-byte hex private key (0x + 64 hex)`)
    for (const flag of ['payee', 'treasury'] as const) {
      const value = values[flag]
      if (value !== undefined && !isAddress(value, { strict: true })) return refuse(2, `--${flag}: ${value} is not an address with a valid EIP-55 checksum (or all lowercase)`)
    }
    for (const [flag, given] of [['lane', values.lane], ['wallet-delegate', values['wallet-delegate']], ['wallet-factory', values['wallet-factory']]] as const) {
      for (const value of given ?? []) {
        if (!isAddress(value, { strict: true })) return refuse(2, `--${flag}: ${value} is not an address with a valid EIP-55 checksum (or all lowercase)`)
      }
    }
    if (values.payee !== undefined && values.treasury !== undefined) {
      return refuse(2, '--payee and --treasury both name the payee: --treasury makes it the PayeeVault it deploys; give one')
    }
    if (values.name !== undefined && !/^[a-z][a-z0-9-]{0,31}$/.test(values.name)) return refuse(2, '--name: a network name is lowercase letters, digits and "-", starting with a letter (at most 32)')

    const operator = privateKeyToAccount(runnerKey).address
    const deployer = privateKeyToAccount(deployerKey)
    // The deployer owns the Runner: the key that paid for it is the one that allows further lanes.
    const address = runnerDeploymentAddress(operator, deployer.address)
    // Every failure is retold without the URL: the guard names the chain, viem's short messages the call.
    const scrub = (text: string) => text.replaceAll(url, '[RPC URL]')
    const transport = guardedTransport(rpcEnv, http(url, { retryCount: 1 }))
    try {
      const probe = createPublicClient({ transport })
      const chainId = await probe.getChainId()
      const chain: Chain = { id: chainId, name: `chain ${chainId}`, nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 }, rpcUrls: { default: { http: [] } } }
      const client = createPublicClient({ chain, transport, pollingInterval: 250 })
      const wallet = createWalletClient({ account: deployer, chain, transport })
      const create2 = { client, wallet, deployer: deployer.address, chainId, write: (text: string) => io.stdout.write(text) }
      const treasury = values.treasury === undefined ? undefined : getAddress(values.treasury)
      const vault = treasury && payeeVaultDeploymentAddress(address, treasury)
      // With --treasury, the vault follows the Runner: a deployer that can pay for one and not both is refused before either.
      const vaultToDeploy = vault && ((await client.getCode({ address: vault })) ?? '0x') === '0x'
      const runner = await deployByCreate2(
        create2,
        {
          what: `the Runner for operator ${operator}, owner ${deployer.address}`,
          artifact: runnerArtifact,
          args: [operator, deployer.address],
          initCode: runnerInitCode(operator, deployer.address),
          address,
          knownGas: RUNNER_DEPLOYMENT_GAS,
        },
        vaultToDeploy ? { what: 'the PayeeVault', gas: deploymentGasLimit(PAYEE_VAULT_DEPLOYMENT_GAS) } : undefined,
      )
      if (typeof runner !== 'string') return refuse(1, runner.refused)
      let payee = values.payee
      let vaultNote = ''
      if (treasury && vault) {
        const deployed = await deployByCreate2(create2, {
          what: `the PayeeVault of Runner ${address} for treasury ${treasury}`,
          artifact: payeeVaultArtifact,
          args: [address, treasury],
          initCode: payeeVaultInitCode(address, treasury),
          address: vault,
          knownGas: PAYEE_VAULT_DEPLOYMENT_GAS,
        })
        if (typeof deployed !== 'string') return refuse(1, deployed.refused)
        payee = vault
        vaultNote = `The payee is the PayeeVault ${vault}: relays refund what they did not cost, and ${treasury} withdraws what the vault keeps.\n`
      }
      if (values.metamask) {
        const enforcer = await deployByCreate2(create2, {
          what: "Bruno's PaymentFirstEnforcer (the metamask group's caveat)",
          artifact: paymentFirstEnforcerArtifact,
          args: [],
          initCode: paymentFirstEnforcerArtifact.bytecode,
          address: deterministicAddress(paymentFirstEnforcerArtifact.bytecode),
          knownGas: PAYMENT_FIRST_ENFORCER_DEPLOYMENT_GAS,
        })
        if (typeof enforcer !== 'string') return refuse(1, enforcer.refused)
      }
      const lanes = (values.lane ?? []).map((lane) => getAddress(lane))
      for (const lane of lanes) await allowLane(create2, address, lane)
      for (const delegate of values['wallet-delegate'] ?? []) await listWalletDelegate(create2, address, getAddress(delegate))
      for (const factory of values['wallet-factory'] ?? []) await listWalletFactory(create2, address, getAddress(factory))
      const laneNote = lanes.length > 0 ? `Name each lane's key in the entry's runner.lanes, and fund every lane: ${lanes.join(', ')}.\n` : ''
      const fund = (runner === 'deployed' ? `Fund the runner ${operator} with ETH, then run bruno preflight.\n` : '') + laneNote
      io.stdout.write(fund + vaultNote + entryText(networkEntry(chainId, { rpcEnv, runnerEnv, contract: address, payee, name: values.name })))
      return 0
    } catch (error) {
      return refuse(1, scrub(commandFailure(error)))
    }
  },
}

/**
 * Lists the accounts delegated (EIP-7702) to `delegate` as wallets that may pay the Runner at
 * `runner` by signed transfer (its owner's `setPayerCode` of their code, `0xef0100 ‖ delegate`,
 * sent by the deployer, who owns it), unless they are listed already: then nothing is sent.
 */
async function listWalletDelegate({ client, wallet, deployer, chainId, write }: Create2Context, runner: Address, delegate: Address): Promise<void> {
  const codehash = keccak256(delegationCode(delegate))
  if (await client.readContract({ address: runner, abi: runnerArtifact.abi, functionName: 'payerCodeAllowed', args: [codehash] })) {
    write(`Accounts delegated to ${delegate} already pay ${runner} by signed transfer on chain ${chainId}: nothing was sent.\n`)
    return
  }
  const hash = await wallet.writeContract({ account: wallet.account!, chain: wallet.chain, address: runner, abi: runnerArtifact.abi, functionName: 'setPayerCode', args: [codehash, true] })
  const receipt = await client.waitForTransactionReceipt({ hash, timeout: 300_000 })
  if (receipt.status !== 'success') throw new Error(`setPayerCode(${codehash}) from ${deployer} reverted (transaction ${hash})`)
  write(`Listed accounts delegated to ${delegate} (code hash ${codehash}) as wallets that pay ${runner} by signed transfer on chain ${chainId} (transaction ${hash}).\n`)
}

/**
 * Lists `factory` as one whose ERC-6492 signatures the Runner at `runner` deploys (its owner's
 * `setWalletFactory`, sent by the deployer, who owns it), unless it is listed already: then nothing
 * is sent.
 */
async function listWalletFactory({ client, wallet, deployer, chainId, write }: Create2Context, runner: Address, factory: Address): Promise<void> {
  if (await client.readContract({ address: runner, abi: runnerArtifact.abi, functionName: 'walletFactoryAllowed', args: [factory] })) {
    write(`Wallet factory ${factory} is already on ${runner}'s list on chain ${chainId}: nothing was sent.\n`)
    return
  }
  const hash = await wallet.writeContract({ account: wallet.account!, chain: wallet.chain, address: runner, abi: runnerArtifact.abi, functionName: 'setWalletFactory', args: [factory, true] })
  const receipt = await client.waitForTransactionReceipt({ hash, timeout: 300_000 })
  if (receipt.status !== 'success') throw new Error(`setWalletFactory(${factory}) from ${deployer} reverted (transaction ${hash})`)
  write(`Listed wallet factory ${factory}: ${runner} deploys the wallets its ERC-6492 signatures name, then takes their payment, on chain ${chainId} (transaction ${hash}).\n`)
}

/**
 * Makes `lane` an operator of the Runner at `runner` (its owner's `setOperator`, sent by the
 * deployer, who owns it), unless it is one already: then nothing is sent. Either way it says so.
 */
async function allowLane({ client, wallet, deployer, chainId, write }: Create2Context, runner: Address, lane: Address): Promise<void> {
  if (await client.readContract({ address: runner, abi: runnerArtifact.abi, functionName: 'isOperator', args: [lane] })) {
    write(`Lane ${lane} is already an operator of ${runner} on chain ${chainId}: nothing was sent.\n`)
    return
  }
  const hash = await wallet.writeContract({ account: wallet.account!, chain: wallet.chain, address: runner, abi: runnerArtifact.abi, functionName: 'setOperator', args: [lane, true] })
  const receipt = await client.waitForTransactionReceipt({ hash, timeout: 300_000 })
  if (receipt.status !== 'success') throw new Error(`setOperator(${lane}) from ${deployer} reverted (transaction ${hash})`)
  write(`Allowed lane ${lane} as an operator of ${runner} on chain ${chainId} (transaction ${hash}).\n`)
}

/** What `deployByCreate2` needs of the chain: a client, the deployer's wallet, and where to say what it does. */
interface Create2Context {
  readonly client: PublicClient
  readonly wallet: WalletClient<Transport, Chain, PrivateKeyAccount>
  readonly deployer: Address
  readonly chainId: number
  readonly write: (text: string) => void
}

/**
 * Deploys a contract through the deployment proxy at its CREATE2 `address`, unless it is there
 * already; either way checks the code at the address is `artifact`'s with `args`. Answers whether
 * it was there or deployed now, or a refusal in words (other code there, no proxy, a deployer that
 * cannot pay, a failed deployment).
 */
async function deployByCreate2(
  { client, wallet, deployer, chainId, write }: Create2Context,
  contract: { what: string; artifact: { abi: Abi; bytecode: Hex }; args: readonly unknown[]; initCode: Hex; address: Address; knownGas: bigint },
  /** What this run deploys after it (the PayeeVault): the deployer must hold ETH for both before the first is sent. */
  then?: { what: string; gas: bigint },
): Promise<'existing' | 'deployed' | { refused: string }> {
  const { what, address } = contract
  const expected = await creationRuntime(client, contract.artifact, contract.args)
  const existing = await client.getCode({ address })
  if (existing && existing !== '0x') {
    if (existing !== expected) return { refused: `${address} on chain ${chainId} already holds code, and it is not ${what}: nothing was sent` }
    write(`${capitalized(what)} is already deployed at ${address} on chain ${chainId} (its code is the committed artifact's): nothing was sent.\n`)
    return 'existing'
  }
  const proxy = await client.getCode({ address: DEPLOYMENT_PROXY })
  if (!proxy || proxy === '0x') {
    return {
      refused:
        `chain ${chainId} has no deterministic deployment proxy at ${DEPLOYMENT_PROXY}: deploy it first (github.com/Arachnid/deterministic-deployment-proxy: ` +
        'fund its deployer and send its presigned transaction), then run bruno deploy again',
    }
  }
  const data = concat([DEPLOYMENT_SALT, contract.initCode])
  // Estimated from the deployer's address with no fee, so the node does not weigh its balance (the
  // check below does, naming it); a node that refuses anyway for lack of funds: the known figure.
  const estimate = await client.estimateGas({ account: deployer, to: DEPLOYMENT_PROXY, data }).catch((error: unknown) => {
    if (lacksFunds(error)) return contract.knownGas
    throw error
  })
  const request = await wallet.prepareTransactionRequest({ to: DEPLOYMENT_PROXY, data, gas: deploymentGasLimit(estimate) })
  const cost = { gas: request.gas + (then?.gas ?? 0n), feePerGas: request.maxFeePerGas ?? request.gasPrice, ...(then ? { parts: `${request.gas} for ${what}, ${then.gas} for ${then.what}` } : {}) }
  const unpaid = (held: bigint) => ({ refused: fundingRefusal(deployer, chainId, cost, held) })
  const held = await client.getBalance({ address: deployer })
  if (held < cost.gas * cost.feePerGas) return unpaid(held)
  write(`Deploying ${what} on chain ${chainId} from ${deployer} (gas limit ${cost.gas})…\n`)
  let hash: Hex
  try {
    hash = await wallet.sendTransaction(request)
  } catch (error) {
    // The node wants more than gas × fee (an OP-stack chain's L1 data fee), or the balance fell since.
    if (lacksFunds(error)) return unpaid(await client.getBalance({ address: deployer }))
    throw error
  }
  const receipt = await client.waitForTransactionReceipt({ hash, timeout: 300_000 })
  if (receipt.status !== 'success') return { refused: `the deployment transaction ${hash} reverted: nothing was deployed` }
  const deployed = await client.getCode({ address })
  if (!deployed || deployed !== expected) return { refused: `after transaction ${hash}, the code at ${address} is not the committed artifact's for ${what}: do not use it` }
  write(`Deployed ${what} at ${address} on chain ${chainId} (transaction ${hash}); its code is the committed artifact's.\n`)
  return 'deployed'
}

function capitalized(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1)
}

/** Whether a failure is the node's (or viem's) "insufficient funds": the account cannot pay gas × fee. */
function lacksFunds(error: unknown): boolean {
  return error instanceof BaseError && error.walk((cause) => cause instanceof InsufficientFundsError) !== null
}

/**
 * The refusal when the deployer cannot pay: its address, what the deployment needs (gas limit × fee
 * per gas) and what it holds, in ETH — not the node's words.
 */
function fundingRefusal(deployer: Address, chainId: number, cost: { gas: bigint; feePerGas: bigint; parts?: string }, held: bigint): string {
  const needed = cost.gas * cost.feePerGas
  const needs = `${formatEther(needed)} ETH (${cost.gas} gas${cost.parts ? `: ${cost.parts}` : ''} at ${formatGwei(cost.feePerGas)} gwei)`
  return (
    `the deployer ${deployer} cannot pay for the deployment on chain ${chainId}: it holds ${formatEther(held)} ETH and needs ` +
    (held < needed ? needs : `more than ${needs}: the chain charges beyond the gas, e.g. an L1 data fee`) +
    `. Send ${deployer} ETH, or name a funded key with --deployer-key-env, then run bruno deploy again; nothing was sent`
  )
}

function isPrivateKey(value: string | undefined): value is Hex {
  return value !== undefined && isHex(value) && value.length === 66
}

interface EntryFacts {
  readonly rpcEnv: string
  readonly runnerEnv: string
  readonly contract: Address
  readonly payee: string | undefined
  readonly name: string | undefined
}

/**
 * The `networks[]` entry that serves this Runner: on a chain with a preset, the preset and what
 * it leaves to the operator; elsewhere the chain id, with the addresses a preset would give left
 * for the operator to add.
 */
function networkEntry(chainId: number, facts: EntryFacts): { entry: Record<string, unknown>; missing: string[] } {
  const preset = presetOfChain(chainId)
  const name = facts.name ?? (preset ? undefined : `chain-${chainId}`)
  const entry: Record<string, unknown> = {
    ...(preset ? { preset: preset.preset } : {}),
    ...(name !== undefined ? { name } : {}),
    ...(preset ? {} : { chainId }),
    rpcUrl: { env: facts.rpcEnv },
    ...(facts.payee ? { payee: getAddress(facts.payee) } : {}),
    runner: { contract: facts.contract, key: { env: facts.runnerEnv } },
  }
  const missing = [...(facts.payee ? [] : ['payee']), ...(preset ? [] : ['weth', 'tokens', 'uniswap'])]
  return { entry, missing }
}

function entryText({ entry, missing }: ReturnType<typeof networkEntry>): string {
  const note = missing.length > 0 ? ` (add ${missing.map((field) => `"${field}"`).join(', ')}: see DEPLOYMENT.md)` : ''
  return `\nNetwork entry for the config's "networks"${note}:\n${JSON.stringify(entry, null, 2)}\n`
}
