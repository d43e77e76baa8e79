import type { FastifyBaseLogger } from 'fastify'
import { getAddress, keccak256, type Hex, type PrivateKeyAccount, type TransactionReceipt } from 'viem'
import type { RelayContext } from './context.ts'
import { localOwnership, type RunnerOwnership } from './ownership.ts'
import { viemAuthorizations } from './quote.ts'
import { revertReason } from './revertReason.ts'
import { encodeRunnerCall } from './runnerCall.ts'
import type { SentTransaction, Submission } from './store.ts'

/** The longest wait between two passes while the chain keeps failing. */
const MAX_BACKOFF_MS = 30_000

/**
 * The runner of one chain: picks waiting submissions, re-simulates each before sending (a
 * submission that would revert or under-pay is never sent: it waits, then fails at its deadline),
 * assigns nonces at send time, stores each signed transaction before broadcasting it, follows it
 * to inclusion and confirmations, and replaces a stuck one (same nonce, higher fee).
 *
 * After a restart it rebroadcasts the stored bytes of what was in flight, so nothing is sent twice.
 * It acts only while it owns the runner key (`ownership`: replicas sharing a PostgreSQL store take
 * turns); on taking ownership it starts over as after a restart, since another process may have
 * sent with the key until then.
 *
 * @example
 * const runner = new RunnerLoop(context, privateKeyToAccount(key), log)
 * runner.start()
 */
export class RunnerLoop {
  readonly #context: RelayContext
  readonly #account: PrivateKeyAccount
  readonly #log: FastifyBaseLogger
  readonly #ownership: RunnerOwnership
  #nextNonce: number | undefined
  #timer: NodeJS.Timeout | undefined
  #pass: Promise<void> | undefined
  #again = false
  #restarted = true
  #stopped = false
  #failures = 0
  /** unix ms before which no pass runs (backoff after failures) */
  #retryAt = 0

  constructor(context: RelayContext, account: PrivateKeyAccount, log: FastifyBaseLogger, ownership: RunnerOwnership = localOwnership()) {
    this.#context = context
    this.#account = account
    this.#log = log.child({ chain: context.network.name, component: 'runner' })
    this.#ownership = ownership
  }

  start(): void {
    this.#timer = setInterval(() => this.wake(), this.#context.network.config.runner.pollMs)
    this.wake()
  }

  async stop(): Promise<void> {
    this.#stopped = true
    clearInterval(this.#timer)
    this.#timer = undefined
    await this.#pass
    await this.#ownership.release()
  }

  /** Runs a pass now, or right after the one under way. */
  wake(): void {
    // Stopped: a late wake (a submission still being answered) must not take the key back.
    if (this.#stopped) return
    // After failed passes (the chain unreachable), wait out the backoff before the next one.
    if (Date.now() < this.#retryAt) return
    if (this.#pass) {
      this.#again = true
      return
    }
    this.#pass = this.#run().finally(() => {
      this.#pass = undefined
      if (this.#again && this.#timer) {
        this.#again = false
        this.wake()
      }
    })
  }

  async #run(): Promise<void> {
    try {
      await this.#tick()
      this.#failures = 0
      this.#retryAt = 0
    } catch (error) {
      // A pass that fails (the chain unreachable) is retried with exponential backoff.
      this.#failures++
      const retryInMs = Math.min(this.#context.network.config.runner.pollMs * 2 ** this.#failures, MAX_BACKOFF_MS)
      this.#retryAt = Date.now() + retryInMs
      this.#log.warn({ err: error, failures: this.#failures, retryInMs }, 'runner pass failed')
    }
  }

  async #tick(): Promise<void> {
    const { store, network } = this.#context
    if (!this.#ownership.held()) {
      if (!(await this.#ownership.acquire())) return
      // Taken over (or first start): re-read the nonces and rebroadcast what is in flight.
      this.#nextNonce = undefined
      this.#restarted = true
    }
    const active = await store.active(network.name)
    if (this.#nextNonce === undefined) {
      const [pending, stored] = await Promise.all([
        network.client.getTransactionCount({ address: this.#account.address, blockTag: 'pending' }),
        store.highestNonce(network.name),
      ])
      this.#nextNonce = Math.max(pending, stored === undefined ? 0 : stored + 1)
    }
    const restarted = this.#restarted
    this.#restarted = false
    // New submissions first, so that a send never waits behind the reads of those in flight. The
    // network's fees are read once per pass, beside the first simulation.
    let fees: Promise<Fees> | undefined
    const passFees = () => (fees ??= network.client.estimateFeesPerGas())
    for (const submission of active) {
      // Lost mid-pass (the lock's session ended): the new owner carries on from the store.
      if (!this.#ownership.held()) return
      if (submission.stage === 'waiting') await this.#send(submission, passFees)
    }
    if (!this.#ownership.held()) return
    // Then every transaction in flight at once: their reads leave in one JSON-RPC batch, and the
    // latest block is read once per pass (uncached: a stale one would hold `done` back).
    let latest: Promise<bigint> | undefined
    const latestBlock = () => (latest ??= network.client.getBlockNumber({ cacheTime: 0 }))
    const following = await Promise.allSettled(
      active.filter((submission) => submission.stage !== 'waiting').map((submission) => this.#follow(submission, restarted, latestBlock)),
    )
    const failed = following.find((outcome) => outcome.status === 'rejected')
    if (failed) throw failed.reason
  }

  async #send(submission: Submission, passFees: () => Promise<Fees>): Promise<void> {
    const { network, store } = this.#context
    const { config, client } = network
    if (Math.floor(Date.now() / 1000) > submission.deadline) {
      await store.update(submission.id, { stage: 'failed', reason: `not sent before its deadline${submission.reason ? `: ${submission.reason}` : ''}` })
      return
    }
    const { request } = submission
    const token = config.tokens.find((candidate) => getAddress(candidate.address) === getAddress(request.payment.token))
    const call = this.#runnerTransaction(submission)
    let gas: bigint
    let fees: { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint }
    try {
      ;[gas, fees] = await Promise.all([client.estimateGas(call), passFees()])
    } catch (error) {
      const reason = revertReason(error, token?.decimals ?? 18, token?.symbol ?? 'tokens')
      if (!reason) throw error
      if (reason !== submission.reason) await store.update(submission.id, { reason })
      return
    }
    const nonce = this.#nextNonce!
    const transaction = await this.#sign({ ...call, gas: (gas * BigInt(config.runner.gasLimitBps)) / 10_000n, nonce, ...fees }, [])
    await store.update(submission.id, { stage: 'sending', transaction })
    this.#nextNonce = nonce + 1
    await this.#broadcast(transaction.raw)
    this.#log.info({ submission: submission.id, hash: transaction.hash, nonce }, 'sent')
  }

  async #follow(submission: Submission, restarted: boolean, latestBlock: () => Promise<bigint>): Promise<void> {
    const { network, store } = this.#context
    const transaction = submission.transaction!
    const receipt = await this.#receipt(transaction.hashes)
    if (receipt) {
      const fee = (receipt.gasUsed * receipt.effectiveGasPrice).toString()
      const included = { blockNumber: receipt.blockNumber.toString(), gasUsed: receipt.gasUsed.toString(), fee }
      if (receipt.status !== 'success') {
        await store.update(submission.id, { ...included, stage: 'failed', reason: 'the transaction reverted on-chain' })
        return
      }
      const latest = await latestBlock()
      const confirmed = latest - receipt.blockNumber + 1n >= BigInt(network.config.runner.confirmations)
      const transactionOfReceipt = receipt.transactionHash === transaction.hash ? {} : { transaction: { ...transaction, hash: receipt.transactionHash } }
      await store.update(submission.id, { ...included, ...transactionOfReceipt, stage: confirmed ? 'done' : 'confirming' })
      return
    }
    if (restarted) {
      await this.#broadcast(transaction.raw)
      return
    }
    if (Date.now() - transaction.sentAt > network.config.runner.stuckAfterMs) await this.#replace(submission, transaction)
  }

  /** The Runner contract call that carries a submission, from the runner EOA. */
  #runnerTransaction({ request }: Submission) {
    const { config } = this.#context.network
    const authorizationList = viemAuthorizations(request.authorizationList)
    return {
      account: this.#account.address,
      to: getAddress(config.runner.contract),
      data: encodeRunnerCall(request.call, request.payment, getAddress(config.payee)),
      ...(authorizationList ? { authorizationList } : {}),
    }
  }

  /** Same nonce, fees raised by the configured bump (at least the network's current ones). */
  async #replace(submission: Submission, stuck: SentTransaction): Promise<void> {
    const { network, store } = this.#context
    const { config, client } = network
    const { id } = submission
    const call = this.#runnerTransaction(submission)
    let current: { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint }
    try {
      // Against the latest block: the pending state already holds the stuck transaction itself.
      ;[, current] = await Promise.all([client.estimateGas({ ...call, blockTag: 'latest' }), client.estimateFeesPerGas()])
    } catch (error) {
      // Re-simulated like every send: a replacement that would now revert is not sent.
      this.#log.warn({ submission: id, err: error }, 'stuck transaction not replaced: it would no longer succeed')
      return
    }
    const bump = (value: string) => (BigInt(value) * BigInt(10_000 + config.runner.feeBumpBps)) / 10_000n
    const maxPriorityFeePerGas = max(bump(stuck.maxPriorityFeePerGas), current.maxPriorityFeePerGas)
    const maxFeePerGas = max(bump(stuck.maxFeePerGas), current.maxFeePerGas, maxPriorityFeePerGas)
    const replacement = await this.#sign({ ...call, gas: BigInt(stuck.gas), nonce: stuck.nonce, maxFeePerGas, maxPriorityFeePerGas }, stuck.hashes)
    await store.update(id, { transaction: replacement })
    await this.#broadcast(replacement.raw)
    this.#log.info({ submission: id, hash: replacement.hash, replaces: stuck.hash, nonce: stuck.nonce }, 'replaced a stuck transaction')
  }

  async #sign(
    transaction: { to: `0x${string}`; data: Hex; gas: bigint; nonce: number; maxFeePerGas: bigint; maxPriorityFeePerGas: bigint; authorizationList?: ReturnType<typeof viemAuthorizations> },
    earlier: readonly Hex[],
  ): Promise<SentTransaction> {
    const { chainId } = this.#context.network.config
    const raw = await this.#account.signTransaction({
      chainId,
      to: transaction.to,
      data: transaction.data,
      value: 0n,
      gas: transaction.gas,
      nonce: transaction.nonce,
      maxFeePerGas: transaction.maxFeePerGas,
      maxPriorityFeePerGas: transaction.maxPriorityFeePerGas,
      ...(transaction.authorizationList ? { authorizationList: transaction.authorizationList, type: 'eip7702' as const } : { type: 'eip1559' as const }),
    })
    const hash = keccak256(raw)
    return {
      hash,
      nonce: transaction.nonce,
      raw,
      gas: transaction.gas.toString(),
      maxFeePerGas: transaction.maxFeePerGas.toString(),
      maxPriorityFeePerGas: transaction.maxPriorityFeePerGas.toString(),
      sentAt: Date.now(),
      hashes: [...earlier, hash],
    }
  }

  async #broadcast(raw: Hex): Promise<void> {
    try {
      await this.#context.network.client.sendRawTransaction({ serializedTransaction: raw })
    } catch (error) {
      // Already known, or already mined: the stored bytes are what counts; the receipt will tell.
      this.#log.info({ err: error }, 'broadcast not accepted')
    }
  }

  async #receipt(hashes: readonly Hex[]): Promise<TransactionReceipt | undefined> {
    const receipts = await Promise.all(
      hashes.map((hash) => this.#context.network.client.getTransactionReceipt({ hash }).catch(() => undefined)),
    )
    return receipts.find((receipt) => receipt !== undefined)
  }
}

type Fees = { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint }

function max(...values: bigint[]): bigint {
  return values.reduce((a, b) => (a > b ? a : b))
}
