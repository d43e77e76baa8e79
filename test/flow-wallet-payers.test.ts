import t, { type Test } from 'tap'
import { decodePaymentResponseHeader } from '@x402/core/http'
import { ExactEvmScheme } from '@x402/evm/exact/client'
import { wrapFetchWithPaymentFromConfig } from '@x402/fetch'
import {
  createPublicClient,
  createWalletClient,
  encodeAbiParameters,
  encodeFunctionData,
  erc20Abi,
  getAddress,
  http,
  keccak256,
  parseAbi,
  serializeErc6492Signature,
  type Address,
  type Hex,
} from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { devnetChain } from '../core/devnet/chain.ts'
import { DELEGATOR_CONTRACTS } from '@metamask/delegation-deployments'
import { ERC1967Proxy, MultiSigDeleGator } from '@metamask/delegation-abis'
import * as bytecode from '@metamask/delegation-abis/bytecode'
import { runnerAbi } from '../contracts/abi.ts'
import { deployCodeTo } from '../core/devnet/deployCodeTo.ts'
import { delegatorEntryPoint, metaMaskContracts } from '../plugins/metamask/contracts.ts'
import { mintUsdc } from '../core/devnet/fund.ts'
import { CALIBUR_ADDRESS } from '../plugins/calibur/networkOptions.ts'
import { chargedAtCost, startDevnetBruno } from './fixtures/devnetBruno.ts'
import { compileTypedFixture } from './fixtures/solidityFixture.ts'
import { connectAgent } from './fixtures/agent.ts'

// Issue 46: payers with code pay by signed transfer, end to end — an account delegated to Calibur (the devnet lists
// its delegation), a deployed smart wallet and one not deployed yet (ERC-6492), the wallets' code and factory listed
// by the Runner's owner as an operator would. Each pays a friend over MCP (the official SDK client), REST and x402
// (the official @x402/fetch client, its signer the wallet, unmodified), ends `done` with the refund back in the
// payer, and the runner ledger holds at teardown. The smart wallet is a test fixture (WalletFixture.sol: ERC-1271
// by its owner's key, its signature wrapped as `abi.encode(bytes)`): Coinbase's bytecode cannot be pinned here.

// MetaMask's MultiSigDeleGator (v1.3.0, its production address): the implementation a paying ERC-1967 proxy may point at.
const MULTISIG_DELEGATOR = getAddress(Object.values(DELEGATOR_CONTRACTS['1.3.0'] ?? {})[0]!.MultiSigDeleGatorImpl!)
const bruno = await startDevnetBruno(t, {
  groups: ['bruno', 'calibur', '3009', 'erc20'],
  configure: (config) => ({ ...config, networks: config.networks.map((network) => ({ ...network, walletImplementations: [MULTISIG_DELEGATOR] })) }),
})
const { deployment } = bruno
const chain = devnetChain(deployment.chainId)
const transport = http(deployment.rpcUrl)
const client = createPublicClient({ chain, transport, pollingInterval: 50 })
const owner = createWalletClient({ account: privateKeyToAccount(deployment.deployer.privateKey), chain, transport })
const usdc = deployment.usdc
const network = `eip155:${deployment.chainId}` as const
const usdcOf = (address: Address) => client.readContract({ address: usdc, abi: erc20Abi, functionName: 'balanceOf', args: [address] })
const mined = async (hash: Hex) => {
  const receipt = await client.waitForTransactionReceipt({ hash })
  if (receipt.status !== 'success') throw new Error(`reverted: ${hash}`)
  return receipt
}

const { use, refusal, untilSettled, submitBy } = await connectAgent(t, `${bruno.mcpUrl}/bruno,calibur,3009,erc20`, bruno.server.url)

// ─── The wallets: the fixture's code and factory, listed on the Runner by its owner ───

const walletAbi = parseAbi(['function owner() view returns (address)', 'function setOwner(address next)', 'function isValidSignature(bytes32 hash, bytes signature) view returns (bytes4)'])
const factoryAbi = parseAbi(['function createWallet(address owner) returns (address wallet)', 'function walletOf(address owner) view returns (address)'])
const factoryArtifact = compileTypedFixture('WalletFixtureFactory', factoryAbi, 'WalletFixture')
const deployFactory = async () => getAddress((await mined(await owner.deployContract({ ...factoryArtifact }))).contractAddress!)
const factory = await deployFactory()
const createWallet = (walletOwner: Address) => encodeFunctionData({ abi: factoryAbi, functionName: 'createWallet', args: [walletOwner] })
const walletOf = (walletOwner: Address) => client.readContract({ address: factory, abi: factoryAbi, functionName: 'walletOf', args: [walletOwner] })

/** What a wallet of `key` signs with: the owner's signature wrapped as the wallet takes it. */
function walletSigner(wallet: Address, key: Hex) {
  const ownerAccount = privateKeyToAccount(key)
  return {
    address: wallet,
    signTypedData: async (typedData: any): Promise<Hex> => encodeAbiParameters([{ type: 'bytes' }], [await ownerAccount.signTypedData(typedData)]),
  }
}

{
  // The operator lists the fixture's code (every wallet of it has the same) and its factory.
  const sampleOwner = privateKeyToAccount(generatePrivateKey()).address
  await mined(await owner.sendTransaction({ to: factory, data: createWallet(sampleOwner) }))
  const walletCode = keccak256((await client.getCode({ address: await walletOf(sampleOwner) }))!)
  await mined(await owner.writeContract({ address: deployment.runner.contract, abi: runnerAbi, functionName: 'setPayerCode', args: [walletCode, true] }))
  await mined(await owner.writeContract({ address: deployment.runner.contract, abi: runnerAbi, functionName: 'setWalletFactory', args: [factory, true] }))
}

/**
 * A gift of 1 USDC from `payer` to a fresh friend, prepared by the tools: transfer_authorization's typed data, signed by
 * `signer` (`wrap`ped as the wallet sends it), made the call by transfer_authorization_call; with its quoteCall.
 */
async function giftFrom(payer: Address, signer: { signTypedData: (typedData: any) => Promise<Hex> }, wrap = (signature: Hex) => signature) {
  const friend = privateKeyToAccount(generatePrivateKey()).address
  const transfer = await use('transfer_authorization', { chain: 'local', from: payer, to: friend, token: 'USDC', amount: '1' })
  const encoded = await use('transfer_authorization_call', { chain: 'local', typedData: transfer.typedData, signature: wrap(await signer.signTypedData(transfer.typedData)) })
  return { friend, call: encoded.call as { to: Address; data: Hex }, quoteCall: transfer.quoteCall as { to: Address; data: Hex } }
}

/**
 * `payer` pays for its gift by signed transfer over `binding`, its signature `wrap`ped as its wallet sends it; the
 * submission ends done, the friend has the gift and the rest of the payment is back with the payer.
 */
async function paysOver(
  t: Test,
  binding: 'mcp' | 'rest',
  payer: Address,
  signer: { signTypedData: (typedData: any) => Promise<Hex> },
  { quoteExtra = {}, wrap = (signature: Hex) => signature }: { quoteExtra?: Record<string, unknown>; wrap?: (signature: Hex) => Hex } = {},
) {
  const gift = await giftFrom(payer, signer, wrap)
  const quote = await use('quote', { chain: 'local', call: gift.quoteCall, token: 'USDC', payment: 'authorization', ...quoteExtra })
  const prepared = await use('payment_authorization', { chain: 'local', from: payer, token: 'USDC', amount: quote.amount })
  const request = { call: gift.call, payment: { ...prepared.payment, signature: wrap(await signer.signTypedData(prepared.typedData)) } }
  const before = await usdcOf(payer)
  const id = await submitBy(binding, request)
  const status = await untilSettled(id)
  t.equal(status.stage, 'done', `${binding}: ${status.reason ?? 'done'}`)
  t.equal(status.outcome.callSucceeded, true, `${binding}: the gift ran`)
  t.equal(await usdcOf(gift.friend), 1_000_000n, `${binding}: the friend has 1 USDC`)
  t.ok(BigInt(status.outcome.refundedBaseUnits) > 0n, `${binding}: ${status.outcome.refundedBaseUnits} of ${status.outcome.paidBaseUnits} came back`)
  t.equal(before - (await usdcOf(payer)), 1_000_000n + BigInt(status.outcome.chargedBaseUnits), `${binding}: the payer paid the gift and the charge, no more`)
  await chargedAtCost(t, bruno, status.transaction.hash, binding)
  return { quote, status }
}

/** The official x402 client, its signer the payer's wallet, pays for the gift by one fetch. */
async function paysByX402(t: Test, payer: Address, signer: { address: Address; signTypedData: (typedData: any) => Promise<Hex> }) {
  const gift = await giftFrom(payer, signer)
  const payingFetch = wrapFetchWithPaymentFromConfig(fetch, {
    schemes: [{ network: 'eip155:*', client: new ExactEvmScheme(signer as never) }],
    spendControls: { allowedAssets: [{ network, asset: usdc }] },
  })
  const response = await payingFetch(`${bruno.server.url}/local/v1/x402`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ call: gift.call }) })
  const body = await response.json()
  t.equal(response.status, 200, JSON.stringify(body))
  const settled = decodePaymentResponseHeader(response.headers.get('payment-response')!)
  t.equal(getAddress(settled.payer!), payer, 'x402: settled for the wallet')
  t.equal(body.stage, 'done')
  t.equal(await usdcOf(gift.friend), 1_000_000n, 'x402: the friend has 1 USDC')
  t.ok(BigInt(body.outcome.refundedBaseUnits) > 0n, `x402: ${body.outcome.refundedBaseUnits} of ${body.outcome.paidBaseUnits} came back`)
  await chargedAtCost(t, bruno, settled.transaction as Hex, 'x402')
}

t.test('an account delegated to Calibur pays by signed transfer over MCP, REST and x402: Calibur\'s ERC-1271 takes its own key\'s signature', async (t) => {
  const key = generatePrivateKey()
  const account = privateKeyToAccount(key)
  await mintUsdc(deployment.rpcUrl, deployment, account.address, 20_000_000n)
  await mined(await owner.sendTransaction({ to: owner.account.address, authorizationList: [await owner.signAuthorization({ account, contractAddress: CALIBUR_ADDRESS })] }))
  t.equal(await client.getCode({ address: account.address }), `0xef0100${CALIBUR_ADDRESS.slice(2).toLowerCase()}`, 'delegated to Calibur')
  for (const binding of ['mcp', 'rest'] as const) await paysOver(t, binding, account.address, account)
  await paysByX402(t, account.address, account)
})

t.test('a deployed smart wallet on the Runner\'s list pays with its own signature over MCP, REST and x402', async (t) => {
  const key = generatePrivateKey()
  const walletOwner = privateKeyToAccount(key).address
  await mined(await owner.sendTransaction({ to: factory, data: createWallet(walletOwner) }))
  const wallet = await walletOf(walletOwner)
  await mintUsdc(deployment.rpcUrl, deployment, wallet, 20_000_000n)
  const signer = walletSigner(wallet, key)
  for (const binding of ['mcp', 'rest'] as const) await paysOver(t, binding, wallet, signer)
  await paysByX402(t, wallet, signer)
  // Its owner (only) voids what it signed: handed on, the wallet's old signature is refused before anything is sent.
  const stale = await giftFrom(wallet, signer)
  const quote = await use('quote', { chain: 'local', call: stale.quoteCall, token: 'USDC', payment: 'authorization' })
  const prepared = await use('payment_authorization', { chain: 'local', from: wallet, token: 'USDC', amount: quote.amount })
  const signature = await signer.signTypedData(prepared.typedData)
  const ownerWallet = createWalletClient({ account: privateKeyToAccount(key), chain, transport })
  await mined(await owner.sendTransaction({ to: walletOwner, value: 10n ** 16n }))
  await mined(await ownerWallet.writeContract({ address: wallet, abi: walletAbi, functionName: 'setOwner', args: [owner.account.address] }))
  t.match(await refusal('submit', { chain: 'local', call: stale.call, payment: { ...prepared.payment, signature } }), /^refused: the token refused the payment/, 'the signature its owner voided')
})

t.test('a wallet not deployed yet pays by ERC-6492: the Runner deploys it by its listed factory, then it pays; the quote prices the deployment', async (t) => {
  const key = generatePrivateKey()
  const walletOwner = privateKeyToAccount(key).address
  const wallet = await walletOf(walletOwner)
  await mintUsdc(deployment.rpcUrl, deployment, wallet, 20_000_000n)
  t.equal(await client.getCode({ address: wallet }), undefined, 'no code yet')
  const signer = walletSigner(wallet, key)
  const deployment6492 = { factory, factoryData: createWallet(walletOwner) }
  // Its gift cannot run before the wallet exists: the quote prices transfer_authorization's quoteCall (the same gift
  // from a throwaway account), the payer's deployment on top; the call's signature, wrapped, is checked by ERC-6492.
  const wrap = (signature: Hex) => serializeErc6492Signature({ address: factory, data: deployment6492.factoryData, signature })
  const { quoteCall } = await giftFrom(wallet, signer, wrap)
  const plain = await use('quote', { chain: 'local', call: quoteCall, token: 'USDC', payment: 'authorization' })
  const { quote, status } = await paysOver(t, 'mcp', wallet, signer, { quoteExtra: { payerDeployment: deployment6492 }, wrap })
  t.ok(BigInt(quote.gas) > BigInt(plain.gas) + 100_000n, `the quote counts the deployment: ${quote.gas} gas, ${plain.gas} without`)
  t.not(await client.getCode({ address: wallet }), undefined, 'deployed by the Runner, in the relay\'s transaction')
  const receipt = await client.getTransactionReceipt({ hash: status.transaction.hash })
  t.comment(`an undeployed wallet's gift, its deployment included: ${receipt.gasUsed} gas`)
  // Deployed now: its next payment needs no wrapper (and a wrapper is passed over).
  await paysOver(t, 'rest', wallet, signer)
})

t.test('an ERC-1967 proxy wallet pays while it points at an implementation the relay knows (MetaMask\'s MultiSigDeleGator); the same proxy code pointing elsewhere is refused', async (t) => {
  await deployCodeTo(deployment.rpcUrl, deployment.deployer.privateKey, { abi: MultiSigDeleGator as never, bytecode: bytecode.MultiSigDeleGator as Hex, args: [metaMaskContracts.delegationManager, delegatorEntryPoint] }, MULTISIG_DELEGATOR)
  const proxyFor = async (implementation: Address, data: Hex) =>
    getAddress((await mined(await owner.deployContract({ abi: ERC1967Proxy as never, bytecode: bytecode.ERC1967Proxy as Hex, args: [implementation, data] }))).contractAddress!)
  const key = generatePrivateKey()
  const walletOwner = privateKeyToAccount(key)
  const wallet = await proxyFor(MULTISIG_DELEGATOR, encodeFunctionData({ abi: MultiSigDeleGator, functionName: 'initialize', args: [[walletOwner.address], 1n] }))
  await mintUsdc(deployment.rpcUrl, deployment, wallet, 20_000_000n)
  const proxyCode = keccak256((await client.getCode({ address: wallet }))!)
  // A MultiSigDeleGator of one owner, threshold 1: its ERC-1271 takes that owner's 65-byte signature of the digest itself.
  const signer = { address: wallet, signTypedData: (typedData: any) => walletOwner.signTypedData(typedData) }
  const offList = /cannot pay by signed transfer: the payer 0x[0-9a-fA-F]{40} has code .* that is not on the Runner's list/
  t.match(await refusal('payment_authorization', { chain: 'local', from: wallet, token: 'USDC', amount: '1' }), offList, 'the proxy\'s code, not yet listed')
  await mined(await owner.writeContract({ address: deployment.runner.contract, abi: runnerAbi, functionName: 'setPayerCode', args: [proxyCode, true] }))
  t.teardown(async () => void (await mined(await owner.writeContract({ address: deployment.runner.contract, abi: runnerAbi, functionName: 'setPayerCode', args: [proxyCode, false] }))))
  await paysOver(t, 'mcp', wallet, signer)
  await paysByX402(t, wallet, signer)
  // The same proxy code pointing at any other contract (here the fixture factory): listed by its code, refused by what it runs.
  const fickle = await proxyFor(factory, '0x')
  t.equal(keccak256((await client.getCode({ address: fickle }))!), proxyCode, 'the same code hash, on the Runner\'s list')
  const elsewhere = new RegExp(`the payer ${fickle} is an ERC-1967 proxy whose implementation ${factory} is not one this relay knows \\(${MULTISIG_DELEGATOR}: the network's walletImplementations\\)`)
  t.match(await refusal('payment_authorization', { chain: 'local', from: fickle, token: 'USDC', amount: '1' }), elsewhere, 'payment_authorization: refused before anything is signed')
  const gift = await giftFrom(wallet, signer)
  const quote = await use('quote', { chain: 'local', call: gift.quoteCall, token: 'USDC', payment: 'authorization' })
  const prepared = await use('payment_authorization', { chain: 'local', from: wallet, token: 'USDC', amount: quote.amount })
  const forFickle = { ...prepared.payment, authorization: { ...prepared.payment.authorization, from: fickle }, signature: await walletOwner.signTypedData({ ...prepared.typedData, message: { ...prepared.typedData.message, from: fickle } }) }
  t.match(await refusal('submit', { chain: 'local', call: gift.call, payment: forFickle }), elsewhere, 'submit: the same words')
})

t.test('what cannot pay is refused before anything is sent, in words that name the fix', async (t) => {
  const key = generatePrivateKey()
  const walletOwner = privateKeyToAccount(key).address
  const wallet = await walletOf(walletOwner)
  await mintUsdc(deployment.rpcUrl, deployment, wallet, 20_000_000n)
  const signer = walletSigner(wallet, key)
  const gift = await giftFrom(wallet, signer, (signature) => serializeErc6492Signature({ address: factory, data: createWallet(walletOwner), signature }))
  const quote = await use('quote', { chain: 'local', call: gift.quoteCall, token: 'USDC', payment: 'authorization', payerDeployment: { factory, factoryData: createWallet(walletOwner) } })
  const prepared = await use('payment_authorization', { chain: 'local', from: wallet, token: 'USDC', amount: quote.amount })
  const signature = await signer.signTypedData(prepared.typedData)
  const submitWith = (wrapped: Hex) => refusal('submit', { chain: 'local', call: gift.call, payment: { ...prepared.payment, signature: wrapped } })

  const unlisted = await deployFactory()
  const offList = /^refused: the payment's payer \(payment\.authorization\.from\) cannot pay by signed transfer: the ERC-6492 signature's factory 0x[0-9a-fA-F]{40} is not on the Runner's list of wallet factories/
  t.match(await submitWith(serializeErc6492Signature({ address: unlisted, data: createWallet(walletOwner), signature })), offList, 'submit: a factory off the list')
  t.match(await refusal('quote', { chain: 'local', call: gift.quoteCall, token: 'USDC', payment: 'authorization', payerDeployment: { factory: unlisted, factoryData: createWallet(walletOwner) } }), /^cannot quote: the ERC-6492 signature's factory .* is not on the Runner's list/, 'quote: the same')
  t.match(
    await submitWith(serializeErc6492Signature({ address: factory, data: createWallet(owner.account.address), signature })),
    /cannot pay by signed transfer: the ERC-6492 signature's factory call did not deploy the payer/,
    'a factory call that deploys another wallet',
  )
  t.match(await submitWith(signature), /^refused: payment\.signature is 160 bytes, but its payer 0x[0-9a-fA-F]{40} has no code: an account's key signs 65 bytes/, 'a wallet\'s signature, unwrapped, before the wallet is deployed')
  const stranger = walletSigner(wallet, generatePrivateKey())
  const transfer = await use('transfer_authorization', { chain: 'local', from: wallet, to: owner.account.address, token: 'USDC', amount: '1' })
  t.match(
    await refusal('transfer_authorization_call', { chain: 'local', typedData: transfer.typedData, signature: serializeErc6492Signature({ address: factory, data: createWallet(walletOwner), signature: await stranger.signTypedData(transfer.typedData) }) }),
    new RegExp(`^${wallet} does not accept the signature \\(its ERC-1271 isValidSignature says no\\)`),
    'transfer_authorization_call: another key\'s signature, by the wallet\'s own ERC-1271',
  )
  t.equal(await client.getCode({ address: wallet }), undefined, 'nothing was deployed')
  t.equal(await usdcOf(wallet), 20_000_000n, 'nothing was taken')
  // The same signature, wrapped right, is taken: the refusals above left nothing behind.
  const accepted = await use('submit', { chain: 'local', call: gift.call, payment: { ...prepared.payment, signature: serializeErc6492Signature({ address: factory, data: createWallet(walletOwner), signature }) } })
  t.equal((await untilSettled(accepted.id)).stage, 'done')
})
