import { readFileSync } from 'node:fs'
import t from 'tap'
import {
  concat,
  createPublicClient,
  createTestClient,
  createWalletClient,
  encodeAbiParameters,
  encodeFunctionData,
  encodePacked,
  getAddress,
  hashDomain,
  hashStruct,
  hashTypedData,
  http,
  keccak256,
  parseAbi,
  parseEther,
  parseSignature,
  recoverAddress,
  serializeSignature,
  toFunctionSelector,
  toHex,
  zeroAddress,
  zeroHash,
  type Address,
  type Hex,
} from 'viem'
import { privateKeyToAccount, sign } from 'viem/accounts'
import { devnetChain } from '../core/devnet/chain.ts'
import { startAnvil } from '../core/devnet/anvil.ts'
import { deployDevnet } from '../core/devnet/deploy.ts'
import { CALIBUR_ADDRESS } from '../plugins/calibur/networkOptions.ts'

// Every entry of golden/*.json checked against sources that are not the encoders it pins
// (golden/README.md says which, per file). Nothing from core/ or plugins/ that encodes is imported:
// the expected bytes come from viem's own encoders fed the ABIs, types and type strings as their
// standards and contracts publish them, from the EIPs' published constants and worked examples,
// from what the real Calibur reported (golden/calibur-vectors.json), and from the devnet's real
// contracts (FiatTokenV2_2, WETH9, SwapRouter02, QuoterV2) and our Calibur-compatible delegate.

const read = <T>(name: string): T => JSON.parse(readFileSync(new URL(`../golden/${name}`, import.meta.url), 'utf8')) as T
type Call = { to: Address; value: string; data: Hex }

// ---- Published ABIs, written from the signatures (EIP-20, WETH9, SwapRouter02, EIP-3009, Calibur).
const erc20 = parseAbi([
  'function approve(address spender, uint256 value) returns (bool)',
  'function transfer(address to, uint256 value) returns (bool)',
  'function allowance(address owner, address spender) view returns (uint256)',
  'function balanceOf(address owner) view returns (uint256)',
])
const weth9 = parseAbi(['function withdraw(uint256 wad)', 'function deposit() payable'])
// SwapRouter02 (Uniswap/swap-router-contracts): IMulticall, IV3SwapRouter, IPeripheryPayments.
const swapRouter02 = parseAbi([
  'function multicall(bytes[] data) payable returns (bytes[] results)',
  'struct ExactInputParams { bytes path; address recipient; uint256 amountIn; uint256 amountOutMinimum; }',
  'function exactInput(ExactInputParams params) payable returns (uint256 amountOut)',
  'function unwrapWETH9(uint256 amountMinimum, address recipient) payable',
])
// SwapRouter02's Constants.ADDRESS_THIS: "the router itself" as a recipient.
const ADDRESS_THIS: Address = '0x0000000000000000000000000000000000000002'
const quoterV2 = parseAbi([
  'function quoteExactInput(bytes path, uint256 amountIn) returns (uint256 amountOut, uint160[] sqrtPriceX96AfterList, uint32[] initializedTicksCrossedList, uint256 gasEstimate)',
])
const fiatToken = parseAbi([
  'function DOMAIN_SEPARATOR() view returns (bytes32)',
  'function TRANSFER_WITH_AUTHORIZATION_TYPEHASH() view returns (bytes32)',
  'function authorizationState(address authorizer, bytes32 nonce) view returns (bool)',
  'function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, uint8 v, bytes32 r, bytes32 s)',
])
// Calibur (Uniswap/calibur): the signed and the owner execute, and the views the vector names.
const calibur = parseAbi([
  'struct Call { address to; uint256 value; bytes data; }',
  'struct BatchedCall { Call[] calls; bool revertOnFailure; }',
  'struct SignedBatchedCall { BatchedCall batchedCall; uint256 nonce; bytes32 keyHash; address executor; uint256 deadline; }',
  'function execute(SignedBatchedCall signedBatchedCall, bytes wrappedSignature) payable',
  'function execute(BatchedCall batchedCall) payable',
  'function getSeq(uint256 key) view returns (uint256)',
  'function domainSeparator() view returns (bytes32)',
  'function hashTypedData(bytes32 hash) view returns (bytes32)',
])

// ---- EIP-712 types as the standards publish them.
// EIP-3009: "TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)".
const transferWithAuthorizationTypes = {
  TransferWithAuthorization: [
    { name: 'from', type: 'address' },
    { name: 'to', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'validAfter', type: 'uint256' },
    { name: 'validBefore', type: 'uint256' },
    { name: 'nonce', type: 'bytes32' },
  ],
} as const
// EIP-3009 lists this constant: keccak256 of the type string above.
const EIP3009_TRANSFER_TYPEHASH = '0x7c7c6cdb67a18743f49ec6fa9b35f50d52ed05cbed4cc592e13b44501c1a2267'
// Calibur's type strings (src/libraries/*Lib.sol), as the real contract hashes them:
// SignedBatchedCall(BatchedCall batchedCall,uint256 nonce,bytes32 keyHash,address executor,uint256 deadline)
// BatchedCall(Call[] calls,bool revertOnFailure)  Call(address to,uint256 value,bytes data)
const caliburTypes = {
  SignedBatchedCall: [
    { name: 'batchedCall', type: 'BatchedCall' },
    { name: 'nonce', type: 'uint256' },
    { name: 'keyHash', type: 'bytes32' },
    { name: 'executor', type: 'address' },
    { name: 'deadline', type: 'uint256' },
  ],
  BatchedCall: [
    { name: 'calls', type: 'Call[]' },
    { name: 'revertOnFailure', type: 'bool' },
  ],
  Call: [
    { name: 'to', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'data', type: 'bytes' },
  ],
} as const
// EIP-712's EIP712Domain fields, in the order the EIP gives them.
const domainFields = [
  { name: 'name', type: 'string' },
  { name: 'version', type: 'string' },
  { name: 'chainId', type: 'uint256' },
  { name: 'verifyingContract', type: 'address' },
] as const
const saltedDomainFields = [...domainFields, { name: 'salt', type: 'bytes32' }] as const
type CaliburMessage = {
  batchedCall: { calls: { to: Address; value: bigint; data: Hex }[]; revertOnFailure: boolean }
  nonce: bigint
  keyHash: Hex
  executor: Address
  deadline: bigint
}
const caliburDomain = (chainId: number, account: Address, salt: Hex) => ({ name: 'Calibur', version: '1.0.0', chainId, verifyingContract: account, salt })
const caliburDigest = (domain: ReturnType<typeof caliburDomain>, message: CaliburMessage) =>
  hashTypedData({ domain, types: caliburTypes, primaryType: 'SignedBatchedCall', message })
const batchOf = (calls: readonly Call[], revertOnFailure: boolean) => ({
  calls: calls.map((call) => ({ to: getAddress(call.to), value: BigInt(call.value), data: call.data })),
  revertOnFailure,
})
// Calibur's wrapped signature: abi.encode(bytes signature, bytes hookData).
const wrap = (signature: Hex, hookData: Hex = '0x') => encodeAbiParameters([{ type: 'bytes' }, { type: 'bytes' }], [signature, hookData])
// A signature over a digest as it stands: secp256k1 alone, no EIP-712 code involved.
const signDigest = async (hash: Hex, privateKey: Hex) => serializeSignature(await sign({ hash, privateKey }))
const stripped = (value: unknown) => JSON.parse(JSON.stringify(value, (_, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))) as unknown

// ---- The golden files.
type Erc20Vector = { name: string; encoder: 'encodeApprove' | 'encodeTransfer' | 'encodeWethWithdraw'; input: Record<string, string>; calls: Call[] }
type SwapVector = {
  name: string
  input: { router: Address; hops: { tokenIn: Address; fee: number; tokenOut: Address }[]; amountInBaseUnits: string; expectedOutWei: string; slippageBps: number; recipient: Address }
  path: Hex
  minimumOutWei: string
  calls: Call[]
}
type Golden3009 = {
  signerPrivateKey: Hex
  inputs: { token: { address: Address; name: string; version: string; chainId: number }; from: Address; to: Address; value: string; validAfter: string; validBefore: string; nonce: Hex }
  typedData: { domain: unknown; types: Record<string, unknown>; primaryType: string; message: Record<string, string> }
  typeHash: Hex
  domainSeparator: Hex
  structHash: Hex
  digest: Hex
  signature: Hex
  v: number
  r: Hex
  s: Hex
}
type CaliburGoldenVector = {
  name: string
  inputs: { domain: { chainId: number; account: Address; salt: Hex }; batch: { calls: Call[]; revertOnFailure: boolean }; nonceKey: string; nonceSeq: string; deadline: string; executor: Address; keyHash: Hex }
  typedData: unknown
  domainSeparator: Hex
  structHash: Hex
  digest: Hex
  signature: Hex
  wrappedSignature: Hex
  executeCalldata: Hex
  ownerExecuteCalldata: Hex
}
type RealCaliburVector = {
  chainId: number
  caliburAddress: Address
  account: Address
  signerPrivateKey: Hex
  delegation: { accountCode: Hex }
  batchedCall: { calls: Call[]; revertOnFailure: boolean }
  nonce: { value: string; key: string; seq: string }
  keyHash: Hex
  executor: Address
  deadline: string
  typedData: { domain: { salt: Hex } }
  typeStrings: Record<string, string>
  typeHashes: Record<string, Hex>
  domainSeparator: Hex
  domainSeparatorFromContract: Hex
  structHash: Hex
  digest: Hex
  digestFromContractHashTypedData: Hex
  signature: Hex
  hookData: Hex
  wrappedSignature: Hex
  executeCalldata: Hex
  executeFunction: string
  selectors: Record<string, Hex>
  errorSelectors: Record<string, Hex>
  gas: { ownerPath: { calldata: Hex } }
  acceptedByRealCalibur: boolean
}

const erc20Golden = read<{ vectors: Erc20Vector[] }>('erc20.json').vectors
const uniswapGolden = read<{ vectors: SwapVector[] }>('uniswap.json').vectors
const golden3009 = read<Golden3009>('3009.json')
const caliburGolden = read<{ signerPrivateKey: Hex; vectors: CaliburGoldenVector[] }>('calibur.json')
const [realCalibur] = read<{ vectors: RealCaliburVector[] }>('calibur-vectors.json').vectors
if (!realCalibur) throw new Error('golden/calibur-vectors.json holds no vector')

/** An erc20.json vector's call, encoded by viem from the published signature. */
function erc20CallOf(vector: Erc20Vector): Call {
  const { input } = vector
  switch (vector.encoder) {
    case 'encodeApprove':
      return { to: getAddress(input.token!), value: '0', data: encodeFunctionData({ abi: erc20, functionName: 'approve', args: [getAddress(input.spender!), BigInt(input.amountBaseUnits!)] }) }
    case 'encodeTransfer':
      return { to: getAddress(input.token!), value: '0', data: encodeFunctionData({ abi: erc20, functionName: 'transfer', args: [getAddress(input.to!), BigInt(input.amountBaseUnits!)] }) }
    case 'encodeWethWithdraw':
      return { to: getAddress(input.weth!), value: '0', data: encodeFunctionData({ abi: weth9, functionName: 'withdraw', args: [BigInt(input.amountWei!)] }) }
  }
}

// ==== Without a chain: viem, the EIPs, the real Calibur's own figures.

t.test('viem itself reproduces EIP-712\'s worked example (the Mail of Cow to Bob)', async (t) => {
  // From EIP-712 (assets/eip-712/Example.js): its domain separator, Mail hash, digest and Cow's
  // signature. If viem agreed with our encoders but not with the EIP, it would not be a witness.
  const types = {
    Person: [{ name: 'name', type: 'string' }, { name: 'wallet', type: 'address' }],
    Mail: [{ name: 'from', type: 'Person' }, { name: 'to', type: 'Person' }, { name: 'contents', type: 'string' }],
  } as const
  const domain = { name: 'Ether Mail', version: '1', chainId: 1, verifyingContract: '0xCcCCccccCCCCcCCCCCCcCcCccCcCCCcCcccccccC' } as const
  const message = {
    from: { name: 'Cow', wallet: '0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826' },
    to: { name: 'Bob', wallet: '0xbBbBBBBbbBBBbbbBbbBbbbbBBbBbbbbBbBbbBBbB' },
    contents: 'Hello, Bob!',
  } as const
  t.equal(hashDomain({ domain: { ...domain, chainId: 1n }, types: { EIP712Domain: domainFields } }), '0xf2cee375fa42b42143804025fc449deafd50cc031ca257e0b194a650a912090f', 'domain separator')
  t.equal(hashStruct({ data: message, primaryType: 'Mail', types }), '0xc52c0ee5d84264471806290a3f2c4cecfc5490626bf912d01f240d7a274b371e', 'hashStruct(mail)')
  const digest = hashTypedData({ domain, types, primaryType: 'Mail', message })
  t.equal(digest, '0xbe609aee343fb3c4b28e1df9e632fca64fcfaede20f02e86244efddf30957bd2', 'digest')
  const cow = keccak256(toHex('cow'))
  t.equal(privateKeyToAccount(cow).address, message.from.wallet)
  const { v, r, s } = parseSignature(await signDigest(digest, cow))
  t.strictSame({ v, r, s }, { v: 28n, r: '0x4355c47d63924e8a72e509b65029052eb6c299d53a04e167c5775fd466751c9d', s: '0x07299936d304c153f6443dfa05f40ff007d72911b6f72307f996231605b91562' }, 'Cow\'s signature')
})

t.test('golden/erc20.json: viem encodes each call from the EIP-20 and WETH9 signatures', async (t) => {
  t.ok(erc20Golden.length >= 8)
  for (const vector of erc20Golden) t.strictSame(vector.calls, [erc20CallOf(vector)], vector.name)
})

t.test('golden/uniswap.json: encodePacked for the path, viem and SwapRouter02\'s signatures for the calls', async (t) => {
  t.ok(uniswapGolden.length >= 3)
  for (const { name, input, path, minimumOutWei, calls } of uniswapGolden) {
    // Uniswap V3's path: tokenIn, then (fee uint24, token) per hop, packed.
    const types = ['address', ...input.hops.flatMap(() => ['uint24', 'address'])]
    const values = [input.hops[0]!.tokenIn, ...input.hops.flatMap((hop) => [hop.fee, hop.tokenOut])]
    t.equal(path, encodePacked(types, values), `${name}: path`)
    for (const [index, hop] of input.hops.entries()) if (index > 0) t.equal(hop.tokenIn, input.hops[index - 1]!.tokenOut, `${name}: hops chain`)
    // The slippage floor, rounded so the floor never exceeds what the bps allow.
    const expected = BigInt(input.expectedOutWei)
    t.equal(BigInt(minimumOutWei), expected - (expected * BigInt(input.slippageBps) + 9_999n) / 10_000n, `${name}: minimumOutWei`)
    const swap = encodeFunctionData({ abi: swapRouter02, functionName: 'exactInput', args: [{ path, recipient: ADDRESS_THIS, amountIn: BigInt(input.amountInBaseUnits), amountOutMinimum: 0n }] })
    const unwrap = encodeFunctionData({ abi: swapRouter02, functionName: 'unwrapWETH9', args: [BigInt(minimumOutWei), getAddress(input.recipient)] })
    t.strictSame(calls, [{ to: getAddress(input.router), value: '0', data: encodeFunctionData({ abi: swapRouter02, functionName: 'multicall', args: [[swap, unwrap]] }) }], `${name}: calls`)
  }
})

t.test('golden/3009.json: EIP-3009\'s type hash, viem\'s EIP-712 over the published type, secp256k1 over the digest', async (t) => {
  const { inputs } = golden3009
  t.equal(golden3009.typeHash, EIP3009_TRANSFER_TYPEHASH, 'the type hash EIP-3009 publishes')
  t.equal(keccak256(toHex('TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)')), EIP3009_TRANSFER_TYPEHASH)
  const domain = { name: inputs.token.name, version: inputs.token.version, chainId: inputs.token.chainId, verifyingContract: getAddress(inputs.token.address) }
  const message = {
    from: getAddress(inputs.from),
    to: getAddress(inputs.to),
    value: BigInt(inputs.value),
    validAfter: BigInt(inputs.validAfter),
    validBefore: BigInt(inputs.validBefore),
    nonce: inputs.nonce,
  }
  t.equal(golden3009.domainSeparator, hashDomain({ domain: { ...domain, chainId: BigInt(domain.chainId) }, types: { EIP712Domain: domainFields } }), 'domain separator')
  t.equal(golden3009.structHash, hashStruct({ data: message, primaryType: 'TransferWithAuthorization', types: transferWithAuthorizationTypes }), 'struct hash')
  const digest = hashTypedData({ domain, types: transferWithAuthorizationTypes, primaryType: 'TransferWithAuthorization', message })
  t.equal(golden3009.digest, digest, 'digest')
  t.strictSame(golden3009.typedData, stripped({ domain, types: { EIP712Domain: domainFields, ...transferWithAuthorizationTypes }, primaryType: 'TransferWithAuthorization', message }), 'the typed data a wallet is given')
  t.equal(privateKeyToAccount(golden3009.signerPrivateKey).address, message.from)
  t.equal(golden3009.signature, await signDigest(digest, golden3009.signerPrivateKey), 'the signature: RFC 6979 over the digest')
  const { v, r, s } = parseSignature(golden3009.signature)
  t.strictSame({ v: golden3009.v, r: golden3009.r, s: golden3009.s }, { v: Number(v), r, s }, '(v, r, s)')
})

t.test('golden/calibur-vectors.json: what the real Calibur reported agrees with viem, EIP-712 and EIP-7702', async (t) => {
  const vector = realCalibur
  t.equal(vector.acceptedByRealCalibur, true)
  // The type strings the real contract hashes, and viem with the types written from them.
  for (const [name, typeString] of Object.entries(vector.typeStrings)) t.equal(keccak256(toHex(typeString)), vector.typeHashes[name], `type hash of ${name}`)
  t.equal(vector.typeStrings.SignedBatchedCall, 'SignedBatchedCall(BatchedCall batchedCall,uint256 nonce,bytes32 keyHash,address executor,uint256 deadline)BatchedCall(Call[] calls,bool revertOnFailure)Call(address to,uint256 value,bytes data)')
  // Calibur's salt: bytes32(prefix << 160 | implementation), prefix 0.
  t.equal(vector.typedData.domain.salt, toHex(BigInt(vector.caliburAddress), { size: 32 }))
  const domain = caliburDomain(vector.chainId, vector.account, vector.typedData.domain.salt)
  const message: CaliburMessage = {
    batchedCall: batchOf(vector.batchedCall.calls, vector.batchedCall.revertOnFailure),
    nonce: (BigInt(vector.nonce.key) << 64n) | BigInt(vector.nonce.seq),
    keyHash: vector.keyHash,
    executor: vector.executor,
    deadline: BigInt(vector.deadline),
  }
  t.equal(message.nonce, BigInt(vector.nonce.value), 'nonce = key << 64 | seq')
  t.equal(hashDomain({ domain: { ...domain, chainId: BigInt(domain.chainId) }, types: { EIP712Domain: saltedDomainFields } }), vector.domainSeparatorFromContract, 'the contract\'s domainSeparator()')
  t.equal(vector.domainSeparator, vector.domainSeparatorFromContract)
  t.equal(hashStruct({ data: message, primaryType: 'SignedBatchedCall', types: caliburTypes }), vector.structHash, 'struct hash')
  const digest = caliburDigest(domain, message)
  t.equal(digest, vector.digestFromContractHashTypedData, 'the contract\'s hashTypedData(structHash)')
  t.equal(vector.digest, digest)
  t.equal(await recoverAddress({ hash: digest, signature: vector.signature }), vector.account, 'the signature recovers to the account')
  t.equal(vector.signature, await signDigest(digest, vector.signerPrivateKey), 'RFC 6979 over the digest')
  t.equal(vector.wrappedSignature, wrap(vector.signature, vector.hookData), 'abi.encode(signature, hookData)')
  t.equal(vector.executeCalldata, encodeFunctionData({ abi: calibur, functionName: 'execute', args: [message, vector.wrappedSignature] }), 'signed execute calldata')
  t.equal(vector.gas.ownerPath.calldata, encodeFunctionData({ abi: calibur, functionName: 'execute', args: [message.batchedCall] }), 'owner execute calldata')
  t.ok(vector.selectors[vector.executeFunction], 'the execute function is among the selectors')
  for (const [signature, selector] of Object.entries({ ...vector.selectors, ...vector.errorSelectors })) t.equal(toFunctionSelector(signature), selector, signature)
  // EIP-7702: a delegated account's code is the designator 0xef0100 ‖ address.
  t.equal(vector.delegation.accountCode, concat(['0xef0100', vector.caliburAddress]).toLowerCase(), 'the EIP-7702 delegation designator')
})

/** A calibur.json vector's message, built here from its inputs. */
function caliburMessageOf({ inputs }: CaliburGoldenVector): CaliburMessage {
  return {
    batchedCall: batchOf(inputs.batch.calls, inputs.batch.revertOnFailure),
    nonce: (BigInt(inputs.nonceKey) << 64n) | BigInt(inputs.nonceSeq),
    keyHash: inputs.keyHash,
    executor: inputs.executor,
    deadline: BigInt(inputs.deadline),
  }
}

t.test('golden/calibur.json: viem over Calibur\'s published types, secp256k1 over the digest, Calibur\'s ABI', async (t) => {
  t.ok(caliburGolden.vectors.length >= 4)
  for (const vector of caliburGolden.vectors) {
    const { name, inputs } = vector
    const domain = caliburDomain(inputs.domain.chainId, inputs.domain.account, inputs.domain.salt)
    const message = caliburMessageOf(vector)
    t.ok(BigInt(inputs.nonceKey) < 1n << 192n && BigInt(inputs.nonceSeq) < 1n << 64n, `${name}: the nonce's key and seq fit their 192 and 64 bits`)
    t.strictSame(vector.typedData, stripped({ domain, types: { EIP712Domain: saltedDomainFields, ...caliburTypes }, primaryType: 'SignedBatchedCall', message }), `${name}: typed data`)
    t.equal(vector.domainSeparator, hashDomain({ domain: { ...domain, chainId: BigInt(domain.chainId) }, types: { EIP712Domain: saltedDomainFields } }), `${name}: domain separator`)
    t.equal(vector.structHash, hashStruct({ data: message, primaryType: 'SignedBatchedCall', types: caliburTypes }), `${name}: struct hash`)
    const digest = caliburDigest(domain, message)
    t.equal(vector.digest, digest, `${name}: digest`)
    t.equal(vector.signature, await signDigest(digest, caliburGolden.signerPrivateKey), `${name}: RFC 6979 over the digest`)
    t.equal(vector.wrappedSignature, wrap(vector.signature), `${name}: abi.encode(signature, '0x')`)
    t.equal(vector.executeCalldata, encodeFunctionData({ abi: calibur, functionName: 'execute', args: [message, vector.wrappedSignature] }), `${name}: signed execute calldata`)
    t.equal(vector.ownerExecuteCalldata, encodeFunctionData({ abi: calibur, functionName: 'execute', args: [message.batchedCall] }), `${name}: owner execute calldata`)
  }
  // calibur_batch's layout: a payment-only batch (one transfer), then the account's calls at the next seq of the
  // same key, both all or nothing and both for the same executor (the Runner).
  const paymentOnly = caliburGolden.vectors.find((vector) => vector.name.startsWith('payment only'))!
  const accountCalls = caliburGolden.vectors.find((vector) => vector.name.startsWith('the account\'s calls'))!
  const [leg, ...more] = paymentOnly.inputs.batch.calls
  t.equal(more.length, 0, 'the payment batch holds one call')
  t.equal(paymentOnly.inputs.batch.revertOnFailure, true, 'the payment batch is all or nothing')
  t.equal(leg!.data.slice(0, 10), toFunctionSelector('transfer(address,uint256)'))
  t.equal(accountCalls.inputs.batch.revertOnFailure, true, 'the account\'s calls all or nothing')
  t.equal(accountCalls.inputs.nonceKey, paymentOnly.inputs.nonceKey, 'one nonce key')
  t.equal(BigInt(accountCalls.inputs.nonceSeq), BigInt(paymentOnly.inputs.nonceSeq) + 1n, 'the calls at the seq after the payment')
  t.equal(accountCalls.inputs.executor, paymentOnly.inputs.executor, 'one executor for both')
  t.not(paymentOnly.inputs.executor, zeroAddress, 'not anyone: the Runner')
})

// ==== On the devnet: the real FiatTokenV2_2, WETH9, SwapRouter02 and QuoterV2, and our delegate.

const anvil = await startAnvil()
t.teardown(() => anvil.stop())
const devnet = await deployDevnet(anvil.rpcUrl)
const chain = devnetChain(devnet.chainId)
const client = createPublicClient({ chain, transport: http(anvil.rpcUrl), pollingInterval: 50 })
const walletOf = (privateKey: Hex) => createWalletClient({ account: privateKeyToAccount(privateKey), chain, transport: http(anvil.rpcUrl) })
async function mined(hash: Hex) {
  const receipt = await client.waitForTransactionReceipt({ hash })
  if (receipt.status !== 'success') throw new Error(`reverted: ${hash}`)
  return receipt
}
const usdcBalance = (owner: Address) => client.readContract({ address: devnet.usdc, abi: erc20, functionName: 'balanceOf', args: [owner] })

t.test('the devnet is where the "devnet:" vectors say', async (t) => {
  t.equal(devnet.usdc, golden3009.inputs.token.address, 'USDC (3009.json)')
  const devnetSwap = uniswapGolden.find((vector) => vector.name.startsWith('devnet:'))!
  t.equal(devnet.uniswap.swapRouter02, devnetSwap.input.router, 'SwapRouter02 (uniswap.json)')
  t.strictSame(devnetSwap.input.hops, [{ tokenIn: devnet.usdc, fee: devnet.uniswap.usdcWethFee, tokenOut: devnet.weth }], 'the USDC/WETH pool (uniswap.json)')
  t.equal(toHex(BigInt(CALIBUR_ADDRESS), { size: 32 }), caliburGolden.vectors[0]!.inputs.domain.salt, 'Calibur\'s address (calibur.json\'s salt)')
})

t.test('golden/3009.json on the devnet\'s real USDC (FiatTokenV2_2)', async (t) => {
  const { inputs } = golden3009
  t.equal(await client.readContract({ address: devnet.usdc, abi: fiatToken, functionName: 'DOMAIN_SEPARATOR' }), golden3009.domainSeparator, 'USDC computes the same DOMAIN_SEPARATOR')
  t.equal(await client.readContract({ address: devnet.usdc, abi: fiatToken, functionName: 'TRANSFER_WITH_AUTHORIZATION_TYPEHASH' }), golden3009.typeHash, 'and the same type hash')
  const relayer = walletOf(devnet.demoAccounts[1]!.privateKey)
  const args = (signature: Hex) => {
    const { v, r, s } = parseSignature(signature)
    return [inputs.from, inputs.to, BigInt(inputs.value), BigInt(inputs.validAfter), BigInt(inputs.validBefore), inputs.nonce, Number(v), r, s] as const
  }
  const simulate = (signature: Hex) =>
    client.simulateContract({ account: relayer.account, address: devnet.usdc, abi: fiatToken, functionName: 'transferWithAuthorization', args: args(signature) })
  // The token recovers the signer from its own digest: a signature over any other digest is refused.
  await t.rejects(simulate(await signDigest(keccak256(golden3009.digest), golden3009.signerPrivateKey)), { message: /invalid signature/ }, 'a signature over another digest is refused')
  const signature = await signDigest(golden3009.digest, golden3009.signerPrivateKey)
  const before = { from: await usdcBalance(inputs.from), to: await usdcBalance(inputs.to) }
  const { request } = await simulate(signature)
  await mined(await relayer.writeContract(request))
  t.equal(await usdcBalance(inputs.from), before.from - BigInt(inputs.value), 'a signature over the golden digest moves the value')
  t.equal(await usdcBalance(inputs.to), before.to + BigInt(inputs.value))
  t.equal(await client.readContract({ address: devnet.usdc, abi: fiatToken, functionName: 'authorizationState', args: [inputs.from, inputs.nonce] }), true, 'its nonce used')
})

t.test('golden/erc20.json: every call\'s bytes run on the devnet\'s real USDC and WETH9', async (t) => {
  // Anvil's #3 sends them all; a mainnet vector's bytes go to the devnet's token of the same kind.
  const sender = walletOf(devnet.demoAccounts[2]!.privateKey)
  const from = sender.account.address
  await mined(await sender.writeContract({ address: devnet.weth, abi: weth9, functionName: 'deposit', value: parseEther('1') }))
  for (const vector of erc20Golden) {
    const [call] = vector.calls
    const to = vector.encoder === 'encodeWethWithdraw' ? devnet.weth : devnet.usdc
    if (vector.name.startsWith('devnet:')) t.equal(call!.to, to, `${vector.name}: the devnet's contract`)
    const { input } = vector
    const amount = BigInt((vector.encoder === 'encodeWethWithdraw' ? input.amountWei : input.amountBaseUnits)!)
    switch (vector.encoder) {
      case 'encodeApprove': {
        await mined(await sender.sendTransaction({ to, data: call!.data }))
        t.equal(await client.readContract({ address: to, abi: erc20, functionName: 'allowance', args: [from, getAddress(input.spender!)] }), amount, `${vector.name}: the allowance is set`)
        break
      }
      case 'encodeTransfer': {
        const before = await usdcBalance(getAddress(input.to!))
        await mined(await sender.sendTransaction({ to, data: call!.data }))
        t.equal(await usdcBalance(getAddress(input.to!)), before + amount, `${vector.name}: the recipient gets the amount`)
        break
      }
      case 'encodeWethWithdraw': {
        const before = { weth: await client.readContract({ address: to, abi: erc20, functionName: 'balanceOf', args: [from] }), eth: await client.getBalance({ address: from }) }
        const receipt = await mined(await sender.sendTransaction({ to, data: call!.data }))
        t.equal(await client.readContract({ address: to, abi: erc20, functionName: 'balanceOf', args: [from] }), before.weth - amount, `${vector.name}: WETH burnt`)
        t.equal(await client.getBalance({ address: from }), before.eth + amount - receipt.gasUsed * receipt.effectiveGasPrice, `${vector.name}: ETH paid out`)
        break
      }
    }
  }
})

t.test('golden/uniswap.json: the devnet\'s QuoterV2 and SwapRouter02 decode the path and run the swap', async (t) => {
  const vector = uniswapGolden.find((candidate) => candidate.name.startsWith('devnet:'))!
  const { input } = vector
  // QuoterV2 walks the path (Path.decodeFirstPool) to the pool it names and quotes through it.
  const { result } = await client.simulateContract({ address: devnet.uniswap.quoterV2, abi: quoterV2, functionName: 'quoteExactInput', args: [vector.path, BigInt(input.amountInBaseUnits)] })
  const [quoted, sqrtPrices] = result
  t.equal(sqrtPrices.length, input.hops.length, 'one pool per hop')
  t.ok(quoted >= BigInt(vector.minimumOutWei), `the pool quotes ${quoted} wei, at least minimumOutWei ${vector.minimumOutWei}`)
  // The golden call, as it stands, sent by anvil's #2 after approving the router.
  const sender = walletOf(devnet.demoAccounts[1]!.privateKey)
  await mined(await sender.writeContract({ address: devnet.usdc, abi: erc20, functionName: 'approve', args: [input.router, BigInt(input.amountInBaseUnits)] }))
  const before = { usdc: await usdcBalance(sender.account.address), eth: await client.getBalance({ address: input.recipient }) }
  await mined(await sender.sendTransaction({ to: vector.calls[0]!.to, data: vector.calls[0]!.data, value: BigInt(vector.calls[0]!.value) }))
  t.equal(await usdcBalance(sender.account.address), before.usdc - BigInt(input.amountInBaseUnits), 'amountInBaseUnits taken from the sender')
  t.equal(await client.getBalance({ address: input.recipient }), before.eth + quoted, 'the quoted ETH paid to the recipient, unwrapped')
})

t.test('golden/calibur.json on the devnet: the account\'s delegate computes the same digests and runs the signed batches', async (t) => {
  // After the 3009 test: a delegated account has code, and FiatToken would then check its
  // signatures by ERC-1271 instead.
  const account = privateKeyToAccount(caliburGolden.signerPrivateKey)
  const sponsor = walletOf(devnet.demoAccounts[2]!.privateKey)
  const authorization = await sponsor.signAuthorization({ account, contractAddress: CALIBUR_ADDRESS })
  await mined(await sponsor.sendTransaction({ to: sponsor.account.address, authorizationList: [authorization] }))
  t.equal(await client.getCode({ address: account.address }), concat(['0xef0100', CALIBUR_ADDRESS]).toLowerCase(), 'EIP-7702: the account\'s code is 0xef0100 ‖ Calibur')

  const local = caliburGolden.vectors.filter((vector) => vector.inputs.domain.chainId === devnet.chainId)
  t.ok(local.length >= 2, 'vectors for the devnet\'s chain')
  for (const vector of local) {
    t.equal(vector.inputs.domain.account, account.address)
    t.equal(await client.readContract({ address: account.address, abi: calibur, functionName: 'domainSeparator' }), vector.domainSeparator, `${vector.name}: domainSeparator()`)
    t.equal(await client.readContract({ address: account.address, abi: calibur, functionName: 'hashTypedData', args: [vector.structHash] }), vector.digest, `${vector.name}: hashTypedData(structHash)`)
  }

  // Bring each vector's nonce key to its seq with signed empty batches (signed here, not by our
  // encoders), then send the golden calldata as it stands; a relayer that is not the account sends.
  const relayer = walletOf(devnet.demoAccounts[1]!.privateKey)
  // A vector for a set executor is sent by it: an address with no code on the devnet, impersonated.
  const testClient = createTestClient({ mode: 'anvil', chain, transport: http(anvil.rpcUrl) })
  const executorOf = async (vector: (typeof local)[number]) => {
    if (vector.inputs.executor === zeroAddress) return relayer
    await testClient.impersonateAccount({ address: vector.inputs.executor })
    await testClient.setBalance({ address: vector.inputs.executor, value: 10n ** 18n })
    return createWalletClient({ account: vector.inputs.executor, chain, transport: http(anvil.rpcUrl) })
  }
  const domain = caliburDomain(devnet.chainId, account.address, toHex(BigInt(CALIBUR_ADDRESS), { size: 32 }))
  for (const vector of local) {
    const key = BigInt(vector.inputs.nonceKey)
    for (let seq = await client.readContract({ address: account.address, abi: calibur, functionName: 'getSeq', args: [key] }); seq < BigInt(vector.inputs.nonceSeq); seq++) {
      const filler: CaliburMessage = { batchedCall: { calls: [], revertOnFailure: true }, nonce: (key << 64n) | seq, keyHash: zeroHash, executor: zeroAddress, deadline: 0n }
      const signature = await signDigest(caliburDigest(domain, filler), caliburGolden.signerPrivateKey)
      await mined(await relayer.sendTransaction({ to: account.address, data: encodeFunctionData({ abi: calibur, functionName: 'execute', args: [filler, wrap(signature)] }) }))
    }
    const [leg] = vector.inputs.batch.calls.filter((call) => call.to === devnet.usdc && call.data.startsWith(toFunctionSelector('transfer(address,uint256)')))
    const payee = getAddress(`0x${leg!.data.slice(34, 74)}`)
    const paid = BigInt(`0x${leg!.data.slice(74)}`)
    const before = await usdcBalance(payee)
    // What else the batch moves: ETH sent with a call.
    const sends = vector.inputs.batch.calls.filter((call) => BigInt(call.value) > 0n)
    const ethBefore = await Promise.all(sends.map((call) => client.getBalance({ address: call.to })))
    // A tampered signature over the same message is refused: the delegate checks the digest.
    const tampered = encodeFunctionData({ abi: calibur, functionName: 'execute', args: [caliburMessageOf(vector), wrap(await signDigest(keccak256(vector.digest), caliburGolden.signerPrivateKey))] })
    await t.rejects(client.call({ account: relayer.account, to: account.address, data: tampered }), `${vector.name}: a signature over another digest is refused`)
    // An explicit gas limit: eth_estimateGas finds the least gas at which the transaction does not
    // revert, and a batch that carries on past failures does not revert when its inner calls run short.
    if (vector.inputs.executor !== zeroAddress) {
      t.equal(await client.getCode({ address: vector.inputs.executor as Address }), undefined, `${vector.name}: its executor has no code here`)
      await t.rejects(client.call({ account: relayer.account, to: account.address, data: vector.executeCalldata }), `${vector.name}: anyone but its executor is refused`)
    }
    const sender = await executorOf(vector)
    await mined(await sender.sendTransaction({ to: account.address, data: vector.executeCalldata, gas: 1_000_000n }))
    t.equal(await usdcBalance(payee), before + paid, `${vector.name}: the signed batch ran (its USDC transfer paid ${paid})`)
    t.equal(await client.readContract({ address: account.address, abi: calibur, functionName: 'getSeq', args: [key] }), BigInt(vector.inputs.nonceSeq) + 1n, `${vector.name}: its nonce used`)
    for (const [index, call] of sends.entries()) t.equal(await client.getBalance({ address: call.to }), ethBefore[index]! + BigInt(call.value), `${vector.name}: ${call.value} wei sent to ${call.to}`)
  }
})
