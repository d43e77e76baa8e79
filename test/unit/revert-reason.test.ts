import t from 'tap'
import { BaseError, CallExecutionError, encodeErrorResult, getAddress, parseAbi, type Hex } from 'viem'
import { describeRevertData, revertReason, runnerRevertReason, type ErrorVocabulary } from '../../core/relay/revertReason.ts'
import { caliburWords } from '../../plugins/calibur/errors.ts'

// Revert data in words (core/relay/revertReason.ts, and Calibur's vocabulary): each error encoded
// here from its Solidity signature (contracts/Runner.sol, CaliburCompatible.sol), not from Bruno's ABI.

const runnerErrors = parseAbi([
  'error NotOperator()',
  'error PayerHasCode(address payer)',
  'error NotDelegated(address account, address delegate)',
  'error PaymentShort(uint256 received, uint256 required)',
  'error GasShort(uint256 available, uint256 required)',
  'error PaymentFailed(bytes reason)',
])
// The Runner's error before the payment batch had a call of its own (no longer raised, nor known).
const retired = parseAbi(['error NotInBatchRelay()'])
const caliburErrorAbi = parseAbi(['error CallFailed(bytes reason)', 'error InvalidSignature()', 'error InvalidNonce()', 'error SignatureExpired()', 'error Unauthorized()', 'error KeyDoesNotExist()'])
const standard = parseAbi(['error Error(string reason)', 'error Panic(uint256 code)'])

/** A delegate's words around a vocabulary of the test's. */
const wordsOf = (errors: ErrorVocabulary) => ({ name: 'Other', tools: { batch: 'other_batch', execute: 'other_execute' }, errors })
const account = getAddress('0x1111111111111111111111111111111111111111')
const delegate = getAddress('0x2222222222222222222222222222222222222222')
const stringError = (reason: string) => encodeErrorResult({ abi: standard, errorName: 'Error', args: [reason] })
const runner = (errorName: (typeof runnerErrors)[number]['name'], args?: readonly unknown[]) => encodeErrorResult({ abi: runnerErrors, errorName, args } as never)
const calibur = (errorName: (typeof caliburErrorAbi)[number]['name'], args?: readonly unknown[]) => encodeErrorResult({ abi: caliburErrorAbi, errorName, args } as never)

t.test("the Runner's errors", async (t) => {
  t.equal(describeRevertData(runner('PaymentShort', [100_000n, 150_000n]), 6, 'USDC'), 'payment short: the payee would receive 0.1 USDC of the 0.15 USDC required')
  t.equal(describeRevertData(runner('PaymentShort', [1n, 2_000_000_000_000_000_000n]), 18, 'WETH'), 'payment short: the payee would receive 0.000000000000000001 WETH of the 2 WETH required')
  const payerHasCode = `the payer ${account} has code (a contract, or an account delegated by EIP-7702) that is not on the Runner's list of wallets that may pay by signed transfer: the token would run it inside the payment. A signed EIP-3009 transfer must come from a plain account or a listed wallet; a delegated account pays with`
  t.equal(describeRevertData(runner('PayerHasCode', [account]), 6, 'USDC', [caliburWords]), `${payerHasCode} a Calibur batch (calibur_batch)`, 'naming the served delegate\'s tool')
  t.equal(describeRevertData(runner('PayerHasCode', [account]), 6, 'USDC'), `${payerHasCode} a delegate batch (no delegate group is enabled on this server)`, 'or that none is served')
  t.equal(
    describeRevertData(runner('NotDelegated', [account, delegate]), 6, 'USDC'),
    `the account ${account} is not delegated to ${delegate}: the batch can only run there (delegate it first, or pass its signed 7702 authorization in authorizationList)`,
  )
  t.equal(describeRevertData(runner('GasShort', [1n, 2n]), 6, 'USDC'), 'the gas limit cannot give the call its whole stipend (GasShort)')
  t.equal(describeRevertData(runner('PaymentFailed', [stringError('ERC20: transfer amount exceeds balance')]), 6, 'USDC'), 'the payment batch failed: the call reverted: ERC20: transfer amount exceeds balance')
  t.equal(describeRevertData(runner('PaymentFailed', ['0x']), 6, 'USDC'), 'the payment batch failed: the call reverted without a reason')
  t.equal(
    describeRevertData(runner('PaymentFailed', [runner('PaymentShort', [1n, 2n])]), 18, 'WETH'),
    'the payment batch failed: payment short: the payee would receive 0.000000000000000001 WETH of the 0.000000000000000002 WETH required',
    'the nested reason keeps the decimals and symbol',
  )
  const notInBatchRelay = encodeErrorResult({ abi: retired, errorName: 'NotInBatchRelay' })
  t.equal(describeRevertData(notInBatchRelay, 6, 'USDC'), `the call reverted with unrecognised data ${notInBatchRelay}`, 'the payment guard\'s error is gone')
  // Met inside a call, NotOperator means the call called the Runner (issue 49, point 5): the client's call, not the operator, is at fault.
  t.equal(describeRevertData(runner('NotOperator'), 6, 'USDC'), "the call calls Bruno's Runner contract, which only its operators may call: a relayed call runs as the Runner and cannot call it")
})

t.test('Error(string), Panic, nothing, and what nothing decodes', async (t) => {
  t.equal(describeRevertData('0x', 6, 'USDC'), 'the call reverted without a reason')
  t.equal(describeRevertData(stringError('ERC20: transfer amount exceeds balance'), 6, 'USDC'), 'the call reverted: ERC20: transfer amount exceeds balance')
  t.equal(describeRevertData(encodeErrorResult({ abi: standard, errorName: 'Panic', args: [0x11n] }), 6, 'USDC'), 'the call panicked (code 17)')
  t.equal(describeRevertData('0xdeadbeef00', 6, 'USDC'), 'the call reverted with unrecognised data 0xdeadbeef')
  t.equal(describeRevertData('0x12345678', 6, 'USDC'), 'the call reverted with unrecognised data 0x12345678')
})

t.test("Uniswap's TransferHelper reasons are explained", async (t) => {
  const stf = (tools: string) =>
    `the call reverted: STF (Uniswap's TransferHelper: safeTransferFrom failed. The router could not take the input token: the account's allowance to the router is missing or short (or its balance is). Approve the router first: ${tools}'s \`approvals\` ({token, spender: the router, amountBaseUnits}, as uniswap_swap_to_eth returns them) adds the approve where it is short, or put erc20_approve's call before the swap)`
  t.equal(describeRevertData(stringError('STF'), 6, 'USDC', [caliburWords]), stf('calibur_batch'), 'naming the served delegate\'s batch tool')
  t.equal(describeRevertData(stringError('STF'), 6, 'USDC'), stf("a delegate group's batch tool"), 'or none')
  t.equal(describeRevertData(stringError('STE'), 6, 'USDC'), "the call reverted: STE (Uniswap's TransferHelper: safeTransferETH failed. The ETH could not be sent to the recipient)")
  t.equal(describeRevertData(stringError('ST'), 6, 'USDC'), "the call reverted: ST (Uniswap's TransferHelper: safeTransfer failed. The router holds too little of the token to send)")
  t.equal(describeRevertData(stringError('SA'), 6, 'USDC'), "the call reverted: SA (Uniswap's TransferHelper: safeApprove failed)")
  // an object's own keys are no reasons (found by this test: `toString` was explained with its function's text)
  t.equal(describeRevertData(stringError('toString'), 6, 'USDC'), 'the call reverted: toString')
  t.equal(describeRevertData(stringError('constructor'), 6, 'USDC'), 'the call reverted: constructor')
})

t.test("a vocabulary's errors: its words first, nested reasons unwrapped, the generic form otherwise", async (t) => {
  const vocabularies = [caliburWords]
  t.equal(describeRevertData(calibur('CallFailed', [stringError('Too little received')]), 6, 'USDC', vocabularies), 'the call reverted: Too little received')
  t.equal(
    describeRevertData(calibur('CallFailed', [calibur('CallFailed', [runner('PaymentShort', [1n, 2n])])]), 6, 'USDC', vocabularies),
    'payment short: the payee would receive 0.000001 USDC of the 0.000002 USDC required',
    'nested twice, with the same decimals and symbol',
  )
  t.equal(describeRevertData(calibur('CallFailed', ['0x']), 6, 'USDC', vocabularies), 'the call reverted without a reason')
  t.equal(
    describeRevertData(runner('PaymentFailed', [calibur('CallFailed', [stringError('FiatToken: transfer amount exceeds balance')])]), 6, 'USDC', vocabularies),
    'the payment batch failed: the call reverted: FiatToken: transfer amount exceeds balance',
    'a payment batch\'s Calibur revert, unwrapped inside PaymentFailed',
  )
  t.equal(
    describeRevertData(runner('PaymentFailed', [calibur('InvalidNonce')]), 6, 'USDC', vocabularies),
    "the payment batch failed: the batch nonce is not the account's current one: it was used already or skips ahead (InvalidNonce)",
  )
  t.equal(describeRevertData(calibur('InvalidSignature'), 6, 'USDC', vocabularies), 'the signature does not recover to the account (InvalidSignature)')
  t.equal(describeRevertData(calibur('InvalidNonce'), 6, 'USDC', vocabularies), "the batch nonce is not the account's current one: it was used already or skips ahead (InvalidNonce)")
  t.equal(describeRevertData(calibur('SignatureExpired'), 6, 'USDC', vocabularies), "the batch's deadline has passed (SignatureExpired)")
  t.equal(describeRevertData(calibur('Unauthorized'), 6, 'USDC', vocabularies), 'the batch names another executor (Unauthorized)')
  // known to the vocabulary's ABI, no words for it: the generic form
  t.equal(describeRevertData(calibur('KeyDoesNotExist'), 6, 'USDC', vocabularies), 'the call reverted with KeyDoesNotExist()')
  // the generic form lists the arguments
  const custom: ErrorVocabulary = { abi: parseAbi(['error Custom(uint256 a, address b)']), describe: () => undefined }
  t.equal(describeRevertData(encodeErrorResult({ abi: custom.abi, errorName: 'Custom', args: [5n, account] }), 6, 'USDC', [wordsOf(custom)]), `the call reverted with Custom(5, ${account})`)
  // without the vocabulary, Calibur's errors are unrecognised
  t.equal(describeRevertData(calibur('InvalidNonce'), 6, 'USDC'), `the call reverted with unrecognised data ${calibur('InvalidNonce').slice(0, 10)}`)
  // a vocabulary's words win over the Runner's own (vocabularies are asked first), and the next is asked when one has none
  const loud: ErrorVocabulary = { abi: [], describe: (name, args) => (name === 'GasShort' ? `loud ${String(args[1])}` : undefined) }
  t.equal(describeRevertData(runner('GasShort', [1n, 2n]), 6, 'USDC', [caliburWords, wordsOf(loud)]), 'loud 2')
})

t.test('revertReason: the revert data viem found, wherever it nests it', async (t) => {
  const data = runner('PaymentShort', [100_000n, 150_000n])
  const nested = new CallExecutionError(new BaseError('execution reverted', { cause: Object.assign(new BaseError('inner'), { data }) }), { account: undefined } as never)
  t.equal(revertReason(nested, 6, 'USDC'), 'payment short: the payee would receive 0.1 USDC of the 0.15 USDC required')
  t.equal(revertReason(Object.assign(new BaseError('top'), { data: stringError('nope') }), 6, 'USDC'), 'the call reverted: nope')
  t.equal(revertReason(Object.assign(new BaseError('calibur'), { data: calibur('InvalidNonce') }), 6, 'USDC', [caliburWords]), "the batch nonce is not the account's current one: it was used already or skips ahead (InvalidNonce)")
  // no revert data: nothing to say
  t.equal(revertReason(new Error('plain'), 6, 'USDC'), undefined, 'not a viem error')
  t.equal(revertReason(new BaseError('no data'), 6, 'USDC'), undefined)
  t.equal(revertReason(Object.assign(new BaseError('not hex'), { data: 'execution reverted' }), 6, 'USDC'), undefined)
  t.equal(revertReason(Object.assign(new BaseError('hex then text'), { data: '0x12zz' }), 6, 'USDC'), undefined)
  t.equal(revertReason(Object.assign(new BaseError('text then hex'), { data: 'x0x12' }), 6, 'USDC'), undefined)
  t.equal(revertReason(Object.assign(new BaseError('an object'), { data: { data: '0x' } }), 6, 'USDC'), undefined)
  t.equal(revertReason(Object.assign(new BaseError('empty'), { data: '0x' }), 6, 'USDC'), 'the call reverted without a reason')
  t.equal(revertReason(Object.assign(new BaseError('upper'), { data: '0xDEADBEEF' as Hex }), 6, 'USDC'), 'the call reverted with unrecognised data 0xDEADBEEF')
})

t.test('runnerRevertReason: a runner transaction reverted by its payment names the payment\'s field (issue 29, point 2)', async (t) => {
  const reverted = (data: Hex) => Object.assign(new BaseError('execution reverted'), { data })
  const signed = (data: Hex) => runnerRevertReason(reverted(data), 'authorization', 6, 'USDC')?.words
  // the token's refusal of the signed transfer, by its words: which field, and how to mend it
  t.equal(
    signed(stringError('FiatTokenV2: invalid signature')),
    "the token refused the payment: FiatTokenV2: invalid signature. payment.signature is not payment.authorization.from's signature of payment.authorization " +
      "(another key signed it, or a field changed after signing): sign payment_authorization's typedData unchanged, with from's own key",
  )
  t.match(signed(stringError('ECRecover: invalid signature')), /^the token refused the payment: ECRecover: invalid signature\. payment\.signature is not /)
  t.match(signed(stringError('FiatTokenV2: authorization is used or canceled')), /\. payment\.authorization\.nonce was used already/)
  t.match(signed(stringError('FiatTokenV2: authorization is not yet valid')), /\. payment\.authorization\.validAfter is still in the future$/)
  t.match(signed(stringError('FiatTokenV2: authorization is expired')), /\. payment\.authorization\.validBefore has passed/)
  t.match(signed(stringError('ERC20: transfer amount exceeds balance')), /\. payment\.authorization\.from holds less than payment\.authorization\.value$/)
  t.match(signed(stringError('Blacklistable: account is blacklisted')), /\. payment\.authorization\.from \(or the payee\) is blacklisted/)
  // words it does not know: the fields to check, and against what
  t.equal(signed(stringError('Pausable: paused')), "the token refused the payment: Pausable: paused. Check payment.authorization and payment.signature against payment_authorization's typedData")
  t.equal(signed('0x'), "the token refused the payment: the call reverted without a reason. Check payment.authorization and payment.signature against payment_authorization's typedData")
  // the Runner's own checks of the payment
  t.equal(signed(runner('PaymentShort', [100_000n, 150_000n])), 'the payment is short (payment.authorization.value): payment short: the payee would receive 0.1 USDC of the 0.15 USDC required')
  t.match(signed(runner('PayerHasCode', [account])), `the payment's payer (payment.authorization.from) cannot pay by signed transfer: the payer ${account} has code`)
  // a batch payment: its batch, and its amount
  const batch = (data: Hex) => runnerRevertReason(reverted(data), 'batch', 6, 'USDC', [caliburWords])?.words
  t.equal(batch(runner('PaymentFailed', [calibur('InvalidSignature')])), 'the payment batch (payment.batch) failed: the signature does not recover to the account (InvalidSignature)')
  t.match(batch(runner('PaymentShort', [1n, 2n])), /^the payment is short \(payment\.amountBaseUnits, as payment\.batch transfers it\): payment short: /)
  // what is not the payment's stays as it was: the account's delegation, the gas, the operator
  t.equal(batch(runner('NotDelegated', [account, delegate])), `the account ${account} is not delegated to ${delegate}: the batch can only run there (delegate it first, or pass its signed 7702 authorization in authorizationList)`)
  t.equal(signed(runner('GasShort', [1n, 2n])), 'the gas limit cannot give the call its whole stipend (GasShort)')
  t.equal(signed(runner('NotOperator')), "the runner is not the Runner contract's operator (a deployment error)", 'the runner transaction itself refused: the operator is at fault')
  t.equal(runnerRevertReason(new BaseError('no data'), 'authorization', 6, 'USDC'), undefined, 'no revert data: nothing to say')
  // which of them the payment caused (what the relay then checks further: the token, the payer's balance)
  const byPayment = (data: Hex, form: 'authorization' | 'batch' = 'authorization') => runnerRevertReason(reverted(data), form, 6, 'USDC', [caliburWords])?.byPayment
  t.same(
    [stringError('x'), runner('PaymentShort', [1n, 2n]), runner('PayerHasCode', [account]), runner('GasShort', [1n, 2n]), runner('NotOperator')].map((data) => byPayment(data)),
    [true, true, true, false, false],
  )
  t.same([runner('PaymentFailed', ['0x']), runner('NotDelegated', [account, delegate])].map((data) => byPayment(data, 'batch')), [true, false])
})
