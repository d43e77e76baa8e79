import { readFileSync } from 'node:fs'
import solc from 'solc'
import type { Test } from 'tap'
import {
  createPublicClient,
  createTestClient,
  createWalletClient,
  decodeFunctionData,
  encodeFunctionData,
  erc20Abi,
  formatUnits,
  getAddress,
  http,
  parseAbi,
  type Abi,
  type Address,
  type Hex,
  type PrivateKeyAccount,
} from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { devnetChain } from '../../core/devnet/chain.ts'
import { compilerSettings } from '../../contracts/build.ts'
import { runnerAbi } from '../../contracts/abi.ts'
import { mintUsdc } from '../../core/devnet/fund.ts'
import { calldataGas } from '../../core/relay/runnerTransaction.ts'
import type { DevnetBruno } from '../fixtures/devnetBruno.ts'
import type { LedgerEntry } from '../../core/testing/runnerLedger.ts'
import { encodePaymentSignatureHeader } from '@x402/core/http'
import { postRaw, RawMcpClient } from '../fixtures/mcpHttp.ts'
import { signTransfer } from '../fixtures/signedTransfer.ts'
import { waitFor } from '../fixtures/waitFor.ts'
import { CALIBUR_ADDRESS } from '../../plugins/calibur/networkOptions.ts'

// Shared by the adversarial tests (DESIGN §3 "The promise"): the test-only contracts, control of the devnet's
// blocks (an attacker's transaction and the runner's in one block), Bruno's three bindings, and the checks
// every attack ends with.

export const divergentAbi = parseAbi([
  'event Worked(bytes32 digest, uint256 rounds)',
  'function onGasPrice(uint256 rounds)',
  'function afterBlock(uint256 last, uint256 rounds)',
  'function afterTime(uint256 last, uint256 rounds)',
  'function unlessCoinbase(address expected, uint256 rounds)',
  'function unlessBaseFee(uint256 expected, uint256 rounds)',
  'function whenGasPlenty(uint256 threshold, uint256 rounds)',
])

export const stateTargetAbi = parseAbi([
  'event Worked(bytes32 digest, uint256 rounds)',
  'function open(address owner) view returns (bool)',
  'function setOpen(bool value)',
  'function workIfOpen(address owner, uint256 rounds)',
  'function pullAndWork(address token, address from, uint256 amount, uint256 rounds)',
])

export const switchAbi = parseAbi([
  'function RETURN_DATA_BOMB() view returns (uint256)',
  'function GAS_BOMB() view returns (uint256)',
  'function arm(address account, uint256 newMode, uint256 percent)',
  'function run(uint256 rounds)',
])

export const fickleSignerAbi = parseAbi([
  'function lastGood() view returns (uint256)',
  'function setLastGood(uint256 blockNumber)',
  'function isValidSignature(bytes32, bytes) view returns (bytes4)',
])

/** FiatToken v2's EIP-3009 entry points an attacker calls directly. */
export const eip3009AttackAbi = parseAbi([
  'function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, uint8 v, bytes32 r, bytes32 s)',
  'function cancelAuthorization(address authorizer, bytes32 nonce, uint8 v, bytes32 r, bytes32 s)',
  'function authorizationState(address authorizer, bytes32 nonce) view returns (bool)',
])

/** Keccak rounds of heavy work: ≈1.1M gas, so the call's stipend dwarfs the payment phase. */
export const HEAVY_ROUNDS = 15_000n

/**
 * Execution gas (beyond the intrinsic 21,000 + calldata) a runner transaction that reverted in its payment phase
 * may use, per form, measured and accounted for:
 * - a signed transfer: the Runner's cold `balanceOf`, then FiatToken v2.2's failing `transferWithAuthorization`
 *   (typed-data hash, ecrecover 3k, a cold authorization slot 2.1k, the balance check, the revert): ≤ 51k measured;
 * - a Calibur batch: the Runner's delegation check and cold balance read (~10k), then its call to the account's
 *   signed payment-only batch (copied and hashed, ecrecover, Calibur's nonce check or write, the failed transfer),
 *   reverted whole: ≤ 67k measured.
 */
export const PAYMENT_PHASE_EXECUTION = { relayWithAuthorization: 60_000n, relayBatch: 75_000n } as const

/**
 * And in any case (the figure): a reverted runner transaction uses under 100k gas, when the call it
 * carried was given 1M+ (`HEAVY_ROUNDS`): the revert costs the payment phase, never the stipend.
 */
export const PAYMENT_PHASE_BOUND = 100_000n

type ContractName = 'Divergent' | 'StateTarget' | 'GasSink' | 'Inert' | 'FickleSigner' | 'Switch'

/** Compiles `contracts/Adversary.sol` with the pinned solc and the product contracts' own settings. */
export function compileAdversary(): Record<ContractName, { abi: Abi; bytecode: Hex }> {
  const content = readFileSync(new URL('./contracts/Adversary.sol', import.meta.url), 'utf8')
  const input = {
    language: 'Solidity',
    sources: { 'Adversary.sol': { content } },
    settings: { ...compilerSettings, outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } } },
  }
  const output = JSON.parse(solc.compile(JSON.stringify(input))) as {
    errors?: { severity: string; formattedMessage: string }[]
    contracts?: Record<string, Record<string, { abi: Abi; evm: { bytecode: { object: string } } }>>
  }
  const errors = (output.errors ?? []).filter((error) => error.severity === 'error')
  if (errors.length) throw new Error(`solc: ${errors.map((e) => e.formattedMessage).join('\n')}`)
  const names: ContractName[] = ['Divergent', 'StateTarget', 'GasSink', 'Inert', 'FickleSigner', 'Switch']
  return Object.fromEntries(
    names.map((name) => {
      const contract = output.contracts?.['Adversary.sol']?.[name]
      if (!contract) throw new Error(`solc produced no ${name}`)
      return [name, { abi: contract.abi, bytecode: `0x${contract.evm.bytecode.object}` as Hex }]
    }),
  ) as Record<ContractName, { abi: Abi; bytecode: Hex }>
}

/** A high tip: anvil orders its pool by tip, so the attacker's transaction goes first in the block. */
export const ATTACK_FEES = { maxFeePerGas: 200_000_000_000n, maxPriorityFeePerGas: 50_000_000_000n } as const

/** The devnet as the attacker and the test drive it: clients on anvil itself (not Bruno's proxy), and its blocks. */
export function adversaryChain(bruno: DevnetBruno) {
  const { deployment } = bruno
  const chain = devnetChain(deployment.chainId)
  const transport = http(deployment.rpcUrl)
  const client = createPublicClient({ chain, transport, pollingInterval: 25 })
  const testClient = createTestClient({ chain, mode: 'anvil', transport })
  const walletOf = (account: PrivateKeyAccount) => createWalletClient({ account, chain, transport })
  const sponsor = walletOf(privateKeyToAccount(deployment.deployer.privateKey))
  const runner = deployment.runner.operator.address

  const mined = async (hash: Hex) => {
    const receipt = await client.waitForTransactionReceipt({ hash, pollingInterval: 25 })
    if (receipt.status !== 'success') throw new Error(`setup transaction reverted: ${hash}`)
    return receipt
  }

  async function deploy(artifact: { abi: Abi; bytecode: Hex }): Promise<Address> {
    const receipt = await mined(await sponsor.deployContract({ abi: artifact.abi, bytecode: artifact.bytecode }))
    return getAddress(receipt.contractAddress!)
  }

  /** Delegates `account` to `to` (zero: undelegates) by a type-4 transaction the sponsor sends; returns the hash. */
  async function delegateBy(account: PrivateKeyAccount, to: Address, fees?: typeof ATTACK_FEES): Promise<Hex> {
    const authorization = await sponsor.signAuthorization({ account, contractAddress: to })
    return sponsor.sendTransaction({ to: sponsor.account.address, authorizationList: [authorization], gas: 100_000n, ...(fees ?? {}) })
  }

  const usdcOf = (address: Address) => client.readContract({ address: deployment.usdc, abi: erc20Abi, functionName: 'balanceOf', args: [address] })

  /**
   * Runs `step` with automine off, so that the runner's transaction waits in the pool: `step` submits and
   * returns the runner transaction's hash once it is sent (or `undefined` when the submission was refused);
   * `attack` then sends the attacker's transactions (higher tip: first in the block), `beforeMine` changes what
   * the next block will be, and one block is mined with everything. Automine is back on afterwards.
   */
  async function inOneBlock<T>(
    step: () => Promise<{ hash?: Hex; value: T }>,
    options: { attack?: () => Promise<Hex[]>; beforeMine?: () => Promise<void> } = {},
  ): Promise<{ value: T; hash?: Hex; attackHashes: Hex[]; blockNumber?: bigint }> {
    await testClient.setAutomine(false)
    try {
      const { hash, value } = await step()
      if (!hash) return { value, attackHashes: [] }
      // The store has the transaction before the node does: wait until the node has it too.
      await waitFor(() => client.getTransaction({ hash }).then(() => true, () => false), Boolean, `the runner's ${hash} in the pool`, 10_000, 25)
      const attackHashes = options.attack ? await options.attack() : []
      await options.beforeMine?.()
      await testClient.mine({ blocks: 1 })
      const receipt = await client.getTransactionReceipt({ hash })
      for (const attackHash of attackHashes) {
        const attackReceipt = await client.getTransactionReceipt({ hash: attackHash })
        if (attackReceipt.blockNumber !== receipt.blockNumber || attackReceipt.transactionIndex >= receipt.transactionIndex) {
          throw new Error(`the attack ${attackHash} did not land before the runner's ${hash} in one block`)
        }
      }
      return { value, hash, attackHashes, blockNumber: receipt.blockNumber }
    } finally {
      await testClient.setAutomine(true)
    }
  }

  return { chain, transport, client, testClient, sponsor, runner, mined, deploy, delegateBy, walletOf, usdcOf, inOneBlock }
}

export type AdversaryChain = ReturnType<typeof adversaryChain>

/** How a submission was answered: accepted with an id, or refused with a message. */
export type Submitted = { accepted: true; id: string } | { accepted: false; message: string }

export type Binding = 'mcp' | 'rest' | 'rpc' | 'x402'

/**
 * Bruno's four bindings of submit and status (one semantics, four transports): MCP tools, REST
 * (`POST /local/v1/submit`), JSON-RPC (`POST /rpc`, `bruno_sendTransaction`) and x402 (`POST
 * /local/v1/x402`, a signed transfer only: its payment sent as the `PAYMENT-SIGNATURE` the official
 * codec encodes, its status REST's). An x402 submit is held until settled or `x402.holdSec`: a test
 * that pauses mining serves Bruno with a short hold (`x402HoldSec`).
 */
export function bindings(bruno: DevnetBruno, mcp: RawMcpClient) {
  const base = bruno.server.url
  let rpcId = 0
  async function submit(binding: Binding, request: Record<string, unknown>): Promise<Submitted> {
    if (binding === 'x402') {
      const { payment, ...body } = request as { payment: { token: Hex; authorization: { value: string }; signature: Hex } }
      const { deployment } = bruno
      const offer = {
        scheme: 'exact',
        network: `eip155:${deployment.chainId}`,
        amount: payment.authorization.value,
        asset: payment.token,
        payTo: getAddress(bruno.config.networks[0]!.payee),
        maxTimeoutSeconds: 300,
        extra: { name: 'USD Coin', version: '2' },
      }
      const header = encodePaymentSignatureHeader({ x402Version: 2, accepted: offer, payload: { signature: payment.signature, authorization: payment.authorization } } as never)
      const reply = await postRaw(`${base}/local/v1/x402`, body, { 'payment-signature': header })
      // 200 settled, 202 still pending, 402 after acceptance (it failed to settle): each answers the submission.
      if (reply.json?.id) return { accepted: true, id: reply.json.id }
      if (reply.status !== 402) throw new Error(`x402 answered ${reply.status}: ${reply.text}`)
      return { accepted: false, message: reply.json.error.message }
    }
    if (binding === 'mcp') {
      const result = await mcp.callTool('submit', { chain: 'local', ...request })
      return result.isError ? { accepted: false, message: result.content[0].text } : { accepted: true, id: result.structuredContent.id }
    }
    if (binding === 'rest') {
      const reply = await postRaw(`${base}/local/v1/submit`, request)
      if (reply.status === 202) return { accepted: true, id: reply.json.id }
      if (reply.status !== 422) throw new Error(`REST submit answered ${reply.status}: ${reply.text}`)
      return { accepted: false, message: reply.json.error.message }
    }
    const reply = await postRaw(`${base}/rpc`, { jsonrpc: '2.0', id: ++rpcId, method: 'bruno_sendTransaction', params: { chain: 'local', ...request } })
    if (reply.json.result) return { accepted: true, id: reply.json.result.id }
    if (reply.json.error?.code !== 1001) throw new Error(`bruno_sendTransaction answered ${reply.text}`)
    return { accepted: false, message: reply.json.error.message }
  }
  async function status(binding: Binding, id: string): Promise<any> {
    if (binding === 'mcp') return mcp.call('status', { id })
    if (binding === 'rest' || binding === 'x402') {
      const response = await fetch(`${base}/local/v1/status/${id}`)
      return response.json()
    }
    const reply = await postRaw(`${base}/rpc`, { jsonrpc: '2.0', id: ++rpcId, method: 'bruno_getStatus', params: { id } })
    return reply.json.result
  }
  /** Submits, and once accepted waits until the runner has signed and stored its transaction: its hash. */
  async function submitAndSend(binding: Binding, request: Record<string, unknown>): Promise<{ hash?: Hex; value: Submitted }> {
    const submitted = await submit(binding, request)
    if (!submitted.accepted) return { value: submitted }
    const sending = await waitFor(() => status(binding, submitted.id), (view) => Boolean(view.transaction?.hash) || view.stage === 'failed', `submission ${submitted.id} sent`, 10_000, 25)
    if (!sending.transaction?.hash) throw new Error(`submission ${submitted.id} not sent: ${JSON.stringify(sending)}`)
    return { hash: sending.transaction.hash, value: submitted }
  }
  const settled = (binding: Binding, id: string) =>
    waitFor(() => status(binding, id), (view) => view.stage === 'done' || view.stage === 'failed', `submission ${id} settled`, 15_000, 50)
  return { submit, status, submitAndSend, settled }
}

export type Bindings = ReturnType<typeof bindings>

/** A USDC transfer to the payee, signed by `key` as EIP-3009: the `payment` submit takes. */
export async function transferPayment(bruno: DevnetBruno, key: Hex, amount: bigint) {
  const { deployment } = bruno
  const token = { address: deployment.usdc, name: 'USD Coin', version: '2', chainId: deployment.chainId }
  const signed = await signTransfer(key, token, getAddress(bruno.config.networks[0]!.payee), amount)
  return { token: deployment.usdc, authorization: signed.message, signature: signed.signature }
}

/** The runner transaction's entry in the ledger (DESIGN §3's promise: spent ≤ the value received). */
export async function ledgerEntry(bruno: DevnetBruno, hash: Hex): Promise<LedgerEntry> {
  const entry = (await bruno.ledger()).find((candidate) => candidate.hash === hash)
  if (!entry) throw new Error(`no ledger entry for ${hash}`)
  return entry
}

/** One ledger line for the closing note: spent wei, received and kept (USDC, kept in wei), ratio. */
export function ledgerLine(t: Test, label: string, entry: LedgerEntry): void {
  const ratio = entry.keptWei > 0n ? (Number(entry.spentWei) / Number(entry.keptWei)).toFixed(3) : '∞ (nothing kept)'
  t.comment(
    `ledger | ${label} | ${entry.status} | gas used ${entry.gasUsed} of ${entry.gasLimit} | spent ${entry.spentWei} wei | ` +
      `received ${formatUnits(entry.received, 6)} USDC, kept ${formatUnits(entry.charged, 6)} USDC = ${entry.keptWei} wei | spent/kept ${ratio}`,
  )
}

/**
 * The Runner entry point a runner transaction called, the stipend it gave the call (`callGas`), its calldata's
 * intrinsic gas and, for a batch, its delegate and the payment phase's cap (`paymentGas`).
 */
export async function runnerCallGas(
  chain: AdversaryChain,
  hash: Hex,
): Promise<{ form: 'relayWithAuthorization' | 'relayBatch'; callGas: bigint; calldataGas: bigint; delegate?: Address; paymentGas?: bigint }> {
  const transaction = await chain.client.getTransaction({ hash })
  const decoded = decodeFunctionData({ abi: runnerAbi, data: transaction.input })
  if (decoded.functionName === 'relayBatch') {
    const [, delegate, batches, callGas] = decoded.args
    return { form: 'relayBatch', callGas, calldataGas: calldataGas(transaction.input), delegate: getAddress(delegate), paymentGas: batches.paymentGas }
  }
  if (decoded.functionName !== 'relayWithAuthorization') throw new Error(`${hash} calls the Runner's ${decoded.functionName}`)
  return { form: decoded.functionName, callGas: decoded.args[2], calldataGas: calldataGas(transaction.input) }
}

/** The Runner's own work in a batch's payment phase beside the payment call: its checks and balance reads. */
const RUNNER_PAYMENT_PHASE_WORK = 30_000n

/**
 * The first way an accepted submission may end: sent, its call failed on chain, the payment taken, and the
 * runner paid no more than the payment was worth.
 */
export async function expectCallFailedAndPaid(t: Test, bruno: DevnetBruno, view: any, amount: bigint, label: string, reason: RegExp = /the call failed on chain \(the payment was taken\)/): Promise<LedgerEntry> {
  t.equal(view.stage, 'done', `${label}: done (${view.reason})`)
  t.equal(view.outcome?.callSucceeded, false, `${label}: the call failed on chain`)
  t.equal(view.outcome?.paidBaseUnits, amount.toString(), `${label}: the payee was paid the payment`)
  t.match(view.reason, reason, `${label}: a reason`)
  const entry = await ledgerEntry(bruno, view.transaction.hash)
  t.equal(entry.status, 'success', `${label}: the runner transaction succeeded`)
  t.equal(entry.received, amount, `${label}: Relayed says the payee received the payment`)
  t.ok(entry.spentWei <= entry.keptWei, `${label}: spent ${entry.spentWei} wei ≤ kept ${entry.keptWei} wei`)
  ledgerLine(t, label, entry)
  return entry
}

/**
 * The other way: the payer voided its own payment in the same block, the runner transaction reverted in its
 * payment phase, and it used no more gas than that phase (a signed transfer's or Calibur's: `PAYMENT_PHASE_EXECUTION`
 * beyond the intrinsic gas, under `PAYMENT_PHASE_BOUND` in all; another delegate's: its batch's `paymentGas` and the
 * Runner's work, under `relay.maxRevertGas` in all), far below the call's stipend.
 */
export async function expectRevertedInPaymentPhase(t: Test, bruno: DevnetBruno, chain: AdversaryChain, view: any, label: string): Promise<LedgerEntry> {
  t.equal(view.stage, 'failed', `${label}: failed`)
  t.match(view.reason, /reverted in its payment phase: nothing was paid/, `${label}: the reason says the payment was not taken`)
  const entry = await ledgerEntry(bruno, view.transaction.hash)
  t.equal(entry.status, 'reverted', `${label}: the runner transaction reverted`)
  t.equal(entry.received, 0n)
  const { form, callGas, calldataGas: dataGas, delegate, paymentGas } = await runnerCallGas(chain, view.transaction.hash)
  t.ok(callGas >= 1_000_000n, `${label}: the call's stipend was ${callGas} gas (heavy work)`)
  const intrinsic = 21_000n + dataGas
  const execution = entry.gasUsed - intrinsic
  t.comment(`payment phase | ${label} | ${entry.gasUsed} gas used = intrinsic ${intrinsic} (21,000 + calldata ${dataGas}) + execution ${execution}; the call's stipend was ${callGas}`)
  const measured = delegate === undefined || delegate === CALIBUR_ADDRESS
  const executionBound = measured ? PAYMENT_PHASE_EXECUTION[form] : paymentGas! + RUNNER_PAYMENT_PHASE_WORK
  const totalBound = measured ? PAYMENT_PHASE_BOUND : BigInt(bruno.config.networks[0]!.relay.maxRevertGas)
  t.ok(execution <= executionBound, `${label}: ${execution} gas of execution ≤ ${executionBound}, ${form}'s payment phase`)
  t.ok(entry.gasUsed < totalBound, `${label}: the reverted transaction used ${entry.gasUsed} gas < ${totalBound}`)
  t.ok(entry.gasUsed * 4n < callGas, `${label}: ${entry.gasUsed} gas is under a quarter of the ${callGas} stipend: the call never ran`)
  ledgerLine(t, label, entry)
  return entry
}

/** The USDC-or-nothing accounts the attacks pay from: a fresh key with `usdc` base units and, if asked, some ETH. */
export async function fundedPayer(bruno: DevnetBruno, chain: AdversaryChain, key: Hex, usdc: bigint, eth = 0n): Promise<PrivateKeyAccount> {
  const account = privateKeyToAccount(key)
  await mintUsdc(bruno.deployment.rpcUrl, bruno.deployment, account.address, usdc)
  if (eth > 0n) await chain.testClient.setBalance({ address: account.address, value: eth })
  return account
}

/**
 * A fresh payer with 1,000 USDC and no ETH, its call (a USDC balance read, which always succeeds) and
 * the amount quoted for it now, paid by a signed transfer.
 */
export async function quotedPayer(bruno: DevnetBruno, chain: AdversaryChain, mcp: RawMcpClient) {
  const key = generatePrivateKey()
  const account = await fundedPayer(bruno, chain, key, 1_000_000_000n)
  const call = { to: bruno.deployment.usdc, data: encodeFunctionData({ abi: erc20Abi, functionName: 'balanceOf', args: [account.address] }) }
  const quote = await mcp.call('quote', { chain: 'local', call, token: 'USDC', payment: 'authorization' })
  return { key, address: account.address, call, amount: BigInt(quote.amountBaseUnits) }
}
