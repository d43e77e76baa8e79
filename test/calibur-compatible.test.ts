import { readFileSync } from 'node:fs'
import t from 'tap'
import {
  type Address,
  BaseError,
  type Hex,
  concat,
  createPublicClient,
  createWalletClient,
  encodeAbiParameters,
  encodeFunctionData,
  erc20Abi,
  getAddress,
  size as hexSize,
  http,
  keccak256,
  toFunctionSelector,
  toHex,
  zeroAddress,
  zeroHash,
} from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { devnetChain } from '../core/devnet/chain.ts'
import { caliburCompatibleArtifact } from '../contracts/artifacts.ts'
import { startAnvil } from '../core/devnet/anvil.ts'
import { weth9Artifact } from '../core/devnet/artifacts.ts'

// The known answer from the real Calibur: this delegate must accept it unchanged.
type Vector = {
  chainId: number
  caliburAddress: Address
  account: Address
  signerPrivateKey: Hex
  relayer: Address
  delegation: { accountCode: Hex }
  batchedCall: { calls: { to: Address; value: string; data: Hex }[]; revertOnFailure: boolean }
  typedData: {
    domain: { name: string; version: string; chainId: number; verifyingContract: Address; salt: Hex }
    types: Record<string, { name: string; type: string }[]>
  }
  domainSeparator: Hex
  structHash: Hex
  digest: Hex
  signature: Hex
  wrappedSignature: Hex
  executeCalldata: Hex
  errorSelectors: Record<string, Hex>
  execution: { gasUsed: string }
  observedReverts: Record<string, { how: string; selector: Hex; error: string }>
  gas: {
    ownerPath: { calldata: Hex; estimateGasCold: string; estimateGasWarm: string }
    signedPath: { estimateGasCold: string; estimateGasWarm: string }
  }
}
const vectorFile = new URL('../golden/calibur-vectors.json', import.meta.url)
const vector = (JSON.parse(readFileSync(vectorFile, 'utf8')) as { vectors: Vector[] }).vectors[0]!

// anvil's well-known keys: #0 deploys (its nonces 0 and 1 give the vector's two addresses) and #2
// relays. The vector's test ERC20 only has to take `approve`: WETH9 does.
const deployerKey = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80'
const relayerKey = '0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a'
const tokenAddress = '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512'
const spender = '0x2222222222222222222222222222222222222222'

const abi = caliburCompatibleArtifact.abi
const anvil = await startAnvil({ chainId: vector.chainId })
t.teardown(() => anvil.stop())
const transport = http(anvil.rpcUrl)
const client = createPublicClient({ chain: devnetChain(), transport, pollingInterval: 50 })
const deployer = createWalletClient({ account: privateKeyToAccount(deployerKey), chain: devnetChain(), transport })
const relayer = createWalletClient({ account: privateKeyToAccount(relayerKey), chain: devnetChain(), transport })
const signer = privateKeyToAccount(vector.signerPrivateKey)
const account = vector.account

const mined = async (hash: Hex) => {
  const receipt = await client.waitForTransactionReceipt({ hash })
  if (receipt.status !== 'success') throw new Error(`reverted: ${hash}`)
  return receipt
}

// Deployment order fixes the addresses: the delegate first (nonce 0), the token second (nonce 1).
const calibur = getAddress(
  (await mined(await deployer.deployContract({ ...caliburCompatibleArtifact, args: [zeroAddress] }))).contractAddress!,
)
const token = getAddress((await mined(await deployer.deployContract({ ...weth9Artifact }))).contractAddress!)

// A real EIP-7702 delegation: the account signs, anvil #0 sends the type-4 transaction.
const authorization = await deployer.signAuthorization({ account: signer, contractAddress: calibur })
await mined(await deployer.sendTransaction({ authorizationList: [authorization], to: account }))

type Call = { to: Address; value: bigint; data: Hex }
type SignedBatchedCall = {
  batchedCall: { calls: Call[]; revertOnFailure: boolean }
  nonce: bigint
  keyHash: Hex
  executor: Address
  deadline: bigint
}

const vectorCalls: Call[] = vector.batchedCall.calls.map((call) => ({ ...call, value: BigInt(call.value) }))
const types = {
  SignedBatchedCall: vector.typedData.types.SignedBatchedCall!,
  BatchedCall: vector.typedData.types.BatchedCall!,
  Call: vector.typedData.types.Call!,
}

const signedCall = (overrides: Partial<SignedBatchedCall> = {}): SignedBatchedCall => ({
  batchedCall: { calls: vectorCalls, revertOnFailure: true },
  nonce: 0n,
  keyHash: zeroHash,
  executor: zeroAddress,
  deadline: 0n,
  ...overrides,
})

// Signs with the vector's domain unless told otherwise; `EIP712Domain` is left for viem to derive
// from the domain's fields, so a domain without salt really is a 4-field domain.
const sign = (
  message: SignedBatchedCall,
  { key = vector.signerPrivateKey, domain = vector.typedData.domain as Record<string, unknown> } = {},
) =>
  privateKeyToAccount(key).signTypedData({
    domain,
    types,
    primaryType: 'SignedBatchedCall',
    message,
  })

const wrap = (signature: Hex) =>
  encodeAbiParameters([{ type: 'bytes' }, { type: 'bytes' }], [signature, '0x'])

const executeData = (message: SignedBatchedCall, wrappedSignature: Hex) =>
  encodeFunctionData({ abi, functionName: 'execute', args: [message, wrappedSignature] })

const getSeq = (key: bigint) => client.readContract({ address: account, abi, functionName: 'getSeq', args: [key] })

// The revert data's first four bytes, or undefined when the call succeeds.
async function revertSelector(request: { from: Address; data: Hex; to?: Address }): Promise<Hex | undefined> {
  try {
    await client.call({ account: request.from, to: request.to ?? account, data: request.data })
    return undefined
  } catch (error) {
    if (!(error instanceof BaseError)) throw error
    const withData = error.walk((inner) => typeof (inner as { data?: unknown }).data === 'string') as {
      data?: Hex
    } | null
    if (!withData?.data) throw error
    return withData.data.slice(0, 10) as Hex
  }
}

const estimate = (from: Address, data: Hex) => client.estimateGas({ account: from, to: account, data })
const gasReport: Record<string, { ours: bigint; calibur: bigint }> = {}

t.test('deployed where the vector expects, and the account delegates to it', async (t) => {
  t.equal(calibur, vector.caliburAddress)
  t.equal(token, tokenAddress)
  t.equal(await client.getCode({ address: account }), vector.delegation.accountCode)
  t.equal(await client.getCode({ address: account }), concat(['0xef0100', calibur.toLowerCase() as Hex]))
})

t.test('the account reports the vector\'s EIP-712 domain', async (t) => {
  const [fields, name, version, chainId, verifyingContract, salt, extensions] = await client.readContract({
    address: account,
    abi,
    functionName: 'eip712Domain',
  })
  const { domain } = vector.typedData
  t.same(
    { fields, name, version, chainId, verifyingContract, salt, extensions },
    {
      fields: '0x1f',
      name: domain.name,
      version: domain.version,
      chainId: BigInt(domain.chainId),
      verifyingContract: domain.verifyingContract,
      salt: domain.salt,
      extensions: [],
    },
  )
  t.equal(await client.readContract({ address: account, abi, functionName: 'domainSeparator' }), vector.domainSeparator)
  t.equal(
    await client.readContract({ address: account, abi, functionName: 'hashTypedData', args: [vector.structHash] }),
    vector.digest,
  )
})

t.test('the vector\'s exact calldata, sent by the vector\'s relayer, runs the batch', async (t) => {
  // What the vector's signature signs, re-encoded through our ABI, is the vector's calldata.
  t.equal(executeData(signedCall(), vector.wrappedSignature), vector.executeCalldata)
  t.equal(await sign(signedCall()), vector.signature)

  t.equal(await getSeq(0n), 0n)
  const ownerCold = await estimate(account, vector.gas.ownerPath.calldata)
  const signedCold = await estimate(vector.relayer, vector.executeCalldata)
  // Simulated first: no test spends ETH on a reverting transaction.
  t.equal(await revertSelector({ from: vector.relayer, data: vector.executeCalldata }), undefined)
  const receipt = await mined(
    await relayer.sendTransaction({ to: account, data: vector.executeCalldata }),
  )
  t.equal(receipt.status, 'success')
  t.equal(await getSeq(0n), 1n)
  t.equal(
    await client.readContract({ address: token, abi: erc20Abi, functionName: 'allowance', args: [account, spender] }),
    1000n,
  )

  // Warm: allowance already set, key 0's sequence slot already non-zero.
  const ownerWarm = await estimate(account, vector.gas.ownerPath.calldata)
  const next = signedCall({ nonce: 1n })
  const signedWarm = await estimate(vector.relayer, executeData(next, wrap(await sign(next))))
  gasReport['signed path, cold (gasUsed)'] = { ours: receipt.gasUsed, calibur: BigInt(vector.execution.gasUsed) }
  gasReport['signed path, cold (estimate)'] = { ours: signedCold, calibur: BigInt(vector.gas.signedPath.estimateGasCold) }
  gasReport['signed path, warm (estimate)'] = { ours: signedWarm, calibur: BigInt(vector.gas.signedPath.estimateGasWarm) }
  gasReport['owner path, cold (estimate)'] = { ours: ownerCold, calibur: BigInt(vector.gas.ownerPath.estimateGasCold) }
  gasReport['owner path, warm (estimate)'] = { ours: ownerWarm, calibur: BigInt(vector.gas.ownerPath.estimateGasWarm) }
  for (const [what, { ours, calibur }] of Object.entries(gasReport))
    t.comment(`gas ${what}: ours ${ours}, Calibur ${calibur} (${ours - calibur >= 0n ? '+' : ''}${ours - calibur})`)
})

// One way to make each mistake the vector recorded, run after the vector's batch (key 0's seq is 1).
const deployerAddress = deployer.account.address
const mistakes: Record<string, () => Promise<{ from: Address; data: Hex }>> = {
  replaySameCalldata: async () => ({ from: vector.relayer, data: vector.executeCalldata }),
  tamperedSignature: async () => {
    const message = signedCall({ nonce: await getSeq(0n) })
    const signature = await sign(message)
    const firstByte = Number.parseInt(signature.slice(2, 4), 16) ^ 0x01
    const tampered = `0x${firstByte.toString(16).padStart(2, '0')}${signature.slice(4)}` as Hex
    return { from: vector.relayer, data: executeData(message, wrap(tampered)) }
  },
  expiredDeadline: async () => {
    const { timestamp } = await client.getBlock()
    const message = signedCall({ nonce: await getSeq(0n), deadline: timestamp - 60n })
    return { from: vector.relayer, data: executeData(message, wrap(await sign(message))) }
  },
  wrongSigner: async () => {
    const message = signedCall({ nonce: await getSeq(0n) })
    return { from: vector.relayer, data: executeData(message, wrap(await sign(message, { key: relayerKey }))) }
  },
  wrongNonceSeq: async () => {
    const message = signedCall({ nonce: (await getSeq(0n)) + 5n })
    return { from: vector.relayer, data: executeData(message, wrap(await sign(message))) }
  },
  unwrappedRawSignature: async () => {
    const message = signedCall({ nonce: await getSeq(0n) })
    return { from: vector.relayer, data: executeData(message, await sign(message)) }
  },
  wrongExecutor: async () => {
    const message = signedCall({ nonce: await getSeq(0n), executor: deployerAddress })
    return { from: vector.relayer, data: executeData(message, wrap(await sign(message))) }
  },
  ownerPathFromStranger: async () => ({ from: vector.relayer, data: vector.gas.ownerPath.calldata }),
  wrongDomainVersion: async () => {
    const message = signedCall({ nonce: await getSeq(0n) })
    const domain = { ...vector.typedData.domain, version: '1' }
    return { from: vector.relayer, data: executeData(message, wrap(await sign(message, { domain }))) }
  },
  domainWithoutSalt: async () => {
    const message = signedCall({ nonce: await getSeq(0n) })
    const { salt: _salt, ...domain } = vector.typedData.domain
    return { from: vector.relayer, data: executeData(message, wrap(await sign(message, { domain }))) }
  },
  verifyingContractIsImplementation: async () => {
    const message = signedCall({ nonce: await getSeq(0n) })
    const domain = { ...vector.typedData.domain, verifyingContract: calibur }
    return { from: vector.relayer, data: executeData(message, wrap(await sign(message, { domain }))) }
  },
}

t.test('every mistake the vector recorded reverts with the recorded error', async (t) => {
  t.same(Object.keys(mistakes).sort(), Object.keys(vector.observedReverts).sort(), 'a case for each recorded mistake')
  for (const [name, recorded] of Object.entries(vector.observedReverts)) {
    const make = mistakes[name]
    if (!make) continue
    t.equal(recorded.selector, vector.errorSelectors[recorded.error], `${name}: the vector names its error`)
    t.equal(await revertSelector(await make()), recorded.selector, `${name} (${recorded.how}): ${recorded.error}`)
  }
})

const selectorOf = (error: string) => vector.errorSelectors[error]!

t.test('checks run in order: executor, deadline, nonce, signature', async (t) => {
  const { timestamp } = await client.getBlock()
  const stale = { deadline: timestamp - 60n, nonce: 99n }
  const badSignature = wrap(`0x${'11'.repeat(65)}`)
  t.equal(
    await revertSelector({
      from: vector.relayer,
      data: executeData(signedCall({ ...stale, executor: deployerAddress }), badSignature),
    }),
    selectorOf('Unauthorized()'),
  )
  t.equal(
    await revertSelector({ from: vector.relayer, data: executeData(signedCall(stale), badSignature) }),
    selectorOf('SignatureExpired()'),
  )
  t.equal(
    await revertSelector({ from: vector.relayer, data: executeData(signedCall({ nonce: 99n }), badSignature) }),
    selectorOf('InvalidNonce()'),
  )
})

t.test('signatures: EIP-2098 compact is accepted, other keys do not exist, other lengths fail', async (t) => {
  const message = signedCall({ nonce: await getSeq(0n) })
  const signature = await sign(message)
  // r ‖ (yParity << 255 | s)
  const r = signature.slice(2, 66)
  const s = BigInt(`0x${signature.slice(66, 130)}`)
  const yParity = BigInt(Number.parseInt(signature.slice(130), 16) - 27)
  const compact = `0x${r}${toHex((yParity << 255n) | s, { size: 32 }).slice(2)}` as Hex
  t.equal(await revertSelector({ from: vector.relayer, data: executeData(message, wrap(compact)) }), undefined)
  t.equal(await revertSelector({ from: vector.relayer, data: executeData(message, wrap(signature)) }), undefined)
  t.equal(
    await revertSelector({ from: vector.relayer, data: executeData(message, wrap(concat([signature, '0x00']))) }),
    selectorOf('InvalidSignature()'),
  )
  const otherKey = signedCall({ nonce: message.nonce, keyHash: `0x${'ab'.repeat(32)}` })
  t.equal(
    await revertSelector({ from: vector.relayer, data: executeData(otherKey, wrap(await sign(otherKey))) }),
    selectorOf('KeyDoesNotExist()'),
  )
  // A wrapper whose second offset points past the end.
  const truncated = wrap(signature).slice(0, 2 + 64 * 2) as Hex
  t.equal(
    await revertSelector({ from: vector.relayer, data: executeData(message, truncated) }),
    selectorOf('SliceOutOfBounds()'),
  )
})

t.test('ERC-1271 as Calibur answers it: the root key\'s raw signature, ERC-7739\'s sentinel, a wrapped one names a key', async (t) => {
  const isValid = (digest: Hex, signature: Hex) => client.readContract({ address: account, abi, functionName: 'isValidSignature', args: [digest, signature] })
  const digest = keccak256(toHex('a signed transfer the token checks'))
  const signature = await signer.sign({ hash: digest })
  const r = signature.slice(2, 66)
  const s = BigInt(`0x${signature.slice(66, 130)}`)
  const yParity = BigInt(Number.parseInt(signature.slice(130), 16) - 27)
  const compact = `0x${r}${toHex((yParity << 255n) | s, { size: 32 }).slice(2)}` as Hex
  t.equal(await isValid(digest, signature), '0x1626ba7e', 'the account\'s own key, 65 bytes')
  t.equal(await isValid(digest, compact), '0x1626ba7e', 'the account\'s own key, EIP-2098\'s 64 bytes')
  t.equal(await isValid(keccak256(digest), signature), '0xffffffff', 'another digest')
  t.equal(await isValid(digest, await privateKeyToAccount(deployerKey).sign({ hash: digest })), '0xffffffff', 'another key')
  t.equal(await isValid(`0x${'7739'.repeat(16)}`, '0x'), '0x77390001', 'ERC-7739\'s sentinel')
  const wrapped = (keyHash: Hex) => encodeAbiParameters([{ type: 'bytes32' }, { type: 'bytes' }, { type: 'bytes' }], [keyHash, signature, '0x'])
  t.equal(await isValid(digest, wrapped(zeroHash)), '0xffffffff', 'the root key wrapped: ERC-7739\'s nested forms are left out')
  const readSelector = (signatureBytes: Hex) => revertSelector({ from: vector.relayer, data: encodeFunctionData({ abi, functionName: 'isValidSignature', args: [digest, signatureBytes] }) })
  t.equal(await readSelector(wrapped(`0x${'ab'.repeat(32)}`)), selectorOf('KeyDoesNotExist()'))
  t.equal(await readSelector(encodeAbiParameters([{ type: 'bytes32' }, { type: 'bytes' }, { type: 'bytes' }], [zeroHash, '0x1234', '0x'])), toFunctionSelector('InvalidSignatureLength()'))
  t.equal(await readSelector(wrapped(zeroHash).slice(0, 2 + 96 * 2) as Hex), selectorOf('SliceOutOfBounds()'), 'a wrapper cut short')
  t.equal(await readSelector('0x'), selectorOf('SliceOutOfBounds()'), 'an empty signature of any other digest is read as a wrapped one')
})

t.test('batches: a failing call reverts with CallFailed, or is passed over without revertOnFailure', async (t) => {
  // WETH9's transferFrom from an account holding nothing reverts without data.
  const failing: Call = {
    to: token,
    value: 0n,
    data: encodeFunctionData({ abi: erc20Abi, functionName: 'transferFrom', args: [spender, account, 1n] }),
  }
  const nonce = await getSeq(0n)
  const strict = signedCall({ nonce, batchedCall: { calls: [failing], revertOnFailure: true } })
  t.equal(
    await revertSelector({ from: vector.relayer, data: executeData(strict, wrap(await sign(strict))) }),
    selectorOf('CallFailed(bytes)'),
  )
  const lenient = signedCall({ nonce, batchedCall: { calls: [failing], revertOnFailure: false } })
  const lenientData = executeData(lenient, wrap(await sign(lenient)))
  t.equal(await revertSelector({ from: vector.relayer, data: lenientData }), undefined)
})

// DESIGN §4, measured on the real Calibur: the signed path costs ≈1,700 gas more than the owner path
// for each extra 68-byte call (it copies the batch into memory to hash it, and again to run it). The
// stand-in must cost at least as much, or a gas allowance calibrated on it undercounts the real one.
const realCaliburSignedOverOwnerPerCall = 1_700n

t.test('signed path minus owner path, per extra 68-byte ERC-20 transfer, is at least the real Calibur\'s', async (t) => {
  // The account holds WETH, so every transfer moves a unit to a recipient of its own.
  const deposit = encodeFunctionData({ abi: weth9Artifact.abi, functionName: 'deposit' })
  await mined(await deployer.sendTransaction({ to: token, value: 10n ** 18n, data: deposit }))
  await mined(
    await deployer.writeContract({ address: token, abi: erc20Abi, functionName: 'transfer', args: [account, 10n ** 18n] }),
  )
  const transfers = (count: number): Call[] =>
    Array.from({ length: count }, (_, i) => ({
      to: token,
      value: 0n,
      data: encodeFunctionData({
        abi: erc20Abi,
        functionName: 'transfer',
        args: [toHex(0x10000n + BigInt(i), { size: 20 }), 1n],
      }),
    }))
  t.equal(hexSize(transfers(1)[0]!.data), 68, 'each call carries 68 bytes of data')

  // Both paths from the same state (estimates: no transaction is sent), the batch in the same encoding.
  const nonce = await getSeq(0n)
  const signedOverOwner = async (count: number) => {
    const batchedCall = { calls: transfers(count), revertOnFailure: true }
    const owner = await estimate(account, encodeFunctionData({ abi, functionName: 'execute', args: [batchedCall] }))
    const message = signedCall({ nonce, batchedCall })
    const signed = await estimate(vector.relayer, executeData(message, wrap(await sign(message))))
    return { owner, signed, difference: signed - owner }
  }
  const one = await signedOverOwner(1)
  t.comment(`gas, 1 call: owner path ${one.owner}, signed path ${one.signed} (+${one.difference})`)
  for (const count of [2, 8, 16, 32]) {
    const { owner, signed, difference } = await signedOverOwner(count)
    const perExtraCall = (difference - one.difference) / BigInt(count - 1)
    t.comment(
      `gas, ${count} calls: owner path ${owner}, signed path ${signed} (+${difference}); ` +
        `signed − owner per extra call ${perExtraCall}`,
    )
    t.ok(
      perExtraCall >= realCaliburSignedOverOwnerPerCall,
      `${count} calls: the signed path costs ${perExtraCall} more per extra call (real Calibur ≈${realCaliburSignedOverOwnerPerCall})`,
    )
  }
})

t.test('ERC-7821 execute: batch modes only, from the account only', async (t) => {
  const callComponents = [
    { name: 'to', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'data', type: 'bytes' },
  ] as const
  const batch = encodeAbiParameters([{ type: 'tuple[]', components: callComponents }], [vectorCalls])
  const mode = (hex: string) => `0x${hex.padEnd(64, '0')}` as Hex
  const data = (m: Hex) => encodeFunctionData({ abi, functionName: 'execute', args: [m, batch] })
  t.equal(await revertSelector({ from: account, data: data(mode('01')) }), undefined)
  t.equal(await revertSelector({ from: account, data: data(mode('0101')) }), undefined)
  t.equal(await revertSelector({ from: account, data: data(mode('00')) }), selectorOf('UnsupportedExecutionMode()'))
  t.equal(
    await revertSelector({ from: account, data: data(mode('01000000000078210001')) }),
    selectorOf('UnsupportedExecutionMode()'),
  )
  t.equal(await revertSelector({ from: vector.relayer, data: data(mode('01')) }), selectorOf('Unauthorized()'))
})

t.test('updateSalt: only the account, and it moves the domain', async (t) => {
  const prefix = 7n
  const updateSalt = encodeFunctionData({ abi, functionName: 'updateSalt', args: [prefix] })
  t.equal(await revertSelector({ from: vector.relayer, data: updateSalt }), selectorOf('Unauthorized()'))
  // A call to address(0) in a batch is a call to the account itself, so a signed batch may do it.
  const message = signedCall({
    nonce: await getSeq(0n),
    batchedCall: { calls: [{ to: zeroAddress, value: 0n, data: updateSalt }], revertOnFailure: true },
  })
  const data = executeData(message, wrap(await sign(message)))
  t.equal(await revertSelector({ from: vector.relayer, data }), undefined)
  await mined(await relayer.sendTransaction({ to: account, data }))
  const [, , , , , salt] = await client.readContract({ address: account, abi, functionName: 'eip712Domain' })
  t.equal(salt, toHex((prefix << 160n) | BigInt(calibur), { size: 32 }))
  t.not(await client.readContract({ address: account, abi, functionName: 'domainSeparator' }), vector.domainSeparator)
})
