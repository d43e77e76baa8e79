// `npm run mutate:contracts`: mutation testing of the contracts (issue 16, point 2). Each mutant below is one exact
// source replacement in contracts/*.sol that removes or breaks a guarantee. For each one: copy the repository's
// sources to a temporary directory (node_modules symlinked), write the mutated .sol there, compile it with the
// pinned solc and the build's own settings, write its artifacts there, and run the contract tests in that copy.
// A mutant is killed when a test file fails; one that passes every contract test SURVIVED, and the run exits 1.
// The real contracts/ is never written. The result table goes to bench/MUTATION.md (its own section only).
//
//   npm run mutate:contracts                      every mutant
//   npm run mutate:contracts -- --only a,b        just those (by name); bench/MUTATION.md is left alone
import { spawn } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import solc from 'solc'
import { type ContractArtifact, type ContractName, abiConstName, compilerSettings, contractNames } from './build.ts'

const root = dirname(dirname(fileURLToPath(import.meta.url)))

/** One mutation: `find` must occur exactly once in `file`; it is replaced by `replace`. */
type Mutant = { name: string; file: ContractName; find: string; replace: string }

const RUNNER_TEST = 'test/runner-contract.test.ts'
const CALIBUR_TEST = 'test/calibur-compatible.test.ts'
const REFUND_TEST = 'test/runner-refund.test.ts'
const ENFORCER_TEST = 'test/payment-first-enforcer.test.ts'
/** The contract tests, the mutated file's own test first (a mutant stops at its first killer). */
const testsFor: Record<ContractName, string[]> = {
  Runner: [RUNNER_TEST, REFUND_TEST, CALIBUR_TEST],
  PayeeVault: [REFUND_TEST, RUNNER_TEST],
  CaliburCompatible: [CALIBUR_TEST, RUNNER_TEST],
  PaymentFirstEnforcer: [ENFORCER_TEST],
}

const R = 'Runner' as const
const C = 'CaliburCompatible' as const
const P = 'PayeeVault' as const
const E = 'PaymentFirstEnforcer' as const
const operatorCheck = 'if (msg.sender != operator && !isOperator[msg.sender]) revert NotOperator();'
const ownerCheck = '        if (msg.sender != owner) revert NotOwner();\n'
const payerCodeCheck = '            if (payer.code.length != 0 && !payerCodeAllowed[payer.codehash]) revert PayerHasCode(payer);\n'
const rwaHead = `        ${operatorCheck}\n        // Kept in memory`
// ERC-6492: the factory's list, its call, the deployed payer's code.
const factoryCheck = '            if (!walletFactoryAllowed[factory]) revert WalletFactoryNotAllowed(factory);\n'
const deployedCheck = '            if (!deployed || payer.code.length == 0) revert PayerNotDeployed(payer);\n'
const deployedCodeCheck = '        if (!payerCodeAllowed[payer.codehash]) revert PayerHasCode(payer);\n        return wrapped;'
const batchHead = `        ${operatorCheck}\n        if (account.codehash`
const rwaSig = '        Authorization calldata authorization,\n        Charge calldata charge\n    ) external returns'
const batchSig = '        uint256 amount,\n        Charge calldata charge\n    ) external returns'
const receivedShort = '        if (received < amount) revert PaymentShort(received, amount);'
const gasShort = '        if (gasleft() < required) revert GasShort(gasleft(), required);'
// relayWithAuthorization's two phases, and the same lines with the call first.
const transferLines = '        relay.received = _payByAuthorization(token, payee, amount, authorization);\n'
const callLines = `        callSucceeded = true;
        if (target != address(0)) (callSucceeded, callGasUsed, reason) = _callWithStipend(target, data, callGas, charge.refundGas);
        else _requireGas(0, charge.refundGas);
`
const paymentThenCall = transferLines + callLines
const callThenPayment = callLines + transferLines
// relayBatch's two calls, and the same with the account's calls first.
const payingSet = '        _paying = account;\n'
const payingCleared = '        _paying = address(0);\n'
const payByBatch = `${payingSet}        relay.received = _payByBatch(batches.target, batches.payment, batches.paymentGas, token, payee, amount);\n${payingCleared}`
const callBatch = '        (callSucceeded, callGasUsed, reason) = _callWithStipend(batches.target, batches.data, callGas, charge.refundGas);\n'
const paymentThenCallBatch = payByBatch + callBatch
const callThenPaymentBatch = callBatch + payByBatch
// The settlement's count of gas, and its price.
const counted = 'uint256 used = charge.baseGas + startGas - gasleft() + SETTLE_TAIL_GAS + charge.refundGas + REASON_WORD_GAS * ((reason.length + 31) / 32);'
const priced = 'uint256 cost = _ceilDiv((used * tx.gasprice + charge.l1FeeWei) * charge.unitsPerEther, 1 ether);'
const marked = 'uint256 priced = _ceilDiv(cost * (10_000 + charge.markupBps), 10_000);'
const vaultGuard = 'if (msg.sender != runner || !IRunnerSettling(runner).settling()) revert NotSettling();'

export const mutants: Mutant[] = [
  // ─── Runner: operator-only ───
  { name: 'operator-check-removed-rwa', file: R, find: rwaHead, replace: rwaHead.replace(/.*NotOperator\(\);\n/, '') },
  { name: 'operator-check-inverted-rwa', file: R, find: rwaHead, replace: rwaHead.replace('!= operator', '== operator') },
  { name: 'operator-check-removed-batch', file: R, find: batchHead, replace: batchHead.replace(/.*NotOperator\(\);\n/, '') },
  { name: 'operator-check-inverted-batch', file: R, find: batchHead, replace: batchHead.replace('!= operator', '== operator') },
  // The further operators (lanes): the set ignored (a lane refused), or opened (anyone outside it relays); the owner's rule.
  { name: 'operator-set-ignored-rwa', file: R, find: rwaHead, replace: rwaHead.replace(' && !isOperator[msg.sender]', '') },
  { name: 'operator-set-open-batch', file: R, find: batchHead, replace: batchHead.replace('!isOperator[msg.sender]', 'isOperator[msg.sender]') },
  { name: 'set-operator-owner-check-removed', file: R, find: `${ownerCheck}        if (who == address(this))`, replace: '        if (who == address(this))' },
  { name: 'set-operator-runner-allowed', file: R, find: '        if (who == address(this)) revert RunnerCannotOperate();\n', replace: '' },
  { name: 'set-operator-always-allows', file: R, find: 'isOperator[who] = allowed;', replace: 'isOperator[who] = true;' },
  // ─── Runner: PayerHasCode, NotDelegated ───
  {
    name: 'payer-has-code-removed',
    file: R,
    find: payerCodeCheck,
    replace: '',
  },
  // The owner's list of payer code: ignored (an allowed wallet refused), open (any code taken), the owner's rule.
  { name: 'payer-code-list-ignored', file: R, find: payerCodeCheck, replace: payerCodeCheck.replace(' && !payerCodeAllowed[payer.codehash]', '') },
  { name: 'payer-code-list-open', file: R, find: payerCodeCheck, replace: payerCodeCheck.replace('!payerCodeAllowed[payer.codehash]', 'false') },
  { name: 'payer-code-list-by-address', file: R, find: payerCodeCheck, replace: payerCodeCheck.replace('payerCodeAllowed[payer.codehash]', 'payerCodeAllowed[bytes32(uint256(uint160(payer)))]') },
  { name: 'set-payer-code-owner-check-removed', file: R, find: `${ownerCheck}        payerCodeAllowed[codehash]`, replace: '        payerCodeAllowed[codehash]' },
  { name: 'set-payer-code-always-allows', file: R, find: 'payerCodeAllowed[codehash] = allowed;', replace: 'payerCodeAllowed[codehash] = true;' },
  {
    name: 'payer-has-code-inverted',
    file: R,
    find: 'if (payer.code.length != 0 &&',
    replace: 'if (payer.code.length == 0 &&',
  },
  // ─── Runner: a wallet's signature (the token's bytes form) and ERC-6492 ───
  { name: 'signed-transfer-entry-uncounted', file: R, find: 'uint256 startGas = gasleft() + SIGNED_TRANSFER_ENTRY_GAS;', replace: 'uint256 startGas = gasleft();' },
  { name: 'wallet-factory-list-ignored', file: R, find: factoryCheck, replace: '' },
  { name: 'wallet-factory-list-open', file: R, find: factoryCheck, replace: factoryCheck.replace('!walletFactoryAllowed[factory]', 'false') },
  // The check's `!deployed` half has no mutant: a factory call that reverted deployed nothing, so the payer, which had no
  // code before it, still has none and `payer.code.length == 0` alone refuses it the same. Its mutant was equivalent (it
  // survived the 2026-12-07 run, bench/MUTATION.md), not a gap in the tests.
  { name: 'wallet-deploy-payer-unchecked', file: R, find: deployedCheck, replace: deployedCheck.replace(' || payer.code.length == 0', '') },
  { name: 'wallet-deployed-code-unlisted', file: R, find: deployedCodeCheck, replace: '        return wrapped;' },
  { name: 'wallet-factory-called-when-deployed', file: R, find: '        if (payer.code.length == 0) {\n', replace: '        if (true) {\n' },
  { name: 'wallet-wrapper-passed-whole', file: R, find: '        return wrapped;', replace: '        return signature;' },
  { name: 'signature-never-bytes-form', file: R, find: '        if (signature.length == 65) {', replace: '        if (true) {' },
  { name: 'signature-always-bytes-form', file: R, find: '        if (signature.length == 65) {', replace: '        if (false) {' },
  { name: 'set-wallet-factory-owner-check-removed', file: R, find: `${ownerCheck}        walletFactoryAllowed[factory]`, replace: '        walletFactoryAllowed[factory]' },
  {
    name: 'not-delegated-removed',
    file: R,
    find: '        if (account.codehash != keccak256(abi.encodePacked(hex"ef0100", delegate))) revert NotDelegated(account, delegate);\n',
    replace: '',
  },
  {
    name: 'not-delegated-inverted',
    file: R,
    find: 'if (account.codehash != keccak256',
    replace: 'if (account.codehash == keccak256',
  },
  {
    name: 'not-delegated-ignores-delegate',
    file: R,
    find: 'if (account.codehash != keccak256(abi.encodePacked(hex"ef0100", delegate)))',
    replace: 'if (account.code.length == 0)',
  },
  // ─── Runner: payment before the call, the payee-balance check ───
  { name: 'payment-after-call-rwa', file: R, find: paymentThenCall, replace: callThenPayment },
  { name: 'payment-short-removed', file: R, find: `${receivedShort}\n`, replace: '' },
  { name: 'payment-short-inverted', file: R, find: 'if (received < amount)', replace: 'if (received >= amount)' },
  { name: 'payment-short-one-unit-lenient', file: R, find: 'if (received < amount)', replace: 'if (received + 1 < amount)' },
  {
    name: 'received-no-underflow-guard',
    file: R,
    find: 'received = balanceAfter > balanceBefore ? balanceAfter - balanceBefore : 0;',
    replace: 'received = balanceAfter - balanceBefore;',
  },
  {
    name: 'received-is-balance-after',
    file: R,
    find: 'received = balanceAfter > balanceBefore ? balanceAfter - balanceBefore : 0;',
    replace: 'received = balanceAfter; balanceBefore;',
  },
  // ─── Runner: the batch's payment phase, a call of its own before the account's calls ───
  { name: 'payment-failure-ignored-batch', file: R, find: '        if (!paid) revert PaymentFailed(paymentReason);\n', replace: '' },
  { name: 'payment-failure-inverted-batch', file: R, find: 'if (!paid) revert PaymentFailed', replace: 'if (paid) revert PaymentFailed' },
  { name: 'payment-after-call-batch', file: R, find: paymentThenCallBatch, replace: callThenPaymentBatch },
  { name: 'payment-gas-unbounded', file: R, find: '_call(target, payment, paymentGas);', replace: '_call(target, payment, gasleft());' },
  { name: 'payment-gas-halved', file: R, find: '_call(target, payment, paymentGas);', replace: '_call(target, payment, paymentGas / 2);' },
  // ─── Runner: the batch's target, where both batches go (the account, or the delegate's entry point) ───
  // paying(): the account during its payment phase only (a payment may run only then, issue 43 point 5).
  { name: 'paying-never-set', file: R, find: payingSet, replace: '' },
  { name: 'paying-not-cleared', file: R, find: payingCleared, replace: '' },
  { name: 'paying-names-target', file: R, find: payingSet, replace: '        _paying = batches.target;\n' },
  { name: 'paying-reads-nothing', file: R, find: '        return _paying;', replace: '        return address(0);' },
  { name: 'payment-to-account', file: R, find: '_payByBatch(batches.target,', replace: '_payByBatch(account,' },
  { name: 'payment-to-delegate', file: R, find: '_payByBatch(batches.target,', replace: '_payByBatch(delegate,' },
  { name: 'call-to-account', file: R, find: '_callWithStipend(batches.target,', replace: '_callWithStipend(account,' },
  { name: 'call-gets-payment', file: R, find: '_callWithStipend(batches.target, batches.data,', replace: '_callWithStipend(batches.target, batches.payment,' },
  {
    name: 'target-checked-as-account',
    file: R,
    find: 'if (account.codehash != keccak256(abi.encodePacked(hex"ef0100", delegate)))',
    replace: 'if (batches.target.codehash != keccak256(abi.encodePacked(hex"ef0100", delegate)))',
  },
  {
    name: 'payment-batch-not-judged',
    file: R,
    find: '        if (!paid) revert PaymentFailed(paymentReason);\n        received = _received(token, payee, balanceBefore, amount);',
    replace: '        paid; paymentReason; received = amount; balanceBefore;',
  },
  // ─── Runner: the stipend, GasShort, SETTLE_GAS ───
  { name: 'gas-short-removed', file: R, find: `${gasShort}\n`, replace: '' },
  { name: 'gas-short-inverted', file: R, find: 'if (gasleft() < required)', replace: 'if (gasleft() >= required)' },
  {
    name: 'gas-short-without-1/64',
    file: R,
    find: 'uint256 required = callGas + callGas / 63 + SETTLE_GAS + refundGas + refundGas / 63;',
    replace: 'uint256 required = callGas + SETTLE_GAS + refundGas + refundGas / 63;',
  },
  {
    name: 'gas-short-without-refund',
    file: R,
    find: 'uint256 required = callGas + callGas / 63 + SETTLE_GAS + refundGas + refundGas / 63;',
    replace: 'uint256 required = callGas + callGas / 63 + SETTLE_GAS;',
  },
  { name: 'gas-short-not-asked-without-call', file: R, find: '        else _requireGas(0, charge.refundGas);\n', replace: '' },
  { name: 'settle-gas-zero', file: R, find: 'SETTLE_GAS = 25_000;', replace: 'SETTLE_GAS = 0;' },
  { name: 'stipend-is-all-gas', file: R, find: 'call(gasLimit, target, 0,', replace: 'call(gas(), target, 0,' },
  { name: 'stipend-halved', file: R, find: 'call(gasLimit, target, 0,', replace: 'call(div(gasLimit, 2), target, 0,' },
  // ─── Runner: the reason cap ───
  { name: 'reason-cap-removed', file: R, find: '            if (size > REASON_BYTES) size = REASON_BYTES;\n', replace: '' },
  { name: 'reason-bytes-128', file: R, find: 'REASON_BYTES = 256;', replace: 'REASON_BYTES = 128;' },
  // ─── Runner: no ETH kept or spent ───
  { name: 'payable-rwa', file: R, find: rwaSig, replace: rwaSig.replace('external returns', 'external payable returns') },
  { name: 'payable-batch', file: R, find: batchSig, replace: batchSig.replace('external returns', 'external payable returns') },
  {
    name: 'receive-added',
    file: R,
    find: '    constructor(address operator_, address owner_) {',
    replace: '    receive() external payable {}\n\n    constructor(address operator_, address owner_) {',
  },
  { name: 'value-forwarded', file: R, find: 'call(gasLimit, target, 0,', replace: 'call(gasLimit, target, selfbalance(),' },
  // ─── Runner: the settlement — the count of gas, its price, the refund (issue 32) ───
  { name: 'settle-base-gas-dropped', file: R, find: counted, replace: counted.replace('charge.baseGas + ', '') },
  { name: 'settle-tail-dropped', file: R, find: counted, replace: counted.replace(' + SETTLE_TAIL_GAS', '') },
  { name: 'settle-refund-gas-dropped', file: R, find: counted, replace: counted.replace(' + charge.refundGas', '') },
  { name: 'settle-reason-dropped', file: R, find: counted, replace: counted.replace(' + REASON_WORD_GAS * ((reason.length + 31) / 32)', '') },
  { name: 'settle-floor-ignored', file: R, find: '            if (used < charge.floorGas) used = charge.floorGas;\n', replace: '' },
  { name: 'settle-basefee-for-gasprice', file: R, find: priced, replace: priced.replace('tx.gasprice', 'block.basefee') },
  { name: 'settle-l1-fee-dropped', file: R, find: priced, replace: priced.replace(' + charge.l1FeeWei', '') },
  { name: 'settle-price-rounded-down', file: R, find: priced, replace: 'uint256 cost = (used * tx.gasprice + charge.l1FeeWei) * charge.unitsPerEther / 1 ether;' },
  { name: 'settle-markup-dropped', file: R, find: marked, replace: 'uint256 priced = cost;' },
  { name: 'settle-markup-rounded-down', file: R, find: marked, replace: 'uint256 priced = cost * (10_000 + charge.markupBps) / 10_000;' },
  { name: 'settle-ceil-off-by-one', file: R, find: 'return a == 0 ? 0 : (a - 1) / b + 1;', replace: 'return a / b + 1;' },
  { name: 'refund-when-cost-exceeds', file: R, find: '            if (priced < relay.received) {', replace: '            if (true) {' },
  { name: 'refund-to-payee', file: R, find: 'abi.encodeCall(IRefunder.refund, (token, payer, amount))', replace: 'abi.encodeCall(IRefunder.refund, (token, payee, amount))' },
  { name: 'refund-all', file: R, find: 'relay.received - priced, charge.refundGas)', replace: 'relay.received, charge.refundGas)' },
  { name: 'refund-answer-ignored', file: R, find: 'return (ok && answer == IRefunder.refund.selector, gasUsed);', replace: 'return (ok, gasUsed);' },
  // The refund's measure, which a simulation reads to set the cap it signs: cold (too high a cap) or the failed one's.
  { name: 'refund-measured-cold', file: R, find: '            mstore(0, balance(payee))\n', replace: '' },
  { name: 'refund-measure-of-failure-kept', file: R, find: '                } else {\n                    refundGasUsed = 0;\n                }\n', replace: '                }\n' },
  { name: 'refund-gas-uncapped', file: R, find: 'ok := call(gasLimit, payee, 0,', replace: 'ok := call(gas(), payee, 0,' },
  { name: 'refund-without-settling', file: R, find: '        _settling = true;\n', replace: '' },
  { name: 'refund-skipped', file: R, find: '        if (charge.refundGas != 0) {', replace: '        if (charge.refundGas == 0) {' },

  // ─── PayeeVault ───
  { name: 'vault-runner-check-removed', file: P, find: vaultGuard, replace: 'if (!IRunnerSettling(runner).settling()) revert NotSettling();' },
  { name: 'vault-settling-check-removed', file: P, find: vaultGuard, replace: 'if (msg.sender != runner) revert NotSettling();' },
  { name: 'vault-owner-check-removed', file: P, find: '        if (msg.sender != owner) revert NotOwner();\n', replace: '' },
  {
    name: 'vault-transfer-unchecked',
    file: P,
    find: '        if (!ok || (answer.length != 0 && (answer.length != 32 || abi.decode(answer, (uint256)) != 1))) revert TransferFailed(token);\n',
    replace: '        ok; answer;\n',
  },
  { name: 'vault-answers-nothing', file: P, find: '        return PayeeVault.refund.selector;', replace: '        return bytes4(0);' },

  // ─── CaliburCompatible ───
  {
    name: 'executor-check-removed',
    file: C,
    find: '        if (executor != address(0) && executor != msg.sender) revert Unauthorized();\n',
    replace: '',
  },
  {
    name: 'deadline-check-removed',
    file: C,
    find: '        if (deadline != 0 && block.timestamp > deadline) revert SignatureExpired();\n',
    replace: '',
  },
  { name: 'nonce-not-incremented', file: C, find: 'nonceSequenceNumber[key]++ != seq', replace: 'nonceSequenceNumber[key] != seq' },
  {
    name: 'nonce-check-removed',
    file: C,
    find: 'if (nonceSequenceNumber[key]++ != seq) revert InvalidNonce();',
    replace: 'nonceSequenceNumber[key]++; seq;',
  },
  { name: 'key-hash-check-removed', file: C, find: '        if (signedBatchedCall.keyHash != ROOT_KEY_HASH) revert KeyDoesNotExist();\n', replace: '' },
  {
    name: 'signature-check-removed',
    file: C,
    find: '            revert InvalidSignature();\n',
    replace: '',
  },
  {
    name: 'revert-on-failure-ignored-never',
    file: C,
    find: 'if (!success && revertOnFailure) revert CallFailed(returndata);',
    replace: 'if (!success && revertOnFailure && false) revert CallFailed(returndata);',
  },
  {
    name: 'revert-on-failure-ignored-always',
    file: C,
    find: 'if (!success && revertOnFailure) revert CallFailed(returndata);',
    replace: 'if (!success) revert CallFailed(returndata); revertOnFailure;',
  },
  {
    name: 'owner-path-unauthorized-removed',
    file: C,
    find: '        if (msg.sender != address(this)) revert Unauthorized();\n        for (uint256 i; i < batchedCall.calls.length',
    replace: '        for (uint256 i; i < batchedCall.calls.length',
  },
  {
    name: 'erc7821-unauthorized-removed',
    file: C,
    find: '        if (msg.sender != address(this)) revert Unauthorized();\n        Call[] memory calls',
    replace: '        Call[] memory calls',
  },
  {
    name: 'erc7821-mode-check-removed',
    file: C,
    find: '        if (!supportsExecutionMode(mode)) revert UnsupportedExecutionMode();\n',
    replace: '',
  },
  {
    name: 'update-salt-unauthorized-removed',
    file: C,
    find: '        if (msg.sender != address(this)) revert Unauthorized();\n        saltPrefix = prefix;',
    replace: '        saltPrefix = prefix;',
  },
  {
    name: 'address-zero-not-self',
    file: C,
    find: '(to == address(0) ? address(this) : to).call',
    replace: 'to.call',
  },
  { name: 'spend-as-calibur-removed', file: C, find: 'SPEND_STEPS_PER_CALL = 17;', replace: 'SPEND_STEPS_PER_CALL = 0;' },
  // ─── PaymentFirstEnforcer: the payment, then the calls, in one transaction, each as hashed, before the deadline ───
  { name: 'enforcer-terms-length-unchecked', file: E, find: '        if (terms.length != 96) revert TermsNotThreeWords();\n', replace: '' },
  { name: 'enforcer-mode-unchecked', file: E, find: '        if (mode != BATCH_MODE) revert NotBatchMode(mode);\n', replace: '' },
  { name: 'enforcer-deadline-unchecked', file: E, find: '        if (block.timestamp > deadline) revert DelegationExpired(deadline);\n', replace: '' },
  { name: 'enforcer-deadline-exclusive', file: E, find: 'if (block.timestamp > deadline)', replace: 'if (block.timestamp >= deadline)' },
  { name: 'enforcer-payment-phase-unchecked', file: E, find: '            if (paying != delegator) revert NotPaymentPhase(paying);\n', replace: '' },
  { name: 'enforcer-payment-hash-unchecked', file: E, find: '            if (redeemed != paymentHash) revert WrongBatch(paymentHash, redeemed);\n', replace: '' },
  { name: 'enforcer-calls-hash-unchecked', file: E, find: '            if (redeemed != callsHash) revert WrongBatch(callsHash, redeemed);\n', replace: '' },
  { name: 'enforcer-same-transaction-unchecked', file: E, find: '            if (_paidNow != delegation) revert NotPaidInThisTransaction();\n', replace: '' },
  { name: 'enforcer-any-payment-in-transaction', file: E, find: 'if (_paidNow != delegation)', replace: 'if (_paidNow == bytes32(0))' },
  { name: 'enforcer-count-not-written', file: E, find: '        redemptions[msg.sender][delegationHash] = count + 1;\n', replace: '' },
  { name: 'enforcer-count-read-unkeyed', file: E, find: 'uint256 count = redemptions[msg.sender][delegationHash];', replace: 'uint256 count = redemptions[address(0)][delegationHash];' },
  { name: 'enforcer-count-written-by-redeemer', file: E, find: '        redemptions[msg.sender][delegationHash] = count + 1;', replace: '        redemptions[tx.origin][delegationHash] = count + 1;' },
  { name: 'enforcer-third-redemption-allowed', file: E, find: '            revert RedeemedTwice();\n', replace: '' },
]

// ─── Compiling given sources with the build's pinned settings ───

type SolcOutput = {
  errors?: { severity: string; formattedMessage: string }[]
  contracts?: Record<string, Record<string, { abi: unknown; evm: { bytecode: { object: string }; deployedBytecode: { object: string } } }>>
}

/**
 * The files `npm run build:contracts` would write for these sources (contracts/artifacts/*.json and contracts/abi.ts),
 * compiled with the same solc and `compilerSettings`. Unlike the build, warnings are allowed (a mutant may leave a
 * variable unused); errors throw.
 */
export function renderArtifactsFor(sources: Record<ContractName, string>): Record<string, string> {
  const input = {
    language: 'Solidity',
    sources: Object.fromEntries(contractNames.map((name) => [`${name}.sol`, { content: sources[name] }])),
    settings: {
      ...compilerSettings,
      outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object', 'evm.deployedBytecode.object'] } },
    },
  }
  const output = JSON.parse(solc.compile(JSON.stringify(input))) as SolcOutput
  const errors = (output.errors ?? []).filter((d) => d.severity === 'error')
  if (errors.length > 0) throw new Error(errors.map((d) => d.formattedMessage).join('\n'))
  const files: Record<string, string> = {}
  const artifacts = {} as Record<ContractName, ContractArtifact>
  for (const name of contractNames) {
    const contract = output.contracts?.[`${name}.sol`]?.[name]
    if (!contract) throw new Error(`solc produced no ${name}`)
    artifacts[name] = {
      contractName: name,
      abi: sortKeys(contract.abi) as ContractArtifact['abi'],
      bytecode: `0x${contract.evm.bytecode.object}`,
      deployedBytecode: `0x${contract.evm.deployedBytecode.object}`,
      solcVersion: solc.version() as string,
      settings: compilerSettings,
    }
    files[`contracts/artifacts/${name}.json`] = `${JSON.stringify(artifacts[name], null, 2)}\n`
  }
  // The ABIs as contracts/abi.ts exports them (a payable mutant changes a stateMutability).
  files['contracts/abi.ts'] = `${contractNames
    .map((name) => `export const ${abiConstName(name)} = ${JSON.stringify(artifacts[name].abi, null, 2)} as const`)
    .join('\n\n')}\n`
  return files
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys)
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(
      Object.entries(value)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([key, inner]) => [key, sortKeys(inner)]),
    )
  return value
}

export function applyMutant(sources: Record<ContractName, string>, mutant: Mutant): Record<ContractName, string> {
  const source = sources[mutant.file]
  const at = source.indexOf(mutant.find)
  if (at < 0) throw new Error(`${mutant.name}: its text is not in ${mutant.file}.sol`)
  if (source.indexOf(mutant.find, at + 1) >= 0) throw new Error(`${mutant.name}: its text occurs more than once in ${mutant.file}.sol`)
  if (mutant.find === mutant.replace) throw new Error(`${mutant.name}: changes nothing`)
  return { ...sources, [mutant.file]: source.slice(0, at) + mutant.replace + source.slice(at + mutant.find.length) }
}

// ─── Running the tests in a temporary copy ───

// What the contract tests import, copied; node_modules is linked.
const copied = ['core', 'contracts', 'test', 'golden', 'config', 'plugins', 'package.json', '.taprc', 'tsconfig.json']

function makeCopy(base: string, name: string): string {
  const dir = join(base, name.replace(/[^a-z0-9-]/gi, '_'))
  mkdirSync(dir)
  for (const entry of copied)
    cpSync(join(root, entry), join(dir, entry), { recursive: true })
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'), 'dir')
  return dir
}

type TestRun = { file: string; passed: boolean; failures: string[]; ms: number }

function runTest(dir: string, file: string): Promise<TestRun> {
  const started = performance.now()
  return new Promise((resolve, reject) => {
    const child = spawn(join(dir, 'node_modules', '.bin', 'tap'), ['--reporter=tap', '--jobs=1', file], {
      cwd: dir,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, FORCE_COLOR: '0', NO_COLOR: '1' },
    })
    let out = ''
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()))
    child.on('error', reject)
    child.on('close', (code) => {
      // The first failing subtest (a file's own t.test, 4 spaces in) and its first telling assertion (deeper in):
      // generic messages ("should be equal") and multi-line error dumps are left out.
      const named = (indent: string) =>
        [...out.matchAll(new RegExp(`^${indent}not ok \\d+ - (.*)$`, 'gm'))]
          .map((m) => m[1]!.replace(/ # .*$/, '').trim())
          .filter((name) => !/^should (not )?be /.test(name))
          .map((name) => (name.length > 110 ? `${name.slice(0, 107)}…` : name))
      const failures = [...named(' {4}').slice(0, 1), ...named(' {8,}').slice(0, 1)]
      resolve({ file, passed: code === 0, failures, ms: performance.now() - started })
    })
  })
}

export type Result = { mutant: Mutant; fate: 'killed' | 'SURVIVED' | 'INVALID'; by?: string; why?: string; ms: number }

async function runMutant(base: string, sources: Record<ContractName, string>, mutant: Mutant): Promise<Result> {
  const started = performance.now()
  let files: Record<string, string>
  let mutated: Record<ContractName, string>
  try {
    mutated = applyMutant(sources, mutant)
    files = renderArtifactsFor(mutated)
  } catch (error) {
    return { mutant, fate: 'INVALID', why: (error as Error).message.split('\n')[0], ms: performance.now() - started }
  }
  const dir = makeCopy(base, mutant.name)
  try {
    writeFileSync(join(dir, 'contracts', `${mutant.file}.sol`), mutated[mutant.file])
    for (const [path, contents] of Object.entries(files)) writeFileSync(join(dir, path), contents)
    for (const file of testsFor[mutant.file]) {
      const run = await runTest(dir, file)
      if (!run.passed)
        return { mutant, fate: 'killed', by: file, why: run.failures.join(' › '), ms: performance.now() - started }
    }
    return { mutant, fate: 'SURVIVED', ms: performance.now() - started }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

async function pool<T, R>(items: T[], width: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length)
  let next = 0
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) {
        const index = next++
        results[index] = await work(items[index]!)
      }
    }),
  )
  return results
}

// ─── The report ───

const escapeCell = (text: string) => text.replaceAll('|', '\\|').replaceAll('\n', ' ')

// The lines a mutation changes (context common to both sides dropped): `old` → `new`, or `old` removed.
function describe({ find, replace }: Mutant): string {
  const a = find.split('\n')
  const b = replace.split('\n')
  while (a.length && b.length && a[0] === b[0]) a.shift(), b.shift()
  while (a.length && b.length && a.at(-1) === b.at(-1)) a.pop(), b.pop()
  const show = (lines: string[]) => {
    const text = lines.map((line) => line.trim()).filter(Boolean)
    return `\`${escapeCell(text[0] ?? '')}${text.length > 1 ? ' …' : ''}\``
  }
  const removed = b.every((line) => line.trim() === '')
  return removed ? `${show(a)} removed` : `${show(a)} → ${show(b)}`
}

export function table(results: Result[]): string {
  const rows = results.map(({ mutant, fate, by, why, ms }) => {
    const outcome = fate === 'killed' ? `killed by \`${by}\`` : `**${fate}**`
    const change = describe(mutant)
    return `| ${mutant.name} | ${mutant.file}.sol | ${change} | ${outcome} | ${escapeCell(why ?? '')} | ${(ms / 1000).toFixed(1)} s |`
  })
  return ['| mutant | file | mutation | fate | first failing assertions | time |', '|---|---|---|---|---|---|', ...rows].join('\n')
}

const HEADING = '## Contract mutants (npm run mutate:contracts)'

export function writeReport(results: Result[], seconds: number) {
  const path = join(root, 'bench', 'MUTATION.md')
  const killed = results.filter((r) => r.fate === 'killed').length
  const section = [
    HEADING,
    '',
    `\`npm run mutate:contracts\` (contracts/mutate.ts) applies each mutation to a temporary copy of contracts/*.sol, ` +
      `compiles it with the pinned solc ${solc.version()} and the build's settings, and runs the contract tests ` +
      `(${RUNNER_TEST}, ${CALIBUR_TEST}; the mutated file's own test first, stopping at the first that fails) ` +
      `against the mutated artifacts, two mutants at a time.`,
    '',
    `Last run: ${new Date().toISOString().slice(0, 10)}, ${results.length} mutants, ${killed} killed, ` +
      `${results.filter((r) => r.fate === 'SURVIVED').length} survived, ${results.filter((r) => r.fate === 'INVALID').length} invalid, ${Math.round(seconds)} s.`,
    '',
    table(results),
    '',
  ].join('\n')
  const existing = existsSync(path) ? readFileSync(path, 'utf8') : '# Mutation testing\n\n'
  const start = existing.indexOf(HEADING)
  let next: string
  if (start < 0) next = `${existing.trimEnd()}\n\n${section}`
  else {
    const end = existing.indexOf('\n## ', start + HEADING.length)
    next = existing.slice(0, start) + section + (end < 0 ? '' : `\n${existing.slice(end + 1)}`)
  }
  writeFileSync(path, next)
  console.log(`wrote bench/MUTATION.md`)
}

async function main() {
  const onlyArg = process.argv.indexOf('--only')
  const only = onlyArg >= 0 ? new Set((process.argv[onlyArg + 1] ?? '').split(',')) : undefined
  const chosen = only ? mutants.filter((m) => only.has(m.name)) : mutants
  if (only && chosen.length !== only.size) throw new Error(`unknown mutant in --only: ${[...only].filter((n) => !mutants.some((m) => m.name === n))}`)
  const names = new Set<string>()
  for (const m of mutants) {
    if (names.has(m.name)) throw new Error(`two mutants named ${m.name}`)
    names.add(m.name)
  }

  const sources = Object.fromEntries(
    contractNames.map((name) => [name, readFileSync(join(root, 'contracts', `${name}.sol`), 'utf8')]),
  ) as Record<ContractName, string>
  // Every mutation must apply to today's sources: a stale one is an error, not a silent skip.
  for (const mutant of chosen) applyMutant(sources, mutant)

  const started = performance.now()
  const base = mkdtempSync(join(tmpdir(), 'bruno-mutate-'))
  try {
    // The unmutated contracts must pass, or every "kill" means nothing.
    const baselineDir = makeCopy(base, 'baseline')
    for (const [path, contents] of Object.entries(renderArtifactsFor(sources))) writeFileSync(join(baselineDir, path), contents)
    const baseline = await pool([RUNNER_TEST, CALIBUR_TEST], 2, (file) => runTest(baselineDir, file))
    for (const run of baseline) {
      console.log(`baseline ${run.file}: ${run.passed ? 'passes' : 'FAILS'} (${(run.ms / 1000).toFixed(1)} s)`)
      if (!run.passed) {
        console.error(`the unmutated contracts fail ${run.file}: ${run.failures.join('; ')}`)
        process.exit(2)
      }
    }
    rmSync(baselineDir, { recursive: true, force: true })

    const results = await pool(chosen, 2, async (mutant) => {
      const result = await runMutant(base, sources, mutant)
      const outcome = result.fate === 'killed' ? `killed by ${result.by}` : result.fate
      console.log(`${mutant.name.padEnd(38)} ${outcome}  (${(result.ms / 1000).toFixed(1)} s)${result.why ? `  ${result.why}` : ''}`)
      return result
    })
    const seconds = (performance.now() - started) / 1000
    console.log(`\n${table(results)}\n`)
    const survivors = results.filter((r) => r.fate !== 'killed')
    console.log(`${results.length} mutants: ${results.length - survivors.length} killed, ${survivors.length} not (${Math.round(seconds)} s)`)
    for (const { mutant, fate } of survivors)
      console.log(`\n${fate}: ${mutant.name} in contracts/${mutant.file}.sol\n--- find:\n${mutant.find}\n--- replace:\n${mutant.replace}`)
    if (!only) writeReport(results, seconds)
    process.exitCode = survivors.length > 0 ? 1 : 0
  } finally {
    rmSync(base, { recursive: true, force: true })
  }
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) await main()
