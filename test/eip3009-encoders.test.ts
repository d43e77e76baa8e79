import { readFileSync, writeFileSync } from 'node:fs'
import t from 'tap'
import {
  concat,
  createPublicClient,
  createWalletClient,
  custom,
  encodeAbiParameters,
  encodeFunctionResult,
  erc20Abi,
  hashDomain,
  hashStruct,
  hashTypedData,
  http,
  keccak256,
  numberToHex,
  parseAbi,
  recoverTypedDataAddress,
  toFunctionSelector,
  toHex,
  zeroAddress,
  zeroHash,
  type Address,
  type Hex,
} from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { devnetChain } from '../core/devnet/chain.ts'
import { startAnvil } from '../core/devnet/anvil.ts'
import { deployDevnet } from '../core/devnet/deploy.ts'
import { mintUsdc } from '../core/devnet/fund.ts'
import { ToolError } from '../core/tool/tool.ts'
import { eip3009Abi } from '../plugins/3009/abi.ts'
import { readTokenDomain } from '../core/chain/tokenDomain.ts'
import {
  authorizationSignatureParts,
  randomAuthorizationNonce,
  transferWithAuthorizationTypedData,
  type TransferWithAuthorizationTypedData,
} from '../plugins/3009/typedData.ts'

// golden/3009.json holds fixed-input vectors of the 3009 encoders. `UPDATE_GOLDEN=1 npx tap
// test/eip3009-encoders.test.ts` rewrites it from the inputs below; without it the file must
// match byte for byte. A change to it needs a reason in the commit message.

const update = process.env.UPDATE_GOLDEN === '1'
const goldenFile = new URL('../golden/3009.json', import.meta.url)

// The type strings as EIP-3009 and EIP-712 write them, hashed here by hand below.
const transferTypeString =
  'TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)'
const domainTypeString = 'EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)'

// anvil's dev key #1 signs (it holds devnet USDC); the token is the devnet's USDC, whose address
// the deterministic deploy yields; the payee is the devnet's (anvil #9, config/devnet.ts).
const signerPrivateKey: Hex = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d'
const signer = privateKeyToAccount(signerPrivateKey)
const payee: Address = '0xa0Ee7A142d267C1f36714E4a8F75612F20a79720'
const inputs = {
  token: { address: '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512', name: 'USD Coin', version: '2', chainId: 31337 },
  from: signer.address,
  to: payee,
  value: '1250000',
  validAfter: '0',
  validBefore: '4102444800',
  nonce: keccak256(toHex('bruno golden/3009.json nonce')),
} as const

const typedData = transferWithAuthorizationTypedData({
  ...inputs,
  value: BigInt(inputs.value),
  validAfter: BigInt(inputs.validAfter),
  validBefore: BigInt(inputs.validBefore),
})
const signature = await signer.signTypedData(typedData)
const golden = {
  note:
    'EIP-3009 transferWithAuthorization vector for fixed inputs: typed data (plugins/3009 ' +
    'transferWithAuthorizationTypedData; uint256 as decimal strings), type hash, domain separator, struct hash and digest ' +
    '(viem), the signature of anvil\'s dev key #1 (viem signTypedData, RFC 6979) and its (v, r, s) ' +
    '(authorizationSignatureParts). The token is the devnet\'s USDC (FiatTokenV2_2, "USD Coin" version 2, the address ' +
    'its deterministic deploy yields). Produced by `UPDATE_GOLDEN=1 npx tap test/eip3009-encoders.test.ts` from the ' +
    'inputs in that test. Pinned by: that test recomputing type hash, domain separator, struct hash and digest by hand ' +
    'from the EIP-3009 type string; anvil\'s own eth_signTypedData_v4 giving the same signature; and this very ' +
    'authorization executed by transferWithAuthorization(…, v, r, s) on the devnet\'s real USDC. A change needs a reason ' +
    'in the commit message.',
  signerPrivateKey,
  inputs,
  typedData,
  typeHash: keccak256(toHex(transferTypeString)),
  domainSeparator: hashDomain({ domain: typedData.domain, types: typedData.types }),
  structHash: hashStruct({ data: typedData.message, primaryType: 'TransferWithAuthorization', types: typedData.types }),
  digest: hashTypedData(typedData),
  signature,
  ...authorizationSignatureParts(signature),
}

t.test('golden/3009.json', async (t) => {
  const text = `${JSON.stringify(golden, null, 2)}\n`
  if (update) {
    writeFileSync(goldenFile, text)
    t.comment('golden/3009.json rewritten')
    return
  }
  const committed = readFileSync(goldenFile, 'utf8')
  t.strictSame(JSON.parse(committed), golden, 'the encoders produce the committed vector')
  t.equal(committed, text, 'byte for byte')
})

t.test('golden/3009.json agrees with EIP-712 done by hand', async (t) => {
  const file = JSON.parse(readFileSync(goldenFile, 'utf8')) as typeof golden
  const { token, from, to, value, validAfter, validBefore, nonce } = file.inputs
  t.equal(file.typeHash, '0x7c7c6cdb67a18743f49ec6fa9b35f50d52ed05cbed4cc592e13b44501c1a2267', 'FiatToken\'s TRANSFER_WITH_AUTHORIZATION_TYPEHASH')
  const domainSeparator = keccak256(
    encodeAbiParameters(
      [{ type: 'bytes32' }, { type: 'bytes32' }, { type: 'bytes32' }, { type: 'uint256' }, { type: 'address' }],
      [keccak256(toHex(domainTypeString)), keccak256(toHex(token.name)), keccak256(toHex(token.version)), BigInt(token.chainId), token.address],
    ),
  )
  const structHash = keccak256(
    encodeAbiParameters(
      [{ type: 'bytes32' }, { type: 'address' }, { type: 'address' }, { type: 'uint256' }, { type: 'uint256' }, { type: 'uint256' }, { type: 'bytes32' }],
      [keccak256(toHex(transferTypeString)), from, to, BigInt(value), BigInt(validAfter), BigInt(validBefore), nonce],
    ),
  )
  t.equal(file.domainSeparator, domainSeparator)
  t.equal(file.structHash, structHash)
  t.equal(file.digest, keccak256(concat(['0x1901', domainSeparator, structHash])))
  t.equal(await recoverTypedDataAddress({ ...file.typedData, signature: file.signature }), from)
  t.equal(concat([file.r, file.s, numberToHex(file.v)]), file.signature, 'r ‖ s ‖ v is the signature')
  t.strictSame(Object.keys(file.typedData.types), ['EIP712Domain', 'TransferWithAuthorization'], 'EIP712Domain listed first')
})

t.test('authorizationSignatureParts', async (t) => {
  const { r, s, v } = authorizationSignatureParts(signature)
  t.ok(v === 27 || v === 28)
  // The same signature with its recovery bit written 0/1.
  const yParityForm = concat([r, s, v === 27 ? '0x00' : '0x01'])
  t.strictSame(authorizationSignatureParts(yParityForm), { v, r, s })
  // Its malleable twin (s → n − s, the other recovery bit) verifies in ecrecover but not in the token.
  const n = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n
  const highS = concat([r, numberToHex(n - BigInt(s), { size: 32 }), v === 27 ? '0x1c' : '0x1b'])
  t.throws(() => authorizationSignatureParts(highS), ToolError, 'high s')
  t.throws(() => authorizationSignatureParts(signature.slice(0, 130) as Hex), ToolError, '64 bytes')
  t.throws(() => authorizationSignatureParts(concat([r, s, '0x02'])), ToolError, 'recovery byte 2')
})

t.test('randomAuthorizationNonce: 32 fresh bytes each time', async (t) => {
  const nonces = new Set(Array.from({ length: 16 }, randomAuthorizationNonce))
  t.equal(nonces.size, 16)
  for (const nonce of nonces) t.match(nonce, /^0x[0-9a-f]{64}$/)
})

t.test('transferWithAuthorizationTypedData refuses what the token would', async (t) => {
  const base = { ...inputs, value: 1n, validAfter: 100n, validBefore: 200n }
  t.throws(() => transferWithAuthorizationTypedData({ ...base, validBefore: 101n }), ToolError, 'no second in the window')
  t.throws(() => transferWithAuthorizationTypedData({ ...base, nonce: '0x1234' }), ToolError, 'short nonce')
  t.throws(() => transferWithAuthorizationTypedData({ ...base, to: zeroAddress }), ToolError, 'to the zero address')
  t.throws(() => transferWithAuthorizationTypedData({ ...base, value: -1n }), ToolError, 'negative value')
  t.throws(() => transferWithAuthorizationTypedData({ ...base, token: { ...base.token, chainId: 0 } }), ToolError, 'chainId 0')
  t.equal(transferWithAuthorizationTypedData({ ...base, validBefore: 102n }).message.validBefore, '102', 'one second is enough')
})

// A client whose node answers eth_call by selector: readTokenDomain without a chain.
const token: Address = inputs.token.address
const answering = (answers: Record<string, Hex>) =>
  createPublicClient({
    transport: custom({
      async request({ method, params }) {
        if (method === 'eth_chainId') return '0x7a69'
        if (method !== 'eth_call') throw new Error(`unexpected ${method}`)
        return answers[(params as [{ data: Hex }])[0].data.slice(0, 10)] ?? '0x'
      },
    }),
  })
const selectorOf = (name: 'eip712Domain' | 'name' | 'version' | 'DOMAIN_SEPARATOR') =>
  toFunctionSelector(eip3009Abi.find((item) => item.name === name)!)
const erc5267 = (fields: Hex) =>
  encodeFunctionResult({ abi: eip3009Abi, functionName: 'eip712Domain', result: [fields, 'Token', '7', 31337n, token, zeroHash, []] })
const stringResult = (value: string) => encodeAbiParameters([{ type: 'string' }], [value])

t.test('readTokenDomain: ERC-5267 when the token has it, else name() and version() checked against DOMAIN_SEPARATOR()', async (t) => {
  t.strictSame(await readTokenDomain(answering({ [selectorOf('eip712Domain')]: erc5267('0x0f') }), token), { name: 'Token', version: '7' })
  await t.rejects(readTokenDomain(answering({ [selectorOf('eip712Domain')]: erc5267('0x1f') }), token), ToolError, 'a salted domain')
  const fallback = {
    [selectorOf('name')]: stringResult('USD Coin'),
    [selectorOf('version')]: stringResult('2'),
    [selectorOf('DOMAIN_SEPARATOR')]: golden.domainSeparator,
  }
  t.strictSame(await readTokenDomain(answering(fallback), token), { name: 'USD Coin', version: '2' }, 'the golden domain')
  await t.rejects(
    readTokenDomain(answering({ ...fallback, [selectorOf('name')]: stringResult('USD Coin (PoS)') }), token),
    ToolError,
    'a name() that is not the EIP-712 name',
  )
  await t.rejects(readTokenDomain(answering({}), token), ToolError, 'no code')
})

t.test('on the devnet\'s real USDC (FiatTokenV2_2)', async (t) => {
  const anvil = await startAnvil()
  t.teardown(() => anvil.stop())
  const devnet = await deployDevnet(anvil.rpcUrl)
  const chain = devnetChain(devnet.chainId)
  const client = createPublicClient({ chain, transport: http(anvil.rpcUrl), pollingInterval: 50 })
  const fiatToken = parseAbi([
    'function DOMAIN_SEPARATOR() view returns (bytes32)',
    'function TRANSFER_WITH_AUTHORIZATION_TYPEHASH() view returns (bytes32)',
  ])
  const balanceOf = (address: Address) => client.readContract({ address: devnet.usdc, abi: erc20Abi, functionName: 'balanceOf', args: [address] })
  const relayer = devnet.demoAccounts[1]!
  const wallet = createWalletClient({ account: privateKeyToAccount(relayer.privateKey), chain, transport: http(anvil.rpcUrl) })

  // Simulated first, so a refused authorization never costs the sender a reverted transaction.
  async function send(typed: TransferWithAuthorizationTypedData, signed: Hex) {
    const { v, r, s } = authorizationSignatureParts(signed)
    const { from, to, value, validAfter, validBefore, nonce } = typed.message
    const { request } = await client.simulateContract({
      account: wallet.account,
      address: typed.domain.verifyingContract,
      abi: eip3009Abi,
      functionName: 'transferWithAuthorization',
      args: [from, to, BigInt(value), BigInt(validAfter), BigInt(validBefore), nonce, v, r, s],
    })
    return client.waitForTransactionReceipt({ hash: await wallet.writeContract(request) })
  }

  const domain = await readTokenDomain(client, devnet.usdc)
  t.strictSame(domain, { name: 'USD Coin', version: '2' }, 'readTokenDomain')
  t.equal(await client.readContract({ address: devnet.usdc, abi: fiatToken, functionName: 'TRANSFER_WITH_AUTHORIZATION_TYPEHASH' }), golden.typeHash)

  t.test('the golden authorization executes as it is', async (t) => {
    t.equal(devnet.usdc, golden.typedData.domain.verifyingContract, 'the deploy still puts USDC at the golden token address')
    t.equal(await client.readContract({ address: devnet.usdc, abi: fiatToken, functionName: 'DOMAIN_SEPARATOR' }), golden.domainSeparator)
    // A wallet over JSON-RPC: viem serializes the typed data to JSON, anvil signs it with an
    // EIP-712 implementation of its own (eth_signTypedData_v4).
    const jsonRpcWallet = createWalletClient({ account: golden.inputs.from, transport: http(anvil.rpcUrl) })
    t.equal(await jsonRpcWallet.signTypedData(golden.typedData), golden.signature, 'anvil\'s eth_signTypedData_v4 signs the JSON to the same signature')
    const before = { from: await balanceOf(golden.inputs.from), to: await balanceOf(payee) }
    const receipt = await send(golden.typedData, golden.signature)
    t.equal(receipt.status, 'success')
    t.equal(await balanceOf(golden.inputs.from), before.from - BigInt(golden.inputs.value))
    t.equal(await balanceOf(payee), before.to + BigInt(golden.inputs.value))
  })

  t.test('a USDC-only account pays by authorization, sent by another account', async (t) => {
    const payer = privateKeyToAccount(keccak256(toHex('bruno 3009 test payer')))
    await mintUsdc(anvil.rpcUrl, devnet, payer.address, 5_000_000n)
    t.equal(await client.getBalance({ address: payer.address }), 0n, 'the payer has no ETH')
    const { timestamp } = await client.getBlock()
    const typed = transferWithAuthorizationTypedData({
      token: { address: devnet.usdc, ...domain, chainId: devnet.chainId },
      from: payer.address,
      to: payee,
      value: 1_750_000n,
      validAfter: timestamp - 60n,
      validBefore: timestamp + 3600n,
      nonce: randomAuthorizationNonce(),
    })
    t.equal(hashDomain({ domain: typed.domain, types: typed.types }), await client.readContract({ address: devnet.usdc, abi: fiatToken, functionName: 'DOMAIN_SEPARATOR' }))
    const signed = await payer.signTypedData(typed)
    const before = await balanceOf(payee)
    const receipt = await send(typed, signed)
    t.equal(receipt.status, 'success')
    t.equal(receipt.from.toLowerCase(), relayer.address.toLowerCase(), 'sent by the relayer, not the payer')
    t.equal(await balanceOf(payer.address), 5_000_000n - 1_750_000n, 'the payer lost exactly value')
    t.equal(await balanceOf(payee), before + 1_750_000n, 'the payee gained exactly value')
    t.equal(
      await client.readContract({ address: devnet.usdc, abi: eip3009Abi, functionName: 'authorizationState', args: [payer.address, typed.message.nonce] }),
      true,
      'the nonce is used',
    )
    await t.rejects(send(typed, signed), 'a replay is refused in simulation')
  })
})
