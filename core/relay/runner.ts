import type { FastifyBaseLogger } from 'fastify'
import { getAddress, keccak256, type Hex, type PrivateKeyAccount, type SignedAuthorizationList, type TransactionReceipt } from 'viem'
import { readFees } from '../chain/fees.ts'
import { ToolError } from '../tool.ts'
import { describeCallFailure } from './callFailure.ts'
import type { RelayContext } from './context.ts'
import { localOwnership, type RunnerOwnership } from './ownership.ts'
import { paymentToken } from './paymentToken.ts'
import { relayOfRequest } from './relayOfRequest.ts'
import { describeRevertData } from './revertReason.ts'
import { relayedEvent } from './runnerCall.ts'
import { prepareRunnerTransaction, type Fees, type PreparedRelay } from './runnerTransaction.ts'
import type { RelayOutcome } from './schemas.ts'
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
    const passFees = () => (fees ??= readFees(network.client))
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
    const { store } = this.#context
    if (Math.floor(Date.now() / 1000) > submission.deadline) {
      await store.update(submission.id, { stage: 'failed', reason: `not sent before its deadline${submission.reason ? `: ${submission.reason}` : ''}` })
      return
    }
    const nonce = this.#nextNonce!
    let prepared: PreparedRelay
    try {
      prepared = await this.#prepare(submission, nonce, await passFees(), submission.callGas === undefined ? undefined : BigInt(submission.callGas))
    } catch (error) {
      if (!(error instanceof ToolError)) throw error
      // Re-simulated like at submit: a payment or a call that would now fail is not sent; it waits.
      if (error.message !== submission.reason) await store.update(submission.id, { reason: error.message })
      return
    }
    if (!prepared.coverage.covered) {
      const reason = `waiting: the payment no longer covers the most the runner could pay at current fees (${prepared.coverage.worstCaseWei} wei)`
      if (reason !== submission.reason) await store.update(submission.id, { reason })
      return
    }
    const transaction = await this.#sign(prepared, nonce, [])
    await store.update(submission.id, { stage: 'sending', transaction })
    this.#nextNonce = nonce + 1
    await this.#broadcast(transaction.raw)
    this.#log.info({ submission: submission.id, hash: transaction.hash, nonce, gas: prepared.gas.toString(), callGas: prepared.callGas.toString() }, 'sent')
  }

  /** The submission's runner transaction, prepared and simulated exactly as it will be signed. */
  #prepare(submission: Submission, nonce: number, fees: Fees, callGas?: bigint): Promise<PreparedRelay> {
    const { network } = this.#context
    const { request } = submission
    const token = paymentToken(network, request.payment.token)
    const requested = relayOfRequest(this.#context, request.call, request.payment, token)
    return prepareRunnerTransaction(this.#context, requested.relay, request.authorizationList, {
      token,
      amount: requested.amount,
      nonce,
      fees,
      ...(callGas === undefined ? {} : { callGas }),
      refusal: 'waiting',
    })
  }

  async #follow(submission: Submission, restarted: boolean, latestBlock: () => Promise<bigint>): Promise<void> {
    const { network, store } = this.#context
    const transaction = submission.transaction!
    const receipt = await this.#receipt(transaction.hashes)
    if (receipt) {
      // OP-stack receipts carry the L1 data fee the runner also paid (viem passes the field through).
      const l1Fee = (receipt as { l1Fee?: bigint | string | null }).l1Fee
      const fee = (receipt.gasUsed * receipt.effectiveGasPrice + BigInt(l1Fee ?? 0)).toString()
      const included = { blockNumber: receipt.blockNumber.toString(), gasUsed: receipt.gasUsed.toString(), fee }
      if (receipt.status !== 'success') {
        await store.update(submission.id, { ...included, stage: 'failed', reason: 'the transaction reverted on-chain: the payment was not taken' })
        return
      }
      const latest = await latestBlock()
      const confirmed = latest - receipt.blockNumber + 1n >= BigInt(network.config.runner.confirmations)
      const transactionOfReceipt = receipt.transactionHash === transaction.hash ? {} : { transaction: { ...transaction, hash: receipt.transactionHash } }
      const outcome = submission.outcome ?? (await this.#outcome(submission, receipt))
      await store.update(submission.id, {
        ...included,
        ...transactionOfReceipt,
        outcome,
        ...(outcome.callSucceeded ? {} : { reason: `the call failed on chain (the payment was taken)${outcome.callReason ? `: ${outcome.callReason}` : ''}` }),
        stage: confirmed ? 'done' : 'confirming',
      })
      return
    }
    if (restarted) {
      await this.#broadcast(transaction.raw)
      return
    }
    if (Date.now() - transaction.sentAt > network.config.runner.stuckAfterMs) await this.#replace(submission, transaction)
  }

  /** What an included transaction did, from the Runner's `Relayed` event; a failed batch's reason is replayed. */
  async #outcome(submission: Submission, receipt: TransactionReceipt): Promise<RelayOutcome> {
    const { network } = this.#context
    const { request } = submission
    const token = paymentToken(network, request.payment.token)
    const relayed = relayedEvent(receipt.logs, getAddress(network.config.runner.contract))
    if (!relayed) return { paid: '0', callSucceeded: false, callReason: 'the Runner logged no relay' }
    if (relayed.callSucceeded) return { paid: relayed.received.toString(), callSucceeded: true }
    const requested = relayOfRequest(this.#context, request.call, request.payment, token)
    const callReason =
      relayed.reason !== '0x'
        ? describeRevertData(relayed.reason, token.decimals, token.symbol)
        : await describeCallFailure(this.#context, requested, token, receipt.blockNumber - 1n).catch(() => undefined)
    return { paid: relayed.received.toString(), callSucceeded: false, ...(callReason ? { callReason } : {}) }
  }

  /**
   * Same nonce, same transaction, fees raised by the configured bump (at least the network's current
   * ones) but never past what the payment covers: re-simulated at the new fees first. Where the bump
   * the node requires would pass the payment's cover, it is not replaced: it waits at its fee.
   */
  async #replace(submission: Submission, stuck: SentTransaction): Promise<void> {
    const { network, store } = this.#context
    const { config, client } = network
    const { id } = submission
    const bump = (value: string) => (BigInt(value) * BigInt(10_000 + config.runner.feeBumpBps)) / 10_000n
    let prepared: PreparedRelay
    let current: Fees
    try {
      current = await readFees(client)
      const maxPriorityFeePerGas = max(bump(stuck.maxPriorityFeePerGas), current.maxPriorityFeePerGas)
      const maxFeePerGas = max(bump(stuck.maxFeePerGas), current.maxFeePerGas, maxPriorityFeePerGas)
      // The stipend the stuck one carries, so that only the fees change; against the latest block,
      // since the pending state holds the stuck transaction itself.
      prepared = await this.#prepare(submission, stuck.nonce, { maxFeePerGas, maxPriorityFeePerGas }, BigInt(stuck.callGas))
    } catch (error) {
      if (!(error instanceof ToolError)) throw error
      this.#log.warn({ submission: id, reason: error.message }, 'stuck transaction not replaced: it would no longer succeed')
      return
    }
    if (!prepared.coverage.covered) {
      this.#log.warn({ submission: id, worstCaseWei: prepared.coverage.worstCaseWei.toString() }, 'stuck transaction not replaced: the payment does not cover the raised fees')
      if (!submission.reason?.startsWith('replacement')) await store.update(id, { reason: 'replacement held: the payment does not cover the fee the node requires to replace it' })
      return
    }
    const replacement = await this.#sign(prepared, stuck.nonce, stuck.hashes)
    await store.update(id, { transaction: replacement })
    await this.#broadcast(replacement.raw)
    this.#log.info({ submission: id, hash: replacement.hash, replaces: stuck.hash, nonce: stuck.nonce }, 'replaced a stuck transaction')
  }

  async #sign(prepared: PreparedRelay, nonce: number, earlier: readonly Hex[]): Promise<SentTransaction> {
    const { chainId } = this.#context.network.config
    const { fees, authorizationList } = prepared
    const raw = await this.#account.signTransaction({
      chainId,
      to: prepared.to,
      data: prepared.data,
      value: 0n,
      gas: prepared.gas,
      nonce,
      maxFeePerGas: fees.maxFeePerGas,
      maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
      ...(authorizationList ? { authorizationList: authorizationList as SignedAuthorizationList, type: 'eip7702' as const } : { type: 'eip1559' as const }),
    })
    const hash = keccak256(raw)
    return {
      hash,
      nonce,
      raw,
      gas: prepared.gas.toString(),
      callGas: prepared.callGas.toString(),
      maxFeePerGas: fees.maxFeePerGas.toString(),
      maxPriorityFeePerGas: fees.maxPriorityFeePerGas.toString(),
      sentAt: Date.now(),
      hashes: [...earlier, hash],
    }
  }

  async #broadcast(raw: Hex): Promise<void> {
    try {
      await this.#context.network.sendRawTransaction(raw)
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

function max(...values: bigint[]): bigint {
  return values.reduce((a, b) => (a > b ? a : b))
}
