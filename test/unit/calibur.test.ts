import { readFileSync } from 'node:fs'
import t from 'tap'
import { encodeAbiParameters, encodeFunctionData, erc20Abi, getAddress, maxUint256, parseAbi, toFunctionSelector, zeroAddress, zeroHash, type Address, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { paymentToken } from '../../core/relay/paymentToken.ts'
import { ToolError } from '../../core/tool/tool.ts'
import type { PaymentServices } from '../../core/services.ts'
import { encodeOwnerExecute, encodeSignedExecute, recoverCaliburSigner, wrapCaliburSignature } from '../../plugins/calibur/executeCalldata.ts'
import { caliburNonce, splitCaliburNonce } from '../../plugins/calibur/nonce.ts'
import { CALIBUR_PAYMENT_GAS, caliburDelegate, ownCallsBatch, paymentBatch, readPaymentBatch, requireInOrder } from '../../plugins/calibur/paymentFirstBatch.ts'
import {
  caliburDomainFromEip712Domain,
  caliburTypedData,
  uint256Of,
  type CaliburBatch,
  type CaliburCall,
  type CaliburTypedDataParameters,
  type Eip712DomainResult,
} from '../../plugins/calibur/typedData.ts'
import { fakeClient, fakeNetwork, networkConfig } from './fakeChain.ts'
import { CALIBUR_ADDRESS } from '../../plugins/calibur/networkOptions.ts'

// plugins/calibur without a chain: the encoders against the real Calibur vector (golden/calibur-vectors.json,
// accepted on chain by Uniswap's Calibur), the two batches (payment only, then the account's calls) built
// and read back, and every refusal. Calibur's functions are encoded here from their Solidity signatures, not from our ABI.

const vector = (JSON.parse(readFileSync(new URL('../../golden/calibur-vectors.json', import.meta.url), 'utf8')) as { vectors: Record<string, never>[] }).vectors[0] as unknown as {
  chainId: number
  account: Address
  signerPrivateKey: Hex
  batchedCall: CaliburTypedDataParameters['batch']
  nonce: { value: string; key: string; seq: string }
  keyHash: Hex
  executor: Address
  deadline: string
  typedData: { domain: { salt: Hex } } & Record<string, unknown>
  signature: Hex
  hookData: Hex
  wrappedSignature: Hex
  executeCalldata: Hex
  gas: { ownerPath: { calldata: Hex } }
}
const vectorParameters: CaliburTypedDataParameters = {
  domain: { chainId: vector.chainId, account: vector.account, salt: vector.typedData.domain.salt },
  batch: vector.batchedCall,
  nonce: BigInt(vector.nonce.value),
  deadline: BigInt(vector.deadline),
  executor: vector.executor,
  keyHash: vector.keyHash,
}

const caliburFunctions = parseAbi([
  'struct Call { address to; uint256 value; bytes data; }',
  'struct BatchedCall { Call[] calls; bool revertOnFailure; }',
  'struct SignedBatchedCall { BatchedCall batchedCall; uint256 nonce; bytes32 keyHash; address executor; uint256 deadline; }',
  'function execute(BatchedCall batchedCall)',
  'function execute(SignedBatchedCall signedBatchedCall, bytes wrappedSignature)',
])

t.test('the real Calibur vector: typed data, signature, wrapped signature and both execute calldatas', async (t) => {
  const typedData = caliburTypedData(vectorParameters)
  t.strictSame(typedData, vector.typedData)
  const signer = privateKeyToAccount(vector.signerPrivateKey)
  t.equal(await signer.signTypedData(typedData), vector.signature)
  t.equal(await recoverCaliburSigner(typedData, vector.signature), vector.account)
  t.equal(wrapCaliburSignature(vector.signature, vector.hookData), vector.wrappedSignature)
  t.equal(wrapCaliburSignature(vector.signature), vector.wrappedSignature, 'hookData defaults to none')
  t.equal(encodeSignedExecute({ message: typedData.message, signature: vector.signature }), vector.executeCalldata)
  t.equal(encodeOwnerExecute(typedData.message.batchedCall), vector.gas.ownerPath.calldata)
  t.equal(vector.executeCalldata.slice(0, 10), '0xc3c16ee4')
  t.equal(vector.gas.ownerPath.calldata.slice(0, 10), '0x99e1d016')
})

t.test('caliburTypedData: defaults, normalization, and each refusal with its words', async (t) => {
  const plain = caliburTypedData({ domain: vectorParameters.domain, batch: { calls: [], revertOnFailure: false }, nonce: 0n, deadline: 0n })
  t.equal(plain.message.executor, zeroAddress)
  t.equal(plain.message.keyHash, zeroHash)
  t.equal(plain.message.batchedCall.revertOnFailure, false)
  t.same(plain.domain, { name: 'Calibur', version: '1.0.0', chainId: vector.chainId, verifyingContract: vector.account, salt: vector.typedData.domain.salt })
  t.equal(plain.primaryType, 'SignedBatchedCall')
  const call = { to: '0x1111111111111111111111111111111111111111', value: '0', data: '0x' }
  const withCall = (overrides: Partial<typeof call>) => ({ ...vectorParameters, batch: { calls: [call, { ...call, ...overrides }], revertOnFailure: true } })
  const refuses = (parameters: CaliburTypedDataParameters, message: string) => t.throws(() => caliburTypedData(parameters), new ToolError(message), message)
  refuses(withCall({ value: '0x10' }), 'calls[1].value "0x10" is not a uint256 in decimal digits')
  refuses(withCall({ value: '' }), 'calls[1].value "" is not a uint256 in decimal digits')
  refuses(withCall({ value: ' 1' }), 'calls[1].value " 1" is not a uint256 in decimal digits')
  refuses(withCall({ value: '1 ' }), 'calls[1].value "1 " is not a uint256 in decimal digits')
  refuses(withCall({ value: '1'.repeat(79) }), `calls[1].value "${'1'.repeat(79)}" is not a uint256 in decimal digits`)
  refuses(withCall({ value: (maxUint256 + 1n).toString() }), `calls[1].value ${maxUint256 + 1n} is out of the uint256 range`)
  refuses(withCall({ to: '0xe7f1725e7734ce288f8367e1bb143e90bb3F0512' }), 'calls[1].to "0xe7f1725e7734ce288f8367e1bb143e90bb3F0512" is not an address (or its EIP-55 checksum is wrong)')
  refuses(withCall({ data: '0x123' }), 'calls[1].data is not 0x-prefixed whole bytes')
  refuses(withCall({ data: '1234' }), 'calls[1].data is not 0x-prefixed whole bytes')
  refuses({ ...vectorParameters, domain: { ...vectorParameters.domain, salt: '0x1234' } }, 'domain.salt is 2 bytes, not 32')
  refuses({ ...vectorParameters, domain: { ...vectorParameters.domain, account: '0x1234' as Address } }, 'domain.account "0x1234" is not an address (or its EIP-55 checksum is wrong)')
  refuses({ ...vectorParameters, domain: { ...vectorParameters.domain, chainId: 0 } }, 'chainId 0 is not a positive integer')
  refuses({ ...vectorParameters, domain: { ...vectorParameters.domain, chainId: -1 } }, 'chainId -1 is not a positive integer')
  refuses({ ...vectorParameters, domain: { ...vectorParameters.domain, chainId: 1.5 } }, 'chainId 1.5 is not a positive integer')
  refuses({ ...vectorParameters, domain: { ...vectorParameters.domain, chainId: 2 ** 53 } }, `chainId ${2 ** 53} is not a positive integer`)
  refuses({ ...vectorParameters, deadline: -1n }, 'deadline -1 is out of the uint256 range')
  refuses({ ...vectorParameters, nonce: maxUint256 + 1n }, `nonce ${maxUint256 + 1n} is out of the uint256 range`)
  refuses({ ...vectorParameters, keyHash: '0x12' }, 'keyHash is 1 bytes, not 32')
  refuses({ ...vectorParameters, executor: '0xzz' as Address }, 'executor "0xzz" is not an address (or its EIP-55 checksum is wrong)')
  t.equal(caliburTypedData({ ...vectorParameters, domain: { ...vectorParameters.domain, chainId: 1 } }).domain.chainId, 1)
  // the edges that are accepted
  t.equal(uint256Of('0', 'x'), '0')
  t.equal(uint256Of('007', 'x'), '7')
  t.equal(uint256Of(maxUint256.toString(), 'x'), maxUint256.toString())
  t.equal(uint256Of(maxUint256, 'x'), maxUint256.toString())
  t.equal(uint256Of('0'.repeat(78), 'x'), '0')
  t.equal(uint256Of(0n, 'x'), '0')
  t.throws(() => uint256Of(-1n, 'x'), new ToolError('x -1 is out of the uint256 range'))
  const normalized = caliburTypedData(withCall({ to: '0xe7f1725e7734ce288f8367e1bb143e90bb3f0512', value: '0010', data: '0xABCD' }))
  t.strictSame(normalized.message.batchedCall.calls[1], { to: '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512', value: '10', data: '0xabcd' })
  t.equal(caliburTypedData({ ...vectorParameters, domain: { ...vectorParameters.domain, salt: vector.typedData.domain.salt.toUpperCase().replace('0X', '0x') as Hex } }).domain.salt, vector.typedData.domain.salt)
})

t.test('caliburDomainFromEip712Domain: Calibur 1.0.0 with its five fields only', async (t) => {
  const good: Eip712DomainResult = ['0x1f', 'Calibur', '1.0.0', 31337n, vector.account.toLowerCase() as Address, vector.typedData.domain.salt, []]
  t.strictSame(caliburDomainFromEip712Domain(good), vectorParameters.domain)
  t.strictSame(caliburDomainFromEip712Domain(['0x1F', ...good.slice(1)] as unknown as Eip712DomainResult), vectorParameters.domain, 'fields in either case')
  const [fields, name, version, chainId, verifyingContract, salt, extensions] = good
  const notCalibur = (n: string, v: string) =>
    `the account's EIP-712 domain is "${n}" version "${v}", not Calibur 1.0.0: it is not delegated to a Calibur this version of Bruno knows`
  t.throws(() => caliburDomainFromEip712Domain([fields, 'Other', version, chainId, verifyingContract, salt, extensions]), new ToolError(notCalibur('Other', '1.0.0')))
  t.throws(() => caliburDomainFromEip712Domain([fields, name, '1', chainId, verifyingContract, salt, extensions]), new ToolError(notCalibur('Calibur', '1')))
  t.throws(
    () => caliburDomainFromEip712Domain(['0x0f', name, version, chainId, verifyingContract, salt, extensions]),
    new ToolError("the account's EIP-712 domain has fields 0x0f and 0 extensions; Calibur's has 0x1f (name, version, chainId, verifyingContract, salt) and none"),
  )
  t.throws(
    () => caliburDomainFromEip712Domain([fields, name, version, chainId, verifyingContract, salt, [1n]]),
    new ToolError("the account's EIP-712 domain has fields 0x1f and 1 extensions; Calibur's has 0x1f (name, version, chainId, verifyingContract, salt) and none"),
  )
  t.throws(() => caliburDomainFromEip712Domain([fields, name, version, 2n ** 53n, verifyingContract, salt, extensions]), new ToolError(`the account's EIP-712 chainId ${2n ** 53n} is out of range`))
  t.equal(caliburDomainFromEip712Domain([fields, name, version, 2n ** 53n - 1n, verifyingContract, salt, extensions]).chainId, 2 ** 53 - 1)
  t.throws(() => caliburDomainFromEip712Domain([fields, name, version, chainId, verifyingContract, '0x1234', extensions]), new ToolError('salt is 2 bytes, not 32'))
})

t.test('nonces: key << 64 | seq, and back', async (t) => {
  const maxKey = (1n << 192n) - 1n
  const maxSeq = (1n << 64n) - 1n
  t.equal(caliburNonce(0n, 5n), 5n)
  t.equal(caliburNonce(1n, 0n), 18446744073709551616n)
  t.equal(caliburNonce(7n, 3n), 129127208515966861315n)
  t.equal(caliburNonce(maxKey, maxSeq), maxUint256)
  t.strictSame(splitCaliburNonce(129127208515966861315n), { key: 7n, seq: 3n })
  t.strictSame(splitCaliburNonce(BigInt(vector.nonce.value)), { key: BigInt(vector.nonce.key), seq: BigInt(vector.nonce.seq) })
  t.strictSame(splitCaliburNonce(maxUint256), { key: maxKey, seq: maxSeq })
  t.strictSame(splitCaliburNonce(0n), { key: 0n, seq: 0n })
  t.throws(() => caliburNonce(maxKey + 1n, 0n), new ToolError(`nonce key ${maxKey + 1n} does not fit in 192 bits`))
  t.throws(() => caliburNonce(0n, maxSeq + 1n), new ToolError(`nonce seq ${maxSeq + 1n} does not fit in 64 bits`))
  t.throws(() => caliburNonce(-1n, 0n), new ToolError('nonce key -1 does not fit in 192 bits'))
  t.throws(() => caliburNonce(0n, -1n), new ToolError('nonce seq -1 does not fit in 64 bits'))
  t.throws(() => splitCaliburNonce(maxUint256 + 1n), new ToolError(`nonce ${maxUint256 + 1n} is out of the uint256 range`))
  t.throws(() => splitCaliburNonce(-1n), new ToolError('nonce -1 is out of the uint256 range'))
})

t.test('wrapCaliburSignature: abi.encode(signature, hookData), 64 bytes at least', async (t) => {
  const compact = vector.signature.slice(0, 130) as Hex // 64 bytes (EIP-2098 length)
  t.equal(wrapCaliburSignature(compact, '0xbeef'), encodeAbiParameters([{ type: 'bytes' }, { type: 'bytes' }], [compact, '0xbeef']))
  t.throws(() => wrapCaliburSignature(vector.signature.slice(0, 128) as Hex), new ToolError('the signature is 63 bytes; Calibur needs at least 64'))
})

// The two batches, on the chain-free config's network (USDC accepted, a Runner at 0x…0B0B).
const config = networkConfig()
const network = fakeNetwork(fakeClient({}).client, config)
const payments: Pick<PaymentServices, 'token'> = { token: (_chain, token) => paymentToken(network, token) }
const usdc = getAddress(config.tokens[0]!.address)
const weth = getAddress(config.weth)
const payee = getAddress(config.payee)
const runner = getAddress(config.runner.contract)
const account = vector.account
const transfer = (to: Address, amount: bigint) => encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [to, amount] })
const ownCall: CaliburCall = { to: getAddress('0x1111111111111111111111111111111111111111'), value: '5', data: '0xabcd' }
const leg: CaliburCall = { to: usdc, value: '0', data: transfer(payee, 150_000n) }
const ownerExecute = (calls: readonly { to: Address; value: bigint; data: Hex }[], revertOnFailure = true) =>
  encodeFunctionData({ abi: caliburFunctions, functionName: 'execute', args: [{ calls, revertOnFailure }] })
// The old layout's guard, Runner.paymentGuard(): no longer part of any batch Bruno accepts.
const oldGuard: CaliburCall = { to: runner, value: '0', data: toFunctionSelector('paymentGuard()') }

t.test('paymentBatch: the leg alone, all or nothing; ownCallsBatch: the account’s calls, all or nothing, no guard', async (t) => {
  t.equal(CALIBUR_PAYMENT_GAS, 150_000n)
  t.strictSame(paymentBatch(leg), { calls: [leg], revertOnFailure: true })
  t.strictSame(readPaymentBatch(network, payments, paymentBatch(leg)), { token: usdc, symbol: 'USDC', decimals: 6, amount: 150_000n })
  const second: CaliburCall = { ...ownCall, value: '0', data: '0x' }
  const calls = [ownCall, second]
  const own = ownCallsBatch(calls)
  t.strictSame(own, { calls: [ownCall, second], revertOnFailure: true }, 'the calls as given, in order, nothing before them')
  t.not(own.calls, calls, 'a copy: the caller’s array is not shared')
  calls.push(leg)
  t.equal(own.calls.length, 2)
  t.strictSame(ownCallsBatch([]), { calls: [], revertOnFailure: true })
})

t.test('readPaymentBatch: every way a batch is not payment-only', async (t) => {
  const good = paymentBatch(leg)
  const refuses = (batch: CaliburBatch, why: string) =>
    t.throws(
      () => readPaymentBatch(network, payments, batch),
      new ToolError(
        `the payment batch is not payment-only: ${why}. Bruno takes its payment in a batch of its own, the one call ` +
          `token.transfer(${payee}, amount), run before the batch of the account's calls: build both with calibur_batch`,
      ),
      why,
    )
  refuses({ ...good, revertOnFailure: false }, 'it does not revert on failure (revertOnFailure must be true)')
  refuses({ ...good, calls: [] }, 'it has 0 calls, not 1')
  refuses({ ...good, calls: [leg, ownCall] }, 'it has 2 calls, not 1')
  refuses({ ...good, calls: [ownCall, leg] }, 'it has 2 calls, not 1')
  refuses({ ...good, calls: [leg, leg] }, 'it has 2 calls, not 1')
  // the old payment-first layout (the leg, then the account's execute of [guard, …calls]) is not payment-only
  const oldLayout: CaliburBatch = {
    calls: [leg, { to: zeroAddress, value: '0', data: encodeOwnerExecute({ calls: [oldGuard, ownCall], revertOnFailure: true }) }],
    revertOnFailure: false,
  }
  refuses(oldLayout, 'it has 2 calls, not 1')
  const stranger = getAddress('0x3333333333333333333333333333333333333333')
  refuses({ ...good, calls: [{ ...leg, to: stranger }] }, `its call goes to ${stranger}, not an accepted payment token`)
  refuses({ ...good, calls: [ownCall] }, `its call goes to ${ownCall.to}, not an accepted payment token`)
  refuses({ ...good, calls: [{ ...leg, value: '1' }] }, 'its call sends ETH')
  refuses({ ...good, calls: [{ ...leg, data: encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [payee, 1n] }) }] }, 'its call is not token.transfer(payee, amount)')
  refuses({ ...good, calls: [{ ...leg, data: encodeFunctionData({ abi: erc20Abi, functionName: 'transferFrom', args: [account, payee, 1n] }) }] }, 'its call is not token.transfer(payee, amount)')
  refuses({ ...good, calls: [{ ...leg, data: '0x1234' }] }, 'its call is not token.transfer(payee, amount)')
  refuses({ ...good, calls: [{ ...leg, data: leg.data.slice(0, 74) as Hex }] }, 'its call is not token.transfer(payee, amount)')
  refuses({ ...good, calls: [{ ...leg, data: transfer(stranger, 1n) }] }, `it pays ${stranger}, not the payee`)
  refuses({ ...good, calls: [{ ...leg, data: transfer(payee, 0n) }] }, 'it pays nothing')
  // the payee in any case; WETH pays too (1:1, no path needed)
  t.equal(readPaymentBatch(network, payments, { ...good, calls: [{ ...leg, to: usdc.toLowerCase() as Address }] }).amount, 150_000n)
  const wethLeg = { ...leg, to: weth, data: transfer(payee, 7n) }
  t.strictSame(readPaymentBatch(network, payments, paymentBatch(wethLeg)), { token: weth, symbol: 'WETH', decimals: 18, amount: 7n })
})

t.test('requireInOrder: the calls at the seq right after the payment’s, on the same nonce key', async (t) => {
  const order = (key: bigint, seq: bigint, expectedSeq: bigint, paymentKey: bigint) =>
    new ToolError(
      `the batch of the account's calls has nonce key ${key} seq ${seq}; it must be signed at key ${paymentKey}, ` +
        `seq ${expectedSeq}, right after the payment batch's, so that it runs only after the payment: build both with calibur_batch`,
    )
  t.doesNotThrow(() => requireInOrder(caliburNonce(7n, 3n), caliburNonce(7n, 4n)))
  t.doesNotThrow(() => requireInOrder(caliburNonce(0n, 0n), caliburNonce(0n, 1n)))
  t.throws(() => requireInOrder(caliburNonce(7n, 3n), caliburNonce(7n, 3n)), order(7n, 3n, 4n, 7n), 'the same nonce')
  t.throws(() => requireInOrder(caliburNonce(7n, 3n), caliburNonce(7n, 5n)), order(7n, 5n, 4n, 7n), 'a seq skipped')
  t.throws(() => requireInOrder(caliburNonce(7n, 3n), caliburNonce(7n, 2n)), order(7n, 2n, 4n, 7n), 'the calls before the payment')
  t.throws(() => requireInOrder(caliburNonce(7n, 4n), caliburNonce(7n, 3n)), order(7n, 3n, 5n, 7n), 'the batches swapped')
  t.throws(() => requireInOrder(caliburNonce(7n, 3n), caliburNonce(8n, 4n)), order(8n, 4n, 4n, 7n), 'another key')
  // the nonce after the last seq of a key is the next key's seq 0: one more as a number, but on another sequence
  const maxSeq = (1n << 64n) - 1n
  t.equal(caliburNonce(7n, maxSeq) + 1n, caliburNonce(8n, 0n))
  t.throws(() => requireInOrder(caliburNonce(7n, maxSeq), caliburNonce(8n, 0n)), order(8n, 0n, maxSeq + 1n, 7n), 'the next key’s seq 0')
})

t.test('caliburDelegate: a signed execute of the account’s calls, paid by a signed payment-only batch at the nonce before', async (t) => {
  const reader = caliburDelegate(payments, () => CALIBUR_ADDRESS)
  t.equal(reader.name, 'Calibur')
  t.same(reader.tools, { batch: 'calibur_batch', execute: 'calibur_execute' })
  t.ok(reader.errors.abi.some((item) => item.type === 'error' && item.name === 'InvalidNonce'))
  const nonce = 129127208515966861315n // key 7, seq 3
  type Overrides = Partial<{ keyHash: Hex; executor: Address; nonce: bigint; deadline: bigint; batch: CaliburBatch }>
  const signed = (batch: CaliburBatch, defaults: { nonce: bigint; deadline: bigint }, overrides: Overrides = {}) =>
    encodeFunctionData({
      abi: caliburFunctions,
      functionName: 'execute',
      args: [
        {
          batchedCall: { calls: (overrides.batch ?? batch).calls.map((call) => ({ to: call.to, value: BigInt(call.value), data: call.data })), revertOnFailure: (overrides.batch ?? batch).revertOnFailure },
          nonce: overrides.nonce ?? defaults.nonce,
          keyHash: overrides.keyHash ?? zeroHash,
          executor: overrides.executor ?? runner,
          deadline: overrides.deadline ?? defaults.deadline,
        },
        wrapCaliburSignature(vector.signature),
      ],
    })
  const payment = (overrides: Overrides = {}) => signed(paymentBatch(leg), { nonce, deadline: 1_900_000_000n }, overrides)
  const calls = (overrides: Overrides = {}) => signed(ownCallsBatch([ownCall]), { nonce: nonce + 1n, deadline: 1_900_000_000n }, overrides)
  const read = (callData: Hex, paymentData: Hex | undefined, to: Address = account) => reader.read(network, { to, data: callData } as never, paymentData)
  const terms = read(calls(), payment(), account.toLowerCase() as Address)
  t.strictSame(terms, {
    account,
    delegate: getAddress(CALIBUR_ADDRESS),
    target: account,
    paymentData: payment(),
    paymentGas: CALIBUR_PAYMENT_GAS,
    token: usdc,
    payee,
    amount: 150_000n,
    deadline: 1_900_000_000n,
    identity: `calibur:local:${account}:${nonce}`,
    // replayed after the payment, as the Runner runs them (issue 29, point 5)
    ownCalls: { from: account, to: account, data: ownerExecute([{ to: leg.to, value: 0n, data: leg.data }, { to: ownCall.to, value: 5n, data: '0xabcd' }]) },
  })
  // what a call spends, however it is paid: its account and its own nonce; nothing for a call that is no signed execute
  t.equal(reader.callSpends(network, { to: account.toLowerCase(), data: calls() } as never), `calibur:local:${account}:${nonce + 1n}`)
  t.equal(reader.callSpends(network, { to: account, data: payment() } as never), terms?.identity, 'a payment batch as a call spends what the payment does')
  t.equal(reader.callSpends(network, { to: account, data: '0xa9059cbb' } as never), undefined)
  // any executor (0) is fine too, for either batch
  t.equal(read(calls({ executor: zeroAddress }), payment({ executor: zeroAddress }))?.amount, 150_000n)
  // the deadline is the earlier of the two; 0 is none
  t.equal(read(calls({ deadline: 1_800_000_000n }), payment())?.deadline, 1_800_000_000n)
  t.equal(read(calls(), payment({ deadline: 1_700_000_000n }))?.deadline, 1_700_000_000n)
  t.equal(read(calls({ deadline: 0n }), payment({ deadline: 1_700_000_000n }))?.deadline, 1_700_000_000n)
  t.equal(read(calls({ deadline: 1_800_000_000n }), payment({ deadline: 0n }))?.deadline, 1_800_000_000n)
  t.equal(read(calls({ deadline: 0n }), payment({ deadline: 0n }))?.deadline, 0n)
  // the calls' batch is replayed as it was signed, its calls in order, after the payment's
  const two = ownCallsBatch([ownCall, { ...ownCall, value: '0', data: '0x01' }])
  t.equal(read(calls({ batch: two }), payment())?.ownCalls.data, encodeOwnerExecute({ calls: [leg, ...two.calls], revertOnFailure: true }))

  // not this delegate's signed execute at all: not read, with or without a payment batch
  for (const paymentData of [payment(), undefined]) {
    t.equal(read('0x', paymentData), undefined)
    t.equal(read(transfer(payee, 1n), paymentData), undefined)
    t.equal(read('0xc3c16ee4', paymentData), undefined, 'the selector alone')
    t.equal(read(ownerExecute([]), paymentData), undefined, 'the owner execute')
  }

  // no payment batch, or one that is not a signed execute: refused
  t.throws(
    () => read(calls(), undefined),
    new ToolError("the payment has no `batch`: a Calibur call is paid by a signed payment-only batch, calibur_execute's payment.batch: pass the payment it returned"),
  )
  const notSigned = new ToolError("the payment's `batch` is not a signed Calibur execute: pass the payment calibur_execute returned")
  t.throws(() => read(calls(), '0x'), notSigned)
  t.throws(() => read(calls(), transfer(payee, 150_000n)), notSigned, 'a bare transfer is no payment batch')
  t.throws(() => read(calls(), ownerExecute([{ to: usdc, value: 0n, data: transfer(payee, 150_000n) }])), notSigned, 'the owner execute cannot run from the Runner')

  // the batches out of order: the calls at the payment's nonce, after a gap, before it, swapped, on another key
  const order = (seq: bigint, key = 7n) =>
    new ToolError(
      `the batch of the account's calls has nonce key ${key} seq ${seq}; it must be signed at key 7, seq 4, right after the payment batch's, so that it runs only after the payment: build both with calibur_batch`,
    )
  t.throws(() => read(calls({ nonce }), payment()), order(3n))
  t.throws(() => read(calls({ nonce: nonce + 2n }), payment()), order(5n))
  t.throws(() => read(calls({ nonce: nonce - 1n }), payment()), order(2n))
  t.throws(() => read(calls({ nonce: caliburNonce(8n, 4n) }), payment()), order(4n, 8n))
  t.throws(
    () => read(payment(), calls()),
    new ToolError(
      "the batch of the account's calls has nonce key 7 seq 3; it must be signed at key 7, seq 5, right after the payment batch's, so that it runs only after the payment: build both with calibur_batch",
    ),
    'the payment batch given as the call and the calls as the payment: the order shows it',
  )

  // a payment batch that does more than pay: refused, even in order
  const notPaymentOnly = (why: string) =>
    new ToolError(
      `the payment batch is not payment-only: ${why}. Bruno takes its payment in a batch of its own, the one call ` +
        `token.transfer(${payee}, amount), run before the batch of the account's calls: build both with calibur_batch`,
    )
  t.throws(() => read(calls(), payment({ batch: { calls: [leg, ownCall], revertOnFailure: true } })), notPaymentOnly('it has 2 calls, not 1'))
  t.throws(() => read(calls(), payment({ batch: { calls: [leg], revertOnFailure: false } })), notPaymentOnly('it does not revert on failure (revertOnFailure must be true)'))
  t.throws(() => read(calls(), payment({ batch: paymentBatch({ ...leg, data: transfer(account, 150_000n) }) })), notPaymentOnly(`it pays ${account}, not the payee`))
  t.throws(
    () => read(payment({ nonce: nonce + 1n }), calls({ nonce })),
    notPaymentOnly(`its call goes to ${ownCall.to}, not an accepted payment token`),
    'swapped and signed at each other’s nonces: the calls are no payment',
  )
  // the old single batch (its payment leg and the guarded calls in one) is no payment batch either
  const oldLayout: CaliburBatch = {
    calls: [leg, { to: zeroAddress, value: '0', data: encodeOwnerExecute({ calls: [oldGuard, ownCall], revertOnFailure: true }) }],
    revertOnFailure: false,
  }
  t.throws(() => read(calls(), payment({ batch: oldLayout })), notPaymentOnly('it has 2 calls, not 1'))
  t.throws(() => read(signed(oldLayout, { nonce, deadline: 0n }), undefined), new ToolError("the payment has no `batch`: a Calibur call is paid by a signed payment-only batch, calibur_execute's payment.batch: pass the payment it returned"))

  // a registered key, or another executor, on either batch: refused, naming which
  const registered = `0x${'01'.repeat(32)}` as Hex
  t.throws(
    () => read(calls(), payment({ keyHash: registered })),
    new ToolError("the payment batch names a registered key (keyHash is not zero): Bruno relays batches signed by the account's own (root) key only"),
  )
  t.throws(
    () => read(calls({ keyHash: registered }), payment()),
    new ToolError("the batch of the account's calls names a registered key (keyHash is not zero): Bruno relays batches signed by the account's own (root) key only"),
  )
  const other = getAddress('0x4444444444444444444444444444444444444444')
  t.throws(() => read(calls(), payment({ executor: other })), new ToolError(`the payment batch may only be executed by ${other}, not by Bruno's Runner`))
  t.throws(() => read(calls({ executor: other }), payment()), new ToolError(`the batch of the account's calls may only be executed by ${other}, not by Bruno's Runner`))
})
