import t from 'tap'
import { readFile } from 'node:fs/promises'
import { encodeFunctionData, erc20Abi, getAddress, maxUint256, type Address } from 'viem'
import { describeCall, plainText, type KnownChain } from '../../core/ui/describe.ts'
import { reviewOf } from '../../core/ui/review.ts'
import { submissionWords } from '../../core/ui/submission.ts'
import { signPageHtml, viewHtml } from '../../core/ui/pages.ts'
import { delegationTypedData, encodeBatches, paymentFirstDelegation } from '../../plugins/metamask/delegation.ts'

// Issue 47: the words the review view and the signing page show (one function for both), on
// mainnet's addresses; hostile text stays text.

const golden = JSON.parse(await readFile(new URL('../../golden/uniswap.json', import.meta.url), 'utf8'))
const swap = golden.vectors.find((vector: any) => vector.name.endsWith('(mainnet)'))
const USDC = getAddress(swap.input.hops[0].tokenIn)
const WETH = getAddress(swap.input.hops[0].tokenOut)
const ROUTER = getAddress(swap.input.router)
const ACCOUNT = getAddress(swap.input.recipient)
const PAYEE: Address = '0x90F79bf6EB2c4f870365E785982E1f101E93b906'
const known: KnownChain = {
  chain: 'base',
  chainId: 8453,
  payee: PAYEE,
  runner: '0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65',
  weth: WETH,
  swapRouter02: ROUTER,
  markupBps: 500,
  tokens: [{ symbol: 'USDC', address: USDC, decimals: 6 }],
  delegates: [],
}
const transfer = (to: Address, amount: bigint) => encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [to, amount] })

t.test('calls Bruno knows, in words', async (t) => {
  t.same(describeCall(known, swap.calls[0], ACCOUNT), {
    title: 'Swap 100 USDC on Uniswap',
    details: ['unwrapped to ETH (at least 0.032957839505067283 ETH) and paid to 0x709979…79C8 (your account)'],
  }, 'the golden swap: what goes in, the least that comes out, who gets it')
  t.same(describeCall(known, { to: USDC, value: '0', data: transfer(PAYEE, 420_000n) }).title, 'Pay Bruno 0.42 USDC', 'a transfer to the payee')
  t.same(
    describeCall(known, { to: USDC, value: '0', data: encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [ROUTER, maxUint256] }) }).title,
    'Allow 0x68b346…Fc45 (Uniswap SwapRouter02) to spend an unlimited amount of USDC',
    'an unlimited approval says so',
  )
  t.same(describeCall(known, { to: WETH, value: '0', data: '0x2e1a7d4d00000000000000000000000000000000000000000000000000038d7ea4c68000' }).title, 'Unwrap 0.001 WETH to ETH', 'WETH withdraw')
  t.same(describeCall(known, { to: ACCOUNT, value: '10000000000000000', data: '0x' }), { title: 'Send 0.01 ETH', details: ['to 0x709979…79C8'] }, 'plain ETH')
  t.same(
    describeCall(known, { to: '0x000000000000000000000000000000000000dEaD', value: '5', data: '0x12345678aabb' }),
    { title: 'Call 0x000000…dEaD', details: ['function 0x12345678 with 2 bytes of arguments', 'sends 0.000000000000000005 ETH with it'], unknown: true },
    'anything else: the target, the selector, the value',
  )
  t.equal(describeCall(known, { to: USDC, value: '0', data: '0xa9059cbb' }).unknown, true, 'a token call Bruno cannot decode is marked unknown, not guessed')
})

t.test('hostile text: control and bidi characters dropped, long text cut', async (t) => {
  t.equal(plainText('USDC\u202E0001'), 'USDC0001', 'a right-to-left override cannot reorder the amount')
  t.equal(plainText('a\u0000b\u200Bc\u2028d'), 'abcd', 'control, zero-width and line separators dropped')
  t.equal(plainText('x'.repeat(40)), `${'x'.repeat(23)}…`, 'at most 24 characters')
  const hostile: KnownChain = { ...known, tokens: [{ symbol: 'US\u202EDC</script><script>alert(1)</script>', address: USDC, decimals: 6 }] }
  const html = signPageHtml({ chains: [hostile], signPage: 'http://127.0.0.1/sign', mcpPath: '/mcp' })
  t.notMatch(html, /<\/script><script>alert/, 'a configured symbol cannot close the context element')
  const json = /<script type="application\/json" id="bruno-context">(.*?)<\/script>/.exec(html)![1]!
  t.equal(JSON.parse(json).chains[0].tokens[0].symbol, hostile.tokens[0]!.symbol, 'the context still reads back as it was')
  t.equal((await viewHtml('review', { chains: [hostile], signPage: '', mcpPath: '/mcp' })).match(/<\/script>/g)?.length, 2, 'the view has two script elements, closed where they end')
})

t.test('a review is of the typed data, and says what does not add up', async (t) => {
  const domain = { name: 'Calibur', version: '1.0.0', chainId: 8453, verifyingContract: ACCOUNT, salt: `0x${'0'.repeat(64)}` }
  const message = (calls: unknown[]) => ({ batchedCall: { calls, revertOnFailure: true }, nonce: '0', keyHash: `0x${'0'.repeat(64)}`, executor: known.runner, deadline: '1900000000' })
  const result = {
    paymentTypedData: { domain, message: message([{ to: USDC, value: '0', data: transfer(PAYEE, 420_000n) }]) },
    typedData: { domain, message: message(swap.calls) },
    // What the result says of itself is not what the review reads.
    summary: 'pays nothing',
    payment: { symbol: 'FREE', amount: '0' },
  }
  const review = reviewOf('calibur_batch', result, [known], 1_899_999_400)
  t.same(review.problems, [], 'a batch that adds up')
  t.equal(review.payment?.title, 'Pay Bruno at most 0.42 USDC', 'the payment from the signed batch, not from `payment`')
  t.same(review.payment?.details[0], "Bruno keeps what the runner's gas costs plus 5 %", 'the markup, from the deployment')
  t.equal(review.deadline, '2030-03-17T17:46:40Z (in 10 min)', 'the deadline and how far off')
  t.equal(review.chain, 'base (chain id 8453)', 'the chain by name')

  const anyone = reviewOf('calibur_batch', { ...result, typedData: { domain, message: { ...message(swap.calls), executor: '0x0000000000000000000000000000000000000000' } } }, [known], 1_899_999_400)
  t.match(anyone.problems, [/calls batch may be run by 0x000000…0000, not only by Bruno's Runner/], 'a batch anyone may run')
  t.match(reviewOf('calibur_batch', result, [], 0).problems, [/chain id 8453 is not a chain this deployment serves/], 'an unknown chain')
  t.match(reviewOf('erc20_transfer', result, [known], 0).problems, [/not a tool this view reviews/], 'a tool it does not review')
  t.match(reviewOf('calibur_batch', 'x', [known], 0).problems, [/not an object/], 'a result that is not one')
  const toStranger = reviewOf('payment_authorization', { typedData: { domain: { chainId: 8453, verifyingContract: USDC }, message: { from: ACCOUNT, to: ACCOUNT, value: '5', validBefore: '1900000000' } } }, [known], 0)
  t.match(toStranger.problems, [/payment goes to 0x709979…79C8, not to Bruno's payee/], 'a payment authorization to someone else')
})

t.test('a MetaMask delegation is reviewed from its signed hashes: the batches beside it are shown only when they hash to them', async (t) => {
  const leg = { target: USDC, value: 0n, callData: transfer(PAYEE, 420_000n) }
  const calls = [{ target: USDC, value: 0n, callData: transfer(ACCOUNT, 7n) }]
  const delegation = paymentFirstDelegation({ account: ACCOUNT, runner: known.runner, leg, calls, deadline: 1_900_000_000n, salt: 1n })
  const result = { typedData: delegationTypedData(8453, delegation), batches: encodeBatches([leg], calls) }
  const review = reviewOf('metamask_batch', result, [known], 1_899_999_400)
  t.same(review.problems, [], 'a delegation that adds up')
  t.equal(review.payment?.title, 'Pay Bruno at most 0.42 USDC')
  t.equal(review.calls.length, 1)
  t.equal(review.deadline, '2030-03-17T17:46:40Z (in 10 min)', 'the deadline from the signed terms')
  const swapped = reviewOf('metamask_batch', { ...result, batches: encodeBatches([{ ...leg, callData: transfer(ACCOUNT, 420_000n) }], calls) }, [known], 0)
  t.same(swapped.problems, ['the batches beside the delegation are not the ones it signs (their hashes differ)'], 'a payment other than the signed one')
  t.same(swapped.calls, [], 'and nothing of it is shown')
  t.same(reviewOf('metamask_batch', { typedData: result.typedData }, [known], 0).problems, ['the result has no batches beside the delegation'])
  const twoCaveats = { ...result.typedData, message: { ...result.typedData.message, caveats: [...result.typedData.message.caveats, ...result.typedData.message.caveats] } }
  t.same(reviewOf('metamask_batch', { ...result, typedData: twoCaveats }, [known], 0).problems, ["the delegation's caveats are not the one payment-first caveat"])
})

t.test('a submission in words', async (t) => {
  const words = submissionWords({ stage: 'done', transaction: { hash: `0x${'ab'.repeat(32)}`, blockNumber: '7', feeWei: '1000000000000' }, outcome: { paidBaseUnits: '420000', chargedBaseUnits: '120000', refundedBaseUnits: '300000', callSucceeded: false, callReason: 'STF' } }, known, USDC)
  t.same(words, {
    stage: 'done',
    headline: 'Done',
    finished: true,
    lines: ['your calls failed on chain: STF; the payment was still taken', `transaction 0x${'ab'.repeat(32)}`, 'in block 7', 'the runner paid 0.000001 ETH for its gas', 'paid 0.42 USDC: 0.12 USDC kept for the gas, 0.3 USDC sent back'],
  })
  t.same(submissionWords({ stage: 'sending' }, known).finished, false, 'sending is not the end')
  t.match(submissionWords({ stage: 'done', outcome: { paidBaseUnits: '5', callSucceeded: true } }, known).lines, ['your calls ran', 'paid 5 base units of the payment token'], 'without the token, base units')
})
