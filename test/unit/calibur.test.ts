import { readFileSync } from 'node:fs'
import t from 'tap'
import { encodeAbiParameters, encodeFunctionData, erc20Abi, getAddress, maxUint256, parseAbi, toFunctionSelector, zeroAddress, zeroHash, type Address, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { paymentToken } from '../../core/relay/paymentToken.ts'
import { ToolError } from '../../core/tool.ts'
import type { PaymentServices } from '../../core/services.ts'
import { encodeOwnerExecute, encodeSignedExecute, recoverCaliburSigner, wrapCaliburSignature } from '../../plugins/calibur/executeCalldata.ts'
import { caliburNonce, splitCaliburNonce } from '../../plugins/calibur/nonce.ts'
import { caliburBatchReader, paymentFirstBatch, readPaymentFirstBatch } from '../../plugins/calibur/paymentFirstBatch.ts'
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

// plugins/calibur without a chain: the encoders against the real Calibur vector (golden/calibur-vectors.json,
// accepted on chain by Uniswap's Calibur), the payment-first batch built and read back, and every
// refusal. Calibur's functions are encoded here from their Solidity signatures, not from our ABI.

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
const runnerGuard = parseAbi(['function paymentGuard()'])

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

// The payment-first batch, on the chain-free config's network (USDC accepted, a Runner at 0x…0B0B).
const config = networkConfig()
const network = fakeNetwork(fakeClient({}).client, config)
const payments: PaymentServices = { token: (_chain, token) => paymentToken(network, token), pricer: () => Promise.reject(new Error('no pricing here')) }
const usdc = getAddress(config.tokens[0]!.address)
const weth = getAddress(config.weth)
const payee = getAddress(config.payee)
const runner = getAddress(config.runner.contract)
const account = vector.account
const transfer = (to: Address, amount: bigint) => encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [to, amount] })
const guard: CaliburCall = { to: runner, value: '0', data: toFunctionSelector('paymentGuard()') }
const ownCall: CaliburCall = { to: getAddress('0x1111111111111111111111111111111111111111'), value: '5', data: '0xabcd' }
const leg: CaliburCall = { to: usdc, value: '0', data: transfer(payee, 150_000n) }
const ownerExecute = (calls: readonly { to: Address; value: bigint; data: Hex }[], revertOnFailure = true) =>
  encodeFunctionData({ abi: caliburFunctions, functionName: 'execute', args: [{ calls, revertOnFailure }] })

t.test('paymentFirstBatch: the leg, then the account’s execute of [guard, …calls] all or nothing', async (t) => {
  t.equal(encodeFunctionData({ abi: runnerGuard, functionName: 'paymentGuard' }), guard.data)
  const batch = paymentFirstBatch(leg, guard, [ownCall])
  t.strictSame(batch, {
    calls: [
      leg,
      {
        to: zeroAddress,
        value: '0',
        data: ownerExecute([
          { to: runner, value: 0n, data: guard.data },
          { to: ownCall.to, value: 5n, data: '0xabcd' },
        ]),
      },
    ],
    revertOnFailure: false,
  })
  t.strictSame(readPaymentFirstBatch(network, payments, account, batch), { token: usdc, symbol: 'USDC', decimals: 6, amount: 150_000n, calls: [ownCall] })
  // the second call may name the account itself instead of address 0
  const toAccount = { ...batch, calls: [batch.calls[0]!, { ...batch.calls[1]!, to: account }] }
  t.equal(readPaymentFirstBatch(network, payments, account, toAccount).amount, 150_000n)
  // no own calls: the guard alone
  t.strictSame(readPaymentFirstBatch(network, payments, account, paymentFirstBatch(leg, guard, [])).calls, [])
})

t.test('readPaymentFirstBatch: every way a batch is not payment first', async (t) => {
  const good = paymentFirstBatch(leg, guard, [ownCall])
  const refuses = (batch: CaliburBatch, why: string) =>
    t.throws(
      () => readPaymentFirstBatch(network, payments, account, batch),
      new ToolError(
        `the batch is not payment-first: ${why}. Bruno relays a batch whose first call pays ${payee} and whose own calls run after the ` +
          "Runner's payment guard, in a second call to the account (a failing call still pays): build it with calibur_batch",
      ),
      why,
    )
  const inner = good.calls[1]!
  refuses({ ...good, revertOnFailure: true }, 'its outer batch reverts on failure (revertOnFailure must be false, so the payment stands alone)')
  refuses({ ...good, calls: [leg] }, "it has 1 calls, not 2 (the payment leg, then the account's own calls)")
  refuses({ ...good, calls: [] }, "it has 0 calls, not 2 (the payment leg, then the account's own calls)")
  refuses({ ...good, calls: [leg, inner, inner] }, "it has 3 calls, not 2 (the payment leg, then the account's own calls)")
  const stranger = getAddress('0x3333333333333333333333333333333333333333')
  refuses({ ...good, calls: [{ ...leg, to: stranger }, inner] }, `its first call goes to ${stranger}, not an accepted payment token`)
  refuses({ ...good, calls: [{ ...leg, value: '1' }, inner] }, 'its first call sends ETH')
  refuses({ ...good, calls: [{ ...leg, data: encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [payee, 1n] }) }, inner] }, 'its first call is not token.transfer(payee, amount)')
  refuses({ ...good, calls: [{ ...leg, data: '0x1234' }, inner] }, 'its first call is not token.transfer(payee, amount)')
  refuses({ ...good, calls: [{ ...leg, data: transfer(stranger, 1n) }, inner] }, `its first call pays ${stranger}, not the payee`)
  refuses({ ...good, calls: [{ ...leg, data: transfer(payee, 0n) }, inner] }, 'its first call pays nothing')
  refuses({ ...good, calls: [leg, { ...inner, to: stranger }] }, `its second call goes to ${stranger}, not the account`)
  refuses({ ...good, calls: [leg, { ...inner, value: '1' }] }, 'its second call sends ETH')
  refuses({ ...good, calls: [leg, { ...inner, data: '0x1234' }] }, "its second call is not the account's execute(BatchedCall)")
  refuses({ ...good, calls: [leg, { ...inner, data: encodeSignedExecute({ message: caliburTypedData(vectorParameters).message, signature: vector.signature }) }] }, "its second call is not the account's execute(BatchedCall)")
  refuses({ ...good, calls: [leg, { ...inner, data: transfer(payee, 1n) }] }, "its second call is not the account's execute(BatchedCall)")
  refuses({ ...good, calls: [leg, { ...inner, data: ownerExecute([{ to: runner, value: 0n, data: guard.data }], false) }] }, "the account's own calls are not all or nothing (revertOnFailure must be true)")
  const noGuard = `the account's own calls do not open with the Runner's payment guard (${runner}.paymentGuard())`
  refuses({ ...good, calls: [leg, { ...inner, data: ownerExecute([]) }] }, noGuard)
  refuses({ ...good, calls: [leg, { ...inner, data: ownerExecute([{ to: stranger, value: 0n, data: guard.data }]) }] }, noGuard)
  refuses({ ...good, calls: [leg, { ...inner, data: ownerExecute([{ to: runner, value: 1n, data: guard.data }]) }] }, noGuard)
  refuses({ ...good, calls: [leg, { ...inner, data: ownerExecute([{ to: runner, value: 0n, data: '0x12345678' }]) }] }, noGuard)
  refuses({ ...good, calls: [leg, { ...inner, data: ownerExecute([{ to: ownCall.to, value: 5n, data: '0xabcd' }, { to: runner, value: 0n, data: guard.data }]) }] }, noGuard)
  // WETH pays too (1:1, no path needed)
  const wethLeg = { ...leg, to: weth, data: transfer(payee, 7n) }
  t.strictSame(readPaymentFirstBatch(network, payments, account, { ...good, calls: [wethLeg, inner] }), { token: weth, symbol: 'WETH', decimals: 18, amount: 7n, calls: [ownCall] })
})

t.test('caliburBatchReader: reads a signed execute of a payment-first batch, and only that', async (t) => {
  const reader = caliburBatchReader(payments)
  t.equal(reader.delegate, 'Calibur')
  t.ok(reader.errors.abi.some((item) => item.type === 'error' && item.name === 'InvalidNonce'))
  const batch = paymentFirstBatch(leg, guard, [ownCall])
  const signed = (overrides: Partial<{ keyHash: Hex; executor: Address; nonce: bigint; deadline: bigint }> = {}) =>
    encodeFunctionData({
      abi: caliburFunctions,
      functionName: 'execute',
      args: [
        {
          batchedCall: { calls: batch.calls.map((call) => ({ to: call.to, value: BigInt(call.value), data: call.data })), revertOnFailure: false },
          nonce: overrides.nonce ?? 129127208515966861315n,
          keyHash: overrides.keyHash ?? zeroHash,
          executor: overrides.executor ?? zeroAddress,
          deadline: overrides.deadline ?? 1_900_000_000n,
        },
        wrapCaliburSignature(vector.signature),
      ],
    })
  const terms = reader.read(network, { to: account.toLowerCase() as Address, data: signed() } as never)
  t.strictSame(terms, {
    account,
    delegate: getAddress(config.calibur),
    token: usdc,
    payee,
    amount: 150_000n,
    deadline: 1_900_000_000n,
    identity: `calibur:local:${account}:129127208515966861315`,
    ownCalls: { from: account, to: account, data: ownerExecute([{ to: ownCall.to, value: 5n, data: '0xabcd' }]) },
  })
  // the Runner as executor is fine
  t.equal(reader.read(network, { to: account, data: signed({ executor: runner }) } as never)?.amount, 150_000n)
  // not this delegate's signed execute at all: not read
  t.equal(reader.read(network, { to: account, data: '0x' } as never), undefined)
  t.equal(reader.read(network, { to: account, data: transfer(payee, 1n) } as never), undefined)
  t.equal(reader.read(network, { to: account, data: '0xc3c16ee4' } as never), undefined, 'the selector alone')
  t.equal(reader.read(network, { to: account, data: `${ownerExecute([])}` } as never), undefined, 'the owner execute')
  // a signed execute that breaks the rules: refused
  t.throws(
    () => reader.read(network, { to: account, data: signed({ keyHash: `0x${'01'.repeat(32)}` }) } as never),
    new ToolError("the batch names a registered key (keyHash is not zero): Bruno relays batches signed by the account's own (root) key only"),
  )
  const other = getAddress('0x4444444444444444444444444444444444444444')
  t.throws(() => reader.read(network, { to: account, data: signed({ executor: other }) } as never), new ToolError(`the batch may only be executed by ${other}, not by Bruno's Runner`))
})
