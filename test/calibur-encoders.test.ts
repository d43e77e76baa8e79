import { readFileSync, writeFileSync } from 'node:fs'
import t from 'tap'
import {
  createPublicClient,
  createWalletClient,
  custom,
  decodeErrorResult,
  encodeFunctionData,
  encodeFunctionResult,
  erc20Abi,
  hashDomain,
  hashStruct,
  hashTypedData,
  http,
  keccak256,
  maxUint256,
  toFunctionSelector,
  toHex,
  zeroAddress,
  zeroHash,
  type Address,
  type Hex,
} from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { formatAbiItem } from 'viem/utils'
import { startAnvil } from '../core/devnet/anvil.ts'
import { ToolError } from '../core/tool/tool.ts'
import { caliburAbi } from '../plugins/calibur/abi.ts'
import {
  encodeOwnerExecute,
  encodeSignedExecute,
  recoverCaliburSigner,
  wrapCaliburSignature,
} from '../plugins/calibur/executeCalldata.ts'
import { caliburNonce, splitCaliburNonce } from '../plugins/calibur/nonce.ts'
import { ownCallsBatch, paymentBatch } from '../plugins/calibur/paymentFirstBatch.ts'
import { readCaliburDomain } from '../plugins/calibur/readDomain.ts'
import {
  caliburDomainFromEip712Domain,
  caliburTypedData,
  caliburTypes,
  uint256Of,
  type CaliburCall,
  type CaliburTypedData,
  type CaliburTypedDataParameters,
  type Eip712DomainResult,
} from '../plugins/calibur/typedData.ts'

// Two golden files pin the Calibur encoders:
// - golden/calibur-vectors.json is a known answer from the real Calibur contract (copied from the
//   brief). It is never regenerated: the encoders must reproduce it byte for byte.
// - golden/calibur.json holds our own fixed-input vectors. `UPDATE_GOLDEN=1 npx tap
//   test/calibur-encoders.test.ts` rewrites it (and only it) from the inputs below; without it
//   the file must match byte for byte. A change to it needs a reason in the commit message.

const update = process.env.UPDATE_GOLDEN === '1'
const vectorFile = new URL('../golden/calibur-vectors.json', import.meta.url)
const goldenFile = new URL('../golden/calibur.json', import.meta.url)

type Vector = {
  chainId: number
  caliburAddress: Address
  account: Address
  signerPrivateKey: Hex
  batchedCall: CaliburTypedDataParameters['batch']
  nonce: { value: string; key: string; seq: string }
  keyHash: Hex
  executor: Address
  deadline: string
  typedData: CaliburTypedData
  typeStrings: Record<string, string>
  typeHashes: Record<string, Hex>
  domainSeparator: Hex
  structHash: Hex
  digest: Hex
  signature: Hex
  hookData: Hex
  wrappedSignature: Hex
  executeCalldata: Hex
  selectors: Record<string, Hex>
  errorSelectors: Record<string, Hex>
  observedReverts: Record<string, { selector: Hex; error: string }>
  gas: { ownerPath: { calldata: Hex } }
}
const [vector] = (JSON.parse(readFileSync(vectorFile, 'utf8')) as { vectors: Vector[] }).vectors
if (!vector) throw new Error('golden/calibur-vectors.json holds no vector')

const vectorParameters: CaliburTypedDataParameters = {
  domain: { chainId: vector.chainId, account: vector.account, salt: vector.typedData.domain.salt },
  batch: vector.batchedCall,
  nonce: BigInt(vector.nonce.value),
  deadline: BigInt(vector.deadline),
  executor: vector.executor,
  keyHash: vector.keyHash,
}

// EIP-712 encodeType, written out from the EIP so the type hashes are not taken from viem: the
// primary type, then the types it references, sorted by name.
function encodeType(primaryType: string, types: Record<string, readonly { name: string; type: string }[]>): string {
  const referenced = new Set<string>()
  const visit = (type: string) => {
    const base = type.replace(/\[[0-9]*\]$/, '')
    if (!(base in types) || referenced.has(base)) return
    referenced.add(base)
    for (const field of types[base] ?? []) visit(field.type)
  }
  visit(primaryType)
  referenced.delete(primaryType)
  return [primaryType, ...[...referenced].sort()]
    .map((name) => `${name}(${(types[name] ?? []).map((field) => `${field.type} ${field.name}`).join(',')})`)
    .join('')
}

// A wallet reached over JSON-RPC: viem validates and serializes the typed data to JSON and anvil
// signs it with an EIP-712 implementation of its own (Rust, eth_signTypedData_v4). Signing what
// viem's local account signs proves the decimal-string representation travels.
const anvil = await startAnvil()
t.teardown(() => anvil.stop())
const anvilSign = (address: Address, typedData: CaliburTypedData) =>
  createWalletClient({ account: address, transport: http(anvil.rpcUrl) }).signTypedData(typedData)

t.test('golden/calibur-vectors.json: the real Calibur vector, reproduced byte for byte', async (t) => {
  const typedData = caliburTypedData(vectorParameters)
  t.strictSame(typedData, vector.typedData, 'typed data, deep-equal')
  t.strictSame(JSON.parse(JSON.stringify(typedData)), typedData, 'and unchanged by a JSON round trip')
  // The salt is bytes32(prefix << 160 | implementation), prefix 0 here.
  t.equal(typedData.domain.salt, toHex(BigInt(vector.caliburAddress), { size: 32 }))

  for (const [name, typeString] of Object.entries(vector.typeStrings)) {
    t.equal(encodeType(name, caliburTypes), typeString, `type string of ${name}`)
    t.equal(keccak256(toHex(typeString)), vector.typeHashes[name], `type hash of ${name}`)
  }
  t.equal(hashDomain({ domain: typedData.domain, types: typedData.types }), vector.domainSeparator, 'domain separator')
  t.equal(hashStruct({ data: typedData.message, primaryType: 'SignedBatchedCall', types: typedData.types }), vector.structHash, 'struct hash')
  t.equal(hashTypedData(typedData), vector.digest, 'digest')

  const signer = privateKeyToAccount(vector.signerPrivateKey)
  t.equal(signer.address, vector.account)
  const signature = await signer.signTypedData(typedData)
  t.equal(signature, vector.signature, 'signature (viem signTypedData, RFC 6979)')
  t.equal(await anvilSign(vector.account, typedData), vector.signature, 'the same signature from anvil\'s eth_signTypedData_v4')

  t.equal(wrapCaliburSignature(signature, vector.hookData), vector.wrappedSignature, 'wrappedSignature')
  t.equal(encodeSignedExecute({ message: typedData.message, signature }), vector.executeCalldata, 'execute calldata')
  t.equal(encodeOwnerExecute(typedData.message.batchedCall), vector.gas.ownerPath.calldata, 'owner-path calldata')
  t.strictSame(splitCaliburNonce(BigInt(vector.nonce.value)), { key: BigInt(vector.nonce.key), seq: BigInt(vector.nonce.seq) })
})

t.test('viem reads the decimal strings as the numbers they spell', async (t) => {
  const typedData = caliburTypedData({ ...vectorParameters, nonce: caliburNonce(maxUint256 >> 64n, 12n), deadline: 1_900_000_000n })
  const withBigints = {
    ...typedData,
    message: {
      ...typedData.message,
      batchedCall: {
        ...typedData.message.batchedCall,
        calls: typedData.message.batchedCall.calls.map((call) => ({ ...call, value: BigInt(call.value) })),
      },
      nonce: BigInt(typedData.message.nonce),
      deadline: BigInt(typedData.message.deadline),
    },
  }
  t.equal(hashTypedData(typedData), hashTypedData(withBigints))
  const signer = privateKeyToAccount(vector.signerPrivateKey)
  t.equal(await signer.signTypedData(typedData), await signer.signTypedData(withBigints))
})

t.test('recoverCaliburSigner: the account for its signature, someone else for a tampered one', async (t) => {
  t.equal(await recoverCaliburSigner(vector.typedData, vector.signature), vector.account)
  // As in the vector's observedReverts.tamperedSignature: first byte of r xor 0x01.
  const firstByte = Number.parseInt(vector.signature.slice(2, 4), 16) ^ 0x01
  const tampered = `0x${firstByte.toString(16).padStart(2, '0')}${vector.signature.slice(4)}` as Hex
  const recovered = await recoverCaliburSigner(vector.typedData, tampered).catch(() => undefined)
  t.not(recovered, vector.account)
  // The same signature over the implementation's domain (verifyingContract = Calibur itself, a
  // mistake the vector saw refused) recovers to someone else too.
  const implementationDomain = caliburTypedData({ ...vectorParameters, domain: { ...vectorParameters.domain, account: vector.caliburAddress } })
  t.not(await recoverCaliburSigner(implementationDomain, vector.signature), vector.account)
})

t.test('caliburAbi: the vector\'s selectors', async (t) => {
  const functions = caliburAbi.filter((item) => item.type === 'function')
  t.equal(functions.length, 4)
  for (const item of functions) {
    const signature = formatAbiItem(item)
    t.equal(toFunctionSelector(item), vector.selectors[signature], signature)
  }
  const errors = caliburAbi.filter((item) => item.type === 'error')
  t.strictSame(
    Object.fromEntries(errors.map((item) => [formatAbiItem(item), toFunctionSelector(formatAbiItem(item))])),
    vector.errorSelectors,
    'every error the vector lists, and no other',
  )
  for (const [how, revert] of Object.entries(vector.observedReverts))
    t.equal(`${decodeErrorResult({ abi: caliburAbi, data: revert.selector }).errorName}()`, revert.error, how)
})

t.test('caliburNonce and splitCaliburNonce', async (t) => {
  t.equal(caliburNonce(0n, 0n), 0n)
  t.equal(caliburNonce(7n, 3n), (7n << 64n) | 3n)
  const maxKey = (1n << 192n) - 1n
  const maxSeq = (1n << 64n) - 1n
  t.equal(caliburNonce(maxKey, maxSeq), maxUint256)
  t.strictSame(splitCaliburNonce(maxUint256), { key: maxKey, seq: maxSeq })
  t.strictSame(splitCaliburNonce(caliburNonce(123456789n, 42n)), { key: 123456789n, seq: 42n })
  t.throws(() => caliburNonce(maxKey + 1n, 0n), ToolError)
  t.throws(() => caliburNonce(0n, maxSeq + 1n), ToolError)
  t.throws(() => caliburNonce(-1n, 0n), ToolError)
  t.throws(() => splitCaliburNonce(maxUint256 + 1n), ToolError)
})

t.test('caliburTypedData refuses what it cannot encode faithfully', async (t) => {
  const call = { to: '0x1111111111111111111111111111111111111111', value: '0', data: '0x' }
  const withCall = (overrides: Partial<typeof call>) => ({ ...vectorParameters, batch: { calls: [{ ...call, ...overrides }], revertOnFailure: true } })
  t.throws(() => caliburTypedData(withCall({ value: '0x10' })), ToolError, 'hex value')
  t.throws(() => caliburTypedData(withCall({ value: '' })), ToolError, 'empty value')
  t.throws(() => caliburTypedData(withCall({ value: '-1' })), ToolError, 'negative value')
  t.throws(() => caliburTypedData(withCall({ value: (maxUint256 + 1n).toString() })), ToolError, 'value past uint256')
  t.throws(() => caliburTypedData(withCall({ to: '0xe7f1725e7734ce288f8367e1bb143e90bb3F0512' })), ToolError, 'bad checksum')
  t.throws(() => caliburTypedData(withCall({ data: '0x123' })), ToolError, 'half a byte')
  t.throws(() => caliburTypedData({ ...vectorParameters, domain: { ...vectorParameters.domain, salt: '0x1234' } }), ToolError, 'short salt')
  t.throws(() => caliburTypedData({ ...vectorParameters, domain: { ...vectorParameters.domain, chainId: 0 } }), ToolError, 'chainId 0')
  t.throws(() => caliburTypedData({ ...vectorParameters, deadline: -1n }), ToolError, 'negative deadline')
  // Lowercase input comes out checksummed, data lowercase, value canonical.
  const normalized = caliburTypedData(withCall({ to: '0xe7f1725e7734ce288f8367e1bb143e90bb3f0512', value: '0010', data: '0xABCD' }))
  t.strictSame(normalized.message.batchedCall.calls, [{ to: '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512', value: '10', data: '0xabcd' }])
  t.equal(uint256Of(10n, 'x'), '10')
  t.throws(() => wrapCaliburSignature(vector.signature.slice(0, 128) as Hex), ToolError, 'a 63-byte signature')
})

const vectorDomainResult: Eip712DomainResult = ['0x1f', 'Calibur', '1.0.0', 31337n, vector.account, vector.typedData.domain.salt, []]

t.test('caliburDomainFromEip712Domain', async (t) => {
  t.strictSame(caliburDomainFromEip712Domain(vectorDomainResult), vectorParameters.domain)
  const [fields, name, version, chainId, verifyingContract, salt, extensions] = vectorDomainResult
  t.throws(() => caliburDomainFromEip712Domain([fields, 'Other', version, chainId, verifyingContract, salt, extensions]), ToolError, 'another name')
  t.throws(() => caliburDomainFromEip712Domain([fields, name, '1', chainId, verifyingContract, salt, extensions]), ToolError, 'version 1')
  t.throws(() => caliburDomainFromEip712Domain(['0x0f', name, version, chainId, verifyingContract, salt, extensions]), ToolError, 'no salt')
  t.throws(() => caliburDomainFromEip712Domain([fields, name, version, chainId, verifyingContract, salt, [1n]]), ToolError, 'extensions')
})

// A client whose node answers eth_call with `answer`: readCaliburDomain without a chain.
const answering = (answer: (to: Address) => Hex) =>
  createPublicClient({
    transport: custom({
      async request({ method, params }) {
        if (method !== 'eth_call') throw new Error(`unexpected ${method}`)
        return answer((params as [{ to: Address }])[0].to)
      },
    }),
  })

t.test('readCaliburDomain', async (t) => {
  const domainOf = (verifyingContract: Address) =>
    encodeFunctionResult({ abi: caliburAbi, functionName: 'eip712Domain', result: [...vectorDomainResult.slice(0, 4), verifyingContract, ...vectorDomainResult.slice(5)] as unknown as Eip712DomainResult })
  t.strictSame(await readCaliburDomain(answering(domainOf), vector.account), vectorParameters.domain, 'the account\'s own domain')
  await t.rejects(readCaliburDomain(answering(() => domainOf(vector.caliburAddress)), vector.account), ToolError, 'the implementation\'s domain')
  await t.rejects(readCaliburDomain(answering(() => '0x'), vector.account), ToolError, 'no code: not delegated')
})

// Our own vectors: inputs fixed here, outputs from the encoders. anvil's dev key #1 signs.
const signerPrivateKey = vector.signerPrivateKey
const account = vector.account
// Calibur's address on every chain, the devnet's USDC (its deploy is deterministic) and payee
// (anvil #9, config/devnet.ts), anvil #3 receiving ETH, anvil #2 as a set executor, mainnet
// SwapRouter02.
const caliburCanonical: Address = '0x000000005c84F8Fd50b21CAC312528A64437030e'
const devnetUsdc: Address = '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512'
const payee: Address = '0xa0Ee7A142d267C1f36714E4a8F75612F20a79720'
const ethRecipient: Address = '0x90F79bf6EB2c4f870365E785982E1f101E93b906'
const executor: Address = '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC'
const swapRouter02: Address = '0x68b3465833fb72A70ecDF485E0e4C7bD8665Fc45'
// A Runner contract's address, as calibur_batch names it the executor of both batches.
const runnerContract: Address = '0x59b670e9fA9D0A427751Af201D676719a970857b'
const saltOf = (prefix: bigint, implementation: Address) => toHex((prefix << 160n) | BigInt(implementation), { size: 32 })
const usdcTransfer = (to: Address, amount: bigint) => ({ to: devnetUsdc, value: '0', data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [to, amount] }) })

type GoldenInputs = {
  domain: { chainId: number; account: Address; salt: Hex }
  batch: { calls: { to: Address; value: string; data: Hex }[]; revertOnFailure: boolean }
  nonceKey: string
  nonceSeq: string
  deadline: string
  executor: Address
  keyHash: Hex
}

const goldenInputs: { name: string; inputs: GoldenInputs }[] = [
  {
    name: 'a value call then the payment leg to the payee; nonce key 7 seq 3; a deadline',
    inputs: {
      domain: { chainId: 31337, account, salt: saltOf(0n, caliburCanonical) },
      batch: {
        calls: [{ to: ethRecipient, value: '10000000000000000', data: '0x' }, usdcTransfer(payee, 1_250_000n)],
        revertOnFailure: true,
      },
      nonceKey: '7',
      nonceSeq: '3',
      deadline: '1900000000',
      executor: zeroAddress,
      keyHash: zeroHash,
    },
  },
  {
    name: 'an unlimited approve, a call with calldata and value 1 wei, the payment leg; largest nonce key and seq; an executor; salt prefix 1; revertOnFailure false',
    inputs: {
      domain: { chainId: 8453, account, salt: saltOf(1n, caliburCanonical) },
      batch: {
        calls: [
          { to: devnetUsdc, value: '0', data: encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [swapRouter02, maxUint256] }) },
          { to: swapRouter02, value: '1', data: '0xdeadbeef' },
          usdcTransfer(payee, 987_654_321n),
        ],
        revertOnFailure: false,
      },
      nonceKey: ((1n << 192n) - 1n).toString(),
      nonceSeq: ((1n << 64n) - 1n).toString(),
      deadline: '0',
      executor,
      keyHash: zeroHash,
    },
  },
  {
    // calibur_batch's layout (plugins/calibur/paymentFirstBatch.ts): a change to it changes these bytes.
    name: 'payment only, as calibur_batch builds it: one USDC transfer to the payee, all or nothing; nonce key 0 seq 0; the Runner as executor',
    inputs: {
      domain: { chainId: 31337, account, salt: saltOf(0n, caliburCanonical) },
      batch: paymentBatch(usdcTransfer(payee, 935_207n) as CaliburCall),
      nonceKey: '0',
      nonceSeq: '0',
      deadline: '1900000000',
      executor: runnerContract,
      keyHash: zeroHash,
    },
  },
  {
    name: 'the account\'s calls, as calibur_batch builds them after the payment: a USDC transfer, all or nothing; nonce key 0 seq 1; the Runner as executor',
    inputs: {
      domain: { chainId: 31337, account, salt: saltOf(0n, caliburCanonical) },
      batch: ownCallsBatch([usdcTransfer(ethRecipient, 1_000_000n) as CaliburCall]),
      nonceKey: '0',
      nonceSeq: '1',
      deadline: '1900000000',
      executor: runnerContract,
      keyHash: zeroHash,
    },
  },
  {
    name: 'the payment leg alone, on the first use of nonce key 1',
    inputs: {
      domain: { chainId: 1, account, salt: saltOf(0n, caliburCanonical) },
      batch: { calls: [usdcTransfer(payee, 30_000n)], revertOnFailure: true },
      nonceKey: '1',
      nonceSeq: '0',
      deadline: '4102444800',
      executor: zeroAddress,
      keyHash: zeroHash,
    },
  },
]

async function goldenVector({ name, inputs }: { name: string; inputs: GoldenInputs }) {
  const nonce = caliburNonce(BigInt(inputs.nonceKey), BigInt(inputs.nonceSeq))
  const typedData = caliburTypedData({ ...inputs, nonce, deadline: BigInt(inputs.deadline) })
  const signature = await privateKeyToAccount(signerPrivateKey).signTypedData(typedData)
  return {
    name,
    inputs,
    typedData,
    domainSeparator: hashDomain({ domain: typedData.domain, types: typedData.types }),
    structHash: hashStruct({ data: typedData.message, primaryType: 'SignedBatchedCall', types: typedData.types }),
    digest: hashTypedData(typedData),
    signature,
    wrappedSignature: wrapCaliburSignature(signature),
    executeCalldata: encodeSignedExecute({ message: typedData.message, signature }),
    ownerExecuteCalldata: encodeOwnerExecute(typedData.message.batchedCall),
  }
}

const golden = {
  note:
    'Calibur signed-batch vectors for fixed inputs: typed data (plugins/calibur caliburTypedData; uint256 as decimal strings), ' +
    'domain separator, struct hash and digest (viem), the signature of anvil\'s dev key #1 (viem signTypedData, RFC 6979), ' +
    'wrappedSignature = abi.encode(signature, hookData \'0x\'), the signed execute calldata (0xc3c16ee4) and the owner ' +
    'execute calldata (0x99e1d016). Produced by `UPDATE_GOLDEN=1 npx tap test/calibur-encoders.test.ts` from the inputs in ' +
    'that test. Pinned by: golden/calibur-vectors.json, which the same encoders reproduce byte for byte and which the real ' +
    'Calibur contract accepted; anvil\'s own eth_signTypedData_v4 signing each typed data to the same signature; each ' +
    'signature recovering to the account. A change needs a reason in the commit message.',
  signerPrivateKey,
  vectors: await Promise.all(goldenInputs.map(goldenVector)),
}

t.test('golden/calibur.json: our vectors', async (t) => {
  const text = `${JSON.stringify(golden, null, 2)}\n`
  if (update) {
    writeFileSync(goldenFile, text)
    t.comment('golden/calibur.json rewritten')
  } else {
    const committed = readFileSync(goldenFile, 'utf8')
    t.strictSame(JSON.parse(committed), golden, 'the encoders produce the committed vectors')
    t.equal(committed, text, 'byte for byte')
  }
  for (const vector of golden.vectors) {
    t.equal(await anvilSign(account, vector.typedData), vector.signature, `${vector.name}: anvil signs the same`)
    t.equal(await recoverCaliburSigner(vector.typedData, vector.signature), account, `${vector.name}: recovers to the account`)
  }
})
