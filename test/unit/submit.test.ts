import t, { type Test } from 'tap'
import { encodeErrorResult, formatUnits, getAddress, parseAbi, serializeTransaction, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import type { Delegate, BatchTerms } from '../../core/relay/delegate.ts'
import { describeCallFailure } from '../../core/relay/callFailure.ts'
import { STRANGER } from '../../core/relay/paymentPin.ts'
import { relayOfRequest } from '../../core/relay/relayOfRequest.ts'
import type { SubmitRequest } from '../../core/relay/schemas.ts'
import { submitCall } from '../../core/relay/submit.ts'
import { ToolError } from '../../core/tool/tool.ts'
import { networkConfig } from './fakeChain.ts'
import { a, errorString, methods, relayContext, relayWithAuthorizationData, revert, runnerNode, SIGNATURE, type RunnerNodeOptions } from './fakeRunnerNode.ts'
import { fakeDelegate } from '../fixtures/fakeDelegate.ts'

// submitCall (core/relay/submit.ts) and describeCallFailure (callFailure.ts) against a node the
// test answers and a SQLite store in memory: the checks in their order, the exact refusals, what
// is stored. The node's call succeeds using 160,000 gas (a 180,000 stipend) and estimates 300,000
// (a 315,000 limit); at 1,201,000,000 wei per gas the worst case is 378,315,000,000,000 wei, paid
// in WETH (1 wei per unit).

const config = networkConfig()
const runner = getAddress(config.runner.contract)
const payee = getAddress(config.payee)
const weth = getAddress(config.weth)
const operator = a(0x0e0e)
const payer = a(0xfa7e)
const target = a(0xc0de)
const MAX_FEE = 1_201_000_000n
const WORST = 315_000n * MAX_FEE

const nowSec = () => Math.floor(Date.now() / 1000)

function request(overrides: { value?: bigint; validBefore?: string; deadline?: number; nonce?: Hex; data?: Hex } = {}): SubmitRequest {
  return {
    call: { to: target, data: overrides.data ?? '0xabcd' },
    payment: {
      token: weth,
      authorization: {
        from: payer,
        to: payee,
        value: (overrides.value ?? WORST).toString(),
        validAfter: '0',
        validBefore: overrides.validBefore ?? '4000000000',
        nonce: overrides.nonce ?? (`0x${'AB'.repeat(32)}` as Hex),
      },
      signature: SIGNATURE,
    },
    ...(overrides.deadline === undefined ? {} : { deadline: overrides.deadline }),
  }
}

function submitting(options: RunnerNodeOptions = {}, readers?: Delegate[]) {
  const node = runnerNode({ relay: () => ({ callSucceeded: true, callGasUsed: 160_000n }), estimate: () => 300_000n, ...options })
  const relay = relayContext(node, operator, readers)
  t.teardown(() => relay.store.close())
  return { node, ...relay }
}

async function refusal(t: Test, promise: Promise<unknown>, message: string) {
  const error = await promise.then(
    () => undefined,
    (error: unknown) => error,
  )
  t.type(error, ToolError, 'a refusal')
  t.equal((error as Error | undefined)?.message, message)
}

/** A relay whose admission reads the clock at `now` (seconds), half-way through that second. */
function at(now: number, options: RunnerNodeOptions = {}) {
  const relay = submitting(options)
  return { ...relay, context: { ...relay.context, now: () => now * 1000 + 500 } }
}

t.test('accepted: stored waiting with its identity, stipend, payer, client and deadline; the runner woken', async (t) => {
  const { node, context, store, wakes } = submitting()
  const before = Date.now()
  const view = await submitCall(context, request(), '203.0.113.7')
  const after = Date.now()
  t.equal(wakes(), 1)
  t.match(view, { chain: 'local', stage: 'waiting' })
  t.ok(view.createdAt >= before && view.createdAt <= after)
  t.equal(view.updatedAt, view.createdAt)
  t.ok(view.deadline >= Math.floor(before / 1000) + 600 && view.deadline <= Math.floor(after / 1000) + 600, 'the default deadline: now + relay.submissionTtlSec')
  t.strictSame(Object.keys(view).sort(), ['chain', 'createdAt', 'deadline', 'id', 'stage', 'updatedAt'])
  const stored = (await store.get(view.id))!
  t.match(stored, {
    id: view.id,
    chain: 'local',
    stage: 'waiting',
    deadline: view.deadline,
    identity: `3009:local:${weth}:${payer}:0x${'ab'.repeat(32)}`,
    callGas: '180000',
    payer,
    client: '203.0.113.7',
  })
  t.strictSame(stored.request, request())
  // simulated as it will be sent: the stipend, the payment, nonce-free
  t.equal(node.runnerRequests.at(-1)!.data.toLowerCase(), relayWithAuthorizationData({ to: target, data: '0xabcd' }, 180_000n, { token: weth, from: payer, value: WORST, validAfter: 0n, validBefore: 4_000_000_000n, nonce: `0x${'ab'.repeat(32)}`, signature: SIGNATURE }, payee).toLowerCase(), 'the calldata (hex in any case)')

  // without a client: none stored
  const other = submitting()
  const alone = await submitCall(other.context, request())
  t.notOk('client' in (await other.store.get(alone.id))!)
})

t.test('a payment token named by its symbol (any case) is taken, and stored by its address (issue 29, point 4)', async (t) => {
  const { context, store } = submitting()
  const named = request()
  const view = await submitCall(context, { ...named, payment: { ...named.payment, token: 'weth' } })
  const stored = (await store.get(view.id))!
  t.strictSame(stored.request, request(), 'the same request as with the address')
  t.equal(stored.identity, `3009:local:${weth}:${payer}:0x${'ab'.repeat(32)}`)
  await refusal(t, submitCall(context, { ...named, payment: { ...named.payment, token: 'DOGE' } }), 'unknown token "DOGE" on local: neither a configured symbol (USDC, WETH) nor a token address')
})

t.test('the same payment again: the active submission answers, nothing is read or stored', async (t) => {
  const { node, context, wakes } = submitting()
  const first = await submitCall(context, request())
  const asked = node.seen.length
  const again = await submitCall(context, request({ deadline: 1 }), 'someone')
  t.strictSame(again, first)
  t.equal(node.seen.length, asked, 'no chain read')
  t.equal(wakes(), 1)
  // the same payment with its nonce in another case is the same payment
  t.equal((await submitCall(context, request({ nonce: `0x${'ab'.repeat(32)}` }))).id, first.id)
  // another nonce is another payment
  t.not((await submitCall(context, request({ nonce: `0x${'cd'.repeat(32)}` }))).id, first.id)
})

t.test('two submits of one payment at once: one is stored, both answer it, the runner is woken once', async (t) => {
  const { context, wakes } = submitting()
  const [one, two] = await Promise.all([submitCall(context, request()), submitCall(context, request())])
  t.equal(one.id, two.id)
  t.equal(wakes(), 1)
})

t.test('two submits of one payment at once with different calls: one is stored, the other is refused naming it (issue 43, point 10)', async (t) => {
  const { wakes, ...relay } = submitting()
  // One client: the second is not answered with the first's check, nor with what the first stored.
  const context = { ...relay.context, checking: new Map() }
  const settled = await Promise.allSettled([submitCall(context, request(), 'a'), submitCall(context, request({ data: '0xabce' }), 'a')])
  const stored = settled.find((result) => result.status === 'fulfilled')
  const refused = settled.find((result) => result.status === 'rejected')
  if (!stored || !refused) return t.fail(`one stored, one refused: ${JSON.stringify(settled.map((result) => result.status))}`)
  t.type(refused.reason, ToolError)
  t.match((refused.reason as Error).message, new RegExp(`^refused: the payment's nonce \\(3009:local:${weth}:${payer}:0x${'ab'.repeat(32)}\\) is already being spent \\(waiting\\) by the submission ${stored.value.id} with another call: `))
  t.equal(wakes(), 1)
})

t.test('the payer’s standing is judged before anything is read', async (t) => {
  const { node, context, store } = submitting()
  for (let index = 0; index < 8; index++) {
    await store.insert({ id: `a${index}`, chain: 'local', stage: 'waiting', createdAt: 1, updatedAt: 1, deadline: 1, request: {} as never, identity: `a${index}`, payer })
  }
  await refusal(t, submitCall(context, request()), `refused: the account ${payer} has 8 active submissions, the most it may have: wait for one to be done or failed`)
  t.strictSame(node.seen, [])
})

t.test('the deadline: ahead, and within relay.submissionTtlSec', async (t) => {
  const now = nowSec()
  const deadlineRefusal = async (deadline: number) => {
    const { context, node } = at(now)
    await refusal(t, submitCall(context, request({ deadline })), deadline <= now ? `the deadline ${deadline} has passed (now ${now})` : `the deadline ${deadline} is more than 600 s away (now ${now}), longer than this relay holds a submission: give one within 600 s, or none`)
    t.strictSame(node.seen, [], 'refused before the chain is asked')
  }
  await deadlineRefusal(now - 5)
  // now itself has passed
  await deadlineRefusal(now)
  // a second ahead is fine, so is exactly the ttl; one more second is not
  t.equal((await submitCall(at(now).context, request({ deadline: now + 1 }))).deadline, now + 1)
  t.equal((await submitCall(at(now).context, request({ deadline: now + 600 }))).deadline, now + 600)
  await deadlineRefusal(now + 601)
})

t.test('the payment must stay valid relay.paymentMarginSec (30 s) + relay.inclusionSec (30 s) more', async (t) => {
  const now = nowSec()
  const { context, node } = at(now)
  await refusal(t, submitCall(context, request({ validBefore: String(now + 59) })), `the payment expires at ${now + 59} (now ${now}), too soon to send it safely: it must be valid at least 60 s more; sign a new one`)
  t.strictSame(node.seen, [])
  t.equal((await submitCall(at(now).context, request({ validBefore: String(now + 60) }))).stage, 'waiting')
})

t.test('the signed transaction’s size: at relay.maxTransactionBytes it is accepted, one byte over it is refused', async (t) => {
  const data = `0x${'ee'.repeat(5_000)}` as Hex
  // the stipend for 160,000 used, the limit for an estimate of 300,000
  const unsigned = serializeTransaction({
    chainId: 31337,
    type: 'eip1559',
    to: runner,
    data: relayWithAuthorizationData({ to: target, data }, 180_000n, { token: weth, from: payer, value: WORST, validAfter: 0n, validBefore: 4_000_000_000n, nonce: `0x${'ab'.repeat(32)}`, signature: SIGNATURE }, payee),
    gas: 315_000n,
    nonce: 0xffffffff,
    value: 0n,
    maxFeePerGas: MAX_FEE,
    maxPriorityFeePerGas: 1_000_000n,
  })
  const bytes = (unsigned.length - 2) / 2 + 67
  const sized = (maxTransactionBytes: number) => submitting({ config: networkConfig({ relay: { ...config.relay, maxTransactionBytes } }), eoaNonce: 0 }).context
  t.equal((await submitCall(sized(bytes), request({ data }))).stage, 'waiting')
  await refusal(t, submitCall(sized(bytes - 1), request({ data })), `refused: the runner's transaction would be ${bytes} bytes, over the ${bytes - 1} a node accepts: make the call's data smaller`)

  // with an authorization list (the called account's own): sized as the EIP-7702 transaction it will be
  const account = privateKeyToAccount('0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a')
  const { r, s, yParity } = await account.signAuthorization({ contractAddress: a(0xca1), chainId: 31337, nonce: 0 })
  const accountCall = { to: account.address, data }
  const withList = { ...request({ data }), call: accountCall, authorizationList: [{ chainId: 31337, address: a(0xca1), nonce: 0, r, s, yParity: yParity as 0 | 1 }] }
  const bytes7702 =
    (serializeTransaction({
      chainId: 31337,
      type: 'eip7702',
      to: runner,
      data: relayWithAuthorizationData(accountCall, 180_000n, { token: weth, from: payer, value: WORST, validAfter: 0n, validBefore: 4_000_000_000n, nonce: `0x${'ab'.repeat(32)}`, signature: SIGNATURE }, payee),
      gas: 315_000n,
      nonce: 0xffffffff,
      value: 0n,
      maxFeePerGas: MAX_FEE,
      maxPriorityFeePerGas: 1_000_000n,
      authorizationList: [{ address: a(0xca1), chainId: 31337, nonce: 0, r, s, yParity: yParity as 0 | 1 }],
    }).length -
      2) /
      2 +
    67
  t.equal((await submitCall(sized(bytes7702), withList)).stage, 'waiting')
  await refusal(t, submitCall(sized(bytes7702 - 1), withList), `refused: the runner's transaction would be ${bytes7702} bytes, over the ${bytes7702 - 1} a node accepts: make the call's data smaller`)
})

t.test('the payment must cover the worst case: one base unit short is refused, with the figures', async (t) => {
  t.equal((await submitCall(submitting().context, request({ value: WORST }))).stage, 'waiting')
  await refusal(
    t,
    submitCall(submitting().context, request({ value: WORST - 1n })),
    `refused: the payment of ${formatUnits(WORST - 1n, 18)} WETH is below the most the runner could pay for it now, ${formatUnits(WORST, 18)} WETH (315000 gas at up to 1201000000 wei): quote again and pay the quoted amount`,
  )
  // OP-stack: the L1 data fee is named (1,000 from the oracle, 1,250 with its headroom)
  const op = (value: bigint) => submitCall(submitting({ config: networkConfig({ l1DataFee: 'op-stack' }), l1Fee: 1_000n }).context, request({ value }))
  t.equal((await op(WORST + 1_250n)).stage, 'waiting')
  await refusal(
    t,
    op(WORST + 1_249n),
    `refused: the payment of ${formatUnits(WORST + 1_249n, 18)} WETH is below the most the runner could pay for it now, ${formatUnits(WORST + 1_250n, 18)} WETH (315000 gas at up to 1201000000 wei plus an L1 data fee of 1250 wei): quote again and pay the quoted amount`,
  )
})

t.test('a transfer to someone else than the payee is refused before anything is read', async (t) => {
  const { context, node } = submitting()
  const wrong = request()
  const payment = { ...wrong.payment, authorization: { ...(wrong.payment as { authorization: Record<string, string> }).authorization, to: a(0xbad) } }
  await refusal(t, submitCall(context, { ...wrong, payment } as SubmitRequest), `the signed transfer pays ${a(0xbad)}, not the payee ${payee}: sign a transfer to the payee (payment_authorization prepares it)`)
  t.strictSame(node.seen, [])
  await refusal(t, submitCall(context, { ...request(), payment: { ...request().payment, token: 'DAI' } } as SubmitRequest), 'unknown token "DAI" on local: neither a configured symbol (USDC, WETH) nor a token address')
})

// A delegate batch whose own calls revert where the Runner cannot see why: the replay says it.
const account = a(0xacc)
const batchData = '0xc3c16ee4beef' as Hex
const paymentBatch = '0xc3c16ee4f00d' as Hex
const terms: BatchTerms = {
  account,
  delegate: a(0xde1e),
  target: account,
  paymentData: paymentBatch,
  paymentGas: 150_000n,
  token: weth,
  payee,
  amount: WORST,
  deadline: 0n,
  identity: 'calibur:local:acc:1',
  ownCalls: { from: account, to: account, data: '0x12345678' },
}
const reader: Delegate = fakeDelegate({
  errors: { abi: [], describe: () => undefined },
  read: (_network, call, payment) => (call.data.startsWith('0xc3c16ee4') && payment === paymentBatch ? terms : undefined),
})
const batchRequest: SubmitRequest = { call: { to: account, data: batchData }, payment: { token: weth, amountBaseUnits: WORST.toString(), batch: paymentBatch } }

t.test('a batch whose call fails without data: refused with the replay of its own calls at latest', async (t) => {
  const replays: unknown[][] = []
  const { context, node } = submitting(
    {
      relay: () => ({ callSucceeded: false, callGasUsed: 1n }),
      otherCall: ({ params }) => {
        replays.push([...params])
        return revert(errorString('Too little received'))
      },
    },
    [reader],
  )
  await refusal(
    t,
    submitCall(context, batchRequest),
    'refused: the call fails in simulation even with 15000000 gas: the call reverted: Too little received. Nothing was sent. A call that fails on chain still pays, so Bruno only sends calls that succeed in simulation',
  )
  t.equal(replays.length, 1)
  const replayed = replays[0]![0] as { from: string; to: string; data: string }
  t.strictSame([getAddress(replayed.from), getAddress(replayed.to), replayed.data], [account, account, '0x12345678'])
  t.equal(replays[0]![1], 'latest')
  t.notOk(methods(node.seen).includes('eth_estimateGas'))

  // a batch's deadline counts as the payment's: 0 is none; one too close is refused
  const accepted = submitting({}, [reader])
  t.equal((await submitCall(accepted.context, batchRequest)).stage, 'waiting')
  // the runner's simulations ran the payment batch (capped at its paymentGas) before the calls' batch
  t.ok(accepted.node.runnerRequests.length > 0)
  const batches = { target: account, payment: paymentBatch, paymentGas: 150_000n, data: batchData }
  for (const request of accepted.node.runnerRequests) t.match(request, { functionName: 'relayBatch', args: [account, a(0xde1e), batches] })
  const soon = { ...terms, deadline: BigInt(nowSec() + 5) }
  const soonReader: Delegate = { ...reader, read: () => soon }
  const error = await submitCall(submitting({}, [soonReader]).context, batchRequest).then(() => new Error('accepted'), (error: unknown) => error as Error)
  t.match(error.message, new RegExp(`^the payment expires at ${soon.deadline} \\(now \\d+\\), too soon to send it safely`))
})

t.test('a payment batch a stranger can run is refused, nothing stored; the check sends it as the stranger, the account delegated (issue 43, point 5)', async (t) => {
  const { context, node, store } = submitting({ paymentRunsForAnyone: true }, [reader])
  const name = fakeDelegate({ errors: { abi: [], describe: () => undefined }, read: () => undefined }).name
  await refusal(
    t,
    submitCall(context, batchRequest),
    `refused: the ${name} payment batch of ${account} can be run by anyone, not only by Bruno's Runner: whoever holds it could run it first (the payee would keep the payment, your calls would not run, and the relay would fail). Nothing was sent; sign a payment batch that only the Runner can run, as ${reader.tools.batch} builds it`,
  )
  t.strictSame(await store.active('local'), [], 'nothing stored')
  const asked = node.seen.filter((request) => request.method === 'eth_call' && (request.params[0] as { from?: string }).from?.toLowerCase() === STRANGER.toLowerCase())
  t.equal(asked.length, 1)
  t.match(asked[0]!.params, [{ to: account, data: paymentBatch }, 'latest', { [account]: { code: `0xef0100${a(0xde1e).slice(2).toLowerCase()}` } }])
  // the same batch, reverting when a stranger sends it (pinned): accepted
  t.equal((await submitCall(submitting({}, [reader]).context, batchRequest)).stage, 'waiting')
})

t.test('describeCallFailure: the replay at latest or at a block, its reason, or nothing', async (t) => {
  const replays: unknown[][] = []
  let answer: () => unknown = () => revert(errorString('Too little received'))
  const { context, node } = submitting({
    otherCall: ({ params }) => {
      replays.push([...params])
      return answer()
    },
  })
  const token = { address: weth, symbol: 'WETH', decimals: 18 }
  const requested = relayOfRequest({ ...context, delegates: [reader] }, batchRequest.call, batchRequest.payment, token)
  t.match(requested.relay, { form: 'batch', paymentData: paymentBatch, paymentGas: 150_000n, data: batchData }, 'the payment\'s batch is the relay\'s payment phase')
  t.equal(await describeCallFailure(context, requested, token), 'the call reverted: Too little received')
  t.equal(replays.at(-1)![1], 'latest')
  t.equal(await describeCallFailure(context, requested, token, 77n), 'the call reverted: Too little received')
  t.equal(replays.at(-1)![1], '0x4d', 'at the block given')
  // a delegate's own error, in its group's words
  const abi = parseAbi(['error TooLittle(uint256 got)'])
  const worded = { ...reader, errors: { abi, describe: (name: string, args: readonly unknown[]) => (name === 'TooLittle' ? `too little: ${String(args[0])}` : undefined) } }
  answer = () => revert(encodeErrorResult({ abi, errorName: 'TooLittle', args: [5n] }))
  t.equal(await describeCallFailure({ ...context, delegates: [worded] }, requested, token), 'too little: 5')
  answer = () => '0x'
  t.equal(await describeCallFailure(context, requested, token), undefined, 'the replay passes: nothing to say')
  answer = () => {
    throw Object.assign(new Error('header not found'), { code: -32000 })
  }
  t.equal(await describeCallFailure(context, requested, token), undefined, 'no revert data: nothing to say')
  // a signed transfer has no own calls: nothing replayed
  const asked = node.seen.length
  t.equal(await describeCallFailure(context, relayOfRequest(context, request().call, request().payment, token), token), undefined)
  t.equal(node.seen.length, asked)
})

t.test('one payment submitted again while it is checked: the same client shares the first answer (one simulation); another client checks its own', async (t) => {
  const { node, ...relay } = submitting()
  const context = { ...relay.context, checking: new Map() }
  const simulations = () => node.seen.filter((seen) => seen.method === 'eth_call' || seen.method === 'eth_estimateGas').length
  const [first, again] = await Promise.all([submitCall(context, request({ nonce: `0x${'c1'.repeat(32)}` }), 'a'), submitCall(context, request({ nonce: `0x${'c1'.repeat(32)}` }), 'a')])
  t.equal(again.id, first.id, 'one submission')
  const once = simulations()
  t.ok(once > 0, `${once} simulations for both`)
  t.equal(context.checking.size, 0, 'nothing left in the map once answered')
  const before = simulations()
  const alone = await submitCall(context, request({ nonce: `0x${'c2'.repeat(32)}` }), 'a')
  t.equal(simulations() - before, once, 'one submit alone makes as many')
  const [mine, theirs] = await Promise.all([submitCall(context, request({ nonce: `0x${'c3'.repeat(32)}` }), 'a'), submitCall(context, request({ nonce: `0x${'c3'.repeat(32)}` }), 'b')])
  t.equal(theirs.id, mine.id, 'another client: the store still stores one')
  t.equal(simulations() - before - once, 2 * once, 'but each client checked its own')
  t.not(alone.id, first.id)
})

t.test('a retry of an active payment gets its submission back, even once its payer is at its cap, throttled or banned', async (t) => {
  const { context, store } = submitting()
  const fence = await store.takeRunnerKey('unit')
  const first = await submitCall(context, request({ nonce: `0x${'d1'.repeat(32)}` }), 'c')
  const others = (count: number, stage: 'waiting' | 'failed') =>
    Promise.all(
      Array.from({ length: count }, async (_, index) => {
        const id = `${stage}-${index}-${Math.random()}`
        await store.insert({ id, chain: first.chain, stage: 'waiting', createdAt: Date.now(), updatedAt: Date.now(), deadline: first.deadline, request: request(), identity: id, payer, client: 'c' })
        if (stage === 'failed') await store.update(id, { stage: 'failed', fault: 'payer' }, fence)
      }),
    )
  const again = async (label: string, refusedAs: RegExp) => {
    const fresh = await submitCall(context, request({ nonce: `0x${'d2'.repeat(32)}` }), 'c').then(
      () => 'accepted',
      (error: Error) => error.message,
    )
    t.match(fresh, refusedAs, `${label}: a new payment of the payer is refused`)
    t.equal((await submitCall(context, request({ nonce: `0x${'d1'.repeat(32)}` }), 'c')).id, first.id, `${label}: the retry gets its submission back`)
  }
  await others(7, 'waiting')
  await again('at its cap of 8', /has 8 active submissions, the most it may have/)
  await others(2, 'failed')
  await again('throttled (2 faults)', /while throttled/)
  await others(3, 'failed')
  await again('banned (5 faults)', /is refused until/)
})
