import { mkdirSync, writeFileSync } from 'node:fs'
import { concat, createPublicClient, createWalletClient, encodeFunctionData, erc20Abi, getAddress, http, maxUint256, pad, toHex, type Abi, type Address, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import { devnetChain } from '../core/devnet/chain.ts'
import { startAnvil } from '../core/devnet/anvil.ts'
import { deployDevnet } from '../core/devnet/deploy.ts'
import { mintUsdc } from '../core/devnet/fund.ts'
import { encodeTransfer } from '../core/chain/erc20Calls.ts'
import { encodeRunnerCall } from '../core/relay/runnerCall.ts'
import { encodeSignedExecute } from '../plugins/calibur/executeCalldata.ts'
import { CALIBUR_PAYMENT_GAS, ownCallsBatch, paymentBatch } from '../plugins/calibur/paymentFirstBatch.ts'
import { caliburTypedData, type CaliburCall } from '../plugins/calibur/typedData.ts'
import { executionOf } from '../plugins/metamask/batch.ts'
import { metaMaskContracts, paymentFirstEnforcer } from '../plugins/metamask/contracts.ts'
import { delegationTypedData, encodeRedemption, paymentFirstDelegation, signedDelegation } from '../plugins/metamask/delegation.ts'
import { METAMASK_PAYMENT_GAS } from '../plugins/metamask/gas.ts'
import { signTransfer } from '../test/fixtures/signedTransfer.ts'
import { compileFixture } from '../test/fixtures/solidityFixture.ts'
import { machine } from './machine.ts'
import { createRequire } from 'node:module'
import { deployCodeTo } from '../core/devnet/deployCodeTo.ts'
import { encodeExecuteBatch, encodeHandleOps, ENTRY_POINT, entryPointAbi, userOperationTypedData, type UserOperation } from '../examples/simple7702-group/entryPoint.ts'
import { ENTRY_POINT_OVERHEAD, PAYMENT_CALL_GAS, VERIFICATION_GAS } from '../examples/simple7702-group/delegate.ts'
import { CALIBUR_ADDRESS } from '../plugins/calibur/networkOptions.ts'
import { checksummed, whereGasGoes, type FrameRole, type GasSpent } from './whereGasGoes.ts'

/**
 * `npm run bench:gas`: issue 31's gas table — the same action, one USDC transfer of 1 USDC to an
 * address that holds none yet, each way it can reach the chain, in one run on one fresh devnet:
 * - **the account itself**: an EOA with ETH sends `usdc.transfer` (the baseline);
 * - **Bruno / signed transfer**: flow 2, the Runner's `relayWithAuthorization` of an EIP-3009
 *   payment to the payee, the call a second EIP-3009 transfer (the gift) — for reference;
 * - **Bruno / Calibur**: `relayBatch` of the account's two signed Calibur batches (the payment, then
 *   the transfer), the account as target;
 * - **Bruno / MetaMask**: `relayBatch` of one payment-first Delegation redeemed twice through the
 *   DelegationManager;
 * - **Bruno / Simple7702** (examples/simple7702-group): `relayBatch` of two signed UserOperations
 *   (the payment, then the transfer), each `handleOps` to EntryPoint v0.8, Bruno the bundler;
 * - **a 4337 bundler**: the same account's one UserOperation (the transfer, its gas paid in ETH from
 *   its prefund), `handleOps` sent by a bundler's EOA — what the ERC-4337 path costs without Bruno;
 * - **a 4337 bundler with a token paymaster**: the same operation, its gas paid in USDC through
 *   OpenZeppelin's `PaymasterERC20` at a fixed price (test/fixtures/contracts/FixedPriceTokenPaymaster.sol):
 *   USDC-only accounts' way to pay without Bruno, the account having approved the paymaster once.
 * Each way runs `rounds` times on fresh accounts delegated beforehand (their first relay: cold
 * delegate storage, as an agent's first) and then again on the same account (warm); the table
 * gives gas used per transaction and its ratio to the baseline. The Runner gives each call
 * generous gas: gas used does not depend on the limit.
 */

const rounds = process.argv.includes('--smoke') ? 1 : 5
const log = (line: string) => process.stdout.write(`${line}\n`)

const anvil = await startAnvil({ stepsTracing: true })
try {
  const devnet = await deployDevnet(anvil.rpcUrl)
  const transport = http(anvil.rpcUrl)
  const client = createPublicClient({ chain: devnetChain(), transport, pollingInterval: 50 })
  const operator = createWalletClient({ account: privateKeyToAccount(devnet.runner.operator.privateKey), chain: devnetChain(), transport })
  const sponsor = createWalletClient({ account: privateKeyToAccount(devnet.deployer.privateKey), chain: devnetChain(), transport })
  const payee = getAddress('0xa0Ee7A142d267C1f36714E4a8F75612F20a79720')
  const fee = 100_000n
  const gift = 1_000_000n
  const fresh = () => privateKeyToAccount(generatePrivateKey()).address
  // The last transaction mined: each way's last warm relay is traced.
  let last: Hex | undefined
  const mined = async (hash: Hex) => {
    const receipt = await client.waitForTransactionReceipt({ hash })
    if (receipt.status !== 'success') throw new Error(`reverted: ${hash}`)
    last = hash
    return receipt
  }
  const relay = async (data: Hex) => {
    const receipt = await mined(await operator.sendTransaction({ to: devnet.runner.contract, data, gas: 3_000_000n }))
    const [relayed] = receipt.logs.filter((log) => getAddress(log.address) === devnet.runner.contract)
    if (!relayed) throw new Error('no Relayed event')
    return receipt.gasUsed
  }
  const itself = async (owner: PrivateKeyAccount) => {
    const wallet = createWalletClient({ account: owner, chain: devnetChain(), transport })
    return (await mined(await wallet.writeContract({ address: devnet.usdc, abi: erc20Abi, functionName: 'transfer', args: [fresh(), gift] }))).gasUsed
  }
  const usdcDomain = { address: devnet.usdc, name: 'USD Coin', version: '2', chainId: devnet.chainId }
  const signedTransfer = async (owner: PrivateKeyAccount) => {
    const key = keys.get(owner.address)!
    const payment = await signTransfer(key, usdcDomain, payee, fee)
    const giftSigned = await signTransfer(key, usdcDomain, fresh(), gift)
    const call = {
      to: devnet.usdc,
      data: encodeFunctionData({
        abi: [{ type: 'function', name: 'transferWithAuthorization', stateMutability: 'nonpayable', inputs: [{ name: 'from', type: 'address' }, { name: 'to', type: 'address' }, { name: 'value', type: 'uint256' }, { name: 'validAfter', type: 'uint256' }, { name: 'validBefore', type: 'uint256' }, { name: 'nonce', type: 'bytes32' }, { name: 'signature', type: 'bytes' }], outputs: [] }],
        functionName: 'transferWithAuthorization',
        args: [giftSigned.message.from, giftSigned.message.to, BigInt(giftSigned.message.value), BigInt(giftSigned.message.validAfter), BigInt(giftSigned.message.validBefore), giftSigned.message.nonce, giftSigned.signature],
      }),
    }
    const m = payment.message
    return relay(
      encodeRunnerCall(
        { form: 'authorization', call, payee, payment: { token: devnet.usdc, authorization: { from: m.from, to: m.to, value: m.value.toString(), validAfter: m.validAfter.toString(), validBefore: m.validBefore.toString(), nonce: m.nonce }, signature: payment.signature } },
        500_000n,
      ),
    )
  }
  const calibur = async (owner: PrivateKeyAccount) => {
    const seq = await client.readContract({ address: owner.address, abi: [{ type: 'function', name: 'getSeq', stateMutability: 'view', inputs: [{ name: 'key', type: 'uint256' }], outputs: [{ type: 'uint256' }] }], functionName: 'getSeq', args: [0n] })
    const domain = { chainId: devnet.chainId, account: owner.address, salt: pad(CALIBUR_ADDRESS, { size: 32 }) }
    const deadline = BigInt(Math.floor(Date.now() / 1000) + 600)
    const pay = caliburTypedData({ domain, batch: paymentBatch(encodeTransfer({ token: devnet.usdc, to: payee, amount: fee }) as CaliburCall), nonce: seq, deadline, executor: devnet.runner.contract })
    const calls = caliburTypedData({ domain, batch: ownCallsBatch([encodeTransfer({ token: devnet.usdc, to: fresh(), amount: gift }) as CaliburCall]), nonce: seq + 1n, deadline, executor: devnet.runner.contract })
    const paymentData = encodeSignedExecute({ message: pay.message, signature: await owner.signTypedData(pay as never) })
    const data = encodeSignedExecute({ message: calls.message, signature: await owner.signTypedData(calls as never) })
    return relay(encodeRunnerCall({ form: 'batch', account: owner.address, delegate: CALIBUR_ADDRESS, target: owner.address, paymentData, paymentGas: CALIBUR_PAYMENT_GAS, data, token: devnet.usdc, payee, amount: fee }, 500_000n))
  }
  let salt = 1n
  const metaMask = async (owner: PrivateKeyAccount) => {
    const leg = executionOf(encodeTransfer({ token: devnet.usdc, to: payee, amount: fee }))
    const calls = [executionOf(encodeTransfer({ token: devnet.usdc, to: fresh(), amount: gift }))]
    const delegation = paymentFirstDelegation({ account: owner.address, runner: devnet.runner.contract, leg, calls, deadline: BigInt(Math.floor(Date.now() / 1000) + 600), salt: salt++ })
    const typed = delegationTypedData(devnet.chainId, delegation)
    const signed = signedDelegation(delegation, await owner.signTypedData({ ...typed, message: { ...typed.message, salt: delegation.salt } } as never))
    return relay(
      encodeRunnerCall(
        {
          form: 'batch',
          account: owner.address,
          delegate: metaMaskContracts.delegator,
          target: metaMaskContracts.delegationManager,
          paymentData: encodeRedemption(signed, [leg]),
          paymentGas: METAMASK_PAYMENT_GAS,
          data: encodeRedemption(signed, calls),
          token: devnet.usdc,
          payee,
          amount: fee,
        },
        1_000_000n,
      ),
    )
  }

  // The third-party example's contracts, as its devnet hook builds them: EntryPoint v0.8 at its address, a Simple7702Account.
  const artifacts = createRequire(import.meta.url)
  const entryPoint = artifacts('@account-abstraction/contracts/artifacts/EntryPoint.json') as { abi: Abi; bytecode: Hex }
  const simple7702 = artifacts('@account-abstraction/contracts/artifacts/Simple7702Account.json') as { abi: Abi; bytecode: Hex }
  await deployCodeTo(anvil.rpcUrl, devnet.deployer.privateKey, entryPoint, ENTRY_POINT)
  const implementation = getAddress((await mined(await sponsor.deployContract({ abi: simple7702.abi, bytecode: simple7702.bytecode }))).contractAddress!)
  const userOperation = async (owner: PrivateKeyAccount, nonce: bigint, calls: { target: Address; value: bigint; data: Hex }[], callGasLimit: bigint, fee = 0n, paymasterAndData: Hex = '0x'): Promise<UserOperation> => {
    const op: UserOperation = {
      sender: owner.address,
      nonce,
      callData: encodeExecuteBatch(calls),
      // Paying a prefund (an ETH transfer to the EntryPoint) takes validation past what a fee-less operation needs.
      verificationGasLimit: fee === 0n || paymasterAndData !== '0x' ? VERIFICATION_GAS : 2n * VERIFICATION_GAS,
      callGasLimit,
      preVerificationGas: fee === 0n ? 0n : 50_000n,
      maxPriorityFeePerGas: fee,
      maxFeePerGas: fee,
      initCode: '0x',
      paymasterAndData,
      signature: '0x',
    }
    return { ...op, signature: await owner.signTypedData(userOperationTypedData(devnet.chainId, op) as never) }
  }
  const transferCall = (to: Address, amount: bigint) => {
    const call = encodeTransfer({ token: devnet.usdc, to, amount })
    return { target: devnet.usdc, value: 0n, data: call.data as Hex }
  }
  const simple7702Relay = async (owner: PrivateKeyAccount) => {
    const nonce = await client.readContract({ address: ENTRY_POINT, abi: entryPointAbi, functionName: 'getNonce', args: [owner.address, 0n] })
    const paying = await userOperation(owner, nonce, [transferCall(payee, fee)], PAYMENT_CALL_GAS)
    const calling = await userOperation(owner, nonce + 1n, [transferCall(fresh(), gift)], 100_000n)
    return relay(
      encodeRunnerCall(
        {
          form: 'batch',
          account: owner.address,
          delegate: implementation,
          target: ENTRY_POINT,
          paymentData: encodeHandleOps(paying, payee),
          paymentGas: VERIFICATION_GAS + PAYMENT_CALL_GAS + ENTRY_POINT_OVERHEAD,
          data: encodeHandleOps(calling, payee),
          token: devnet.usdc,
          payee,
          amount: fee,
        },
        500_000n,
      ),
    )
  }
  // A 4337 bundler's own path for the same operation: one UserOperation paying its gas in ETH (the
  // account's prefund), `handleOps` sent by the bundler's EOA, which the EntryPoint pays back.
  const bundler = async (owner: PrivateKeyAccount) => {
    const nonce = await client.readContract({ address: ENTRY_POINT, abi: entryPointAbi, functionName: 'getNonce', args: [owner.address, 0n] })
    const { maxFeePerGas } = await client.estimateFeesPerGas()
    const op = await userOperation(owner, nonce, [transferCall(fresh(), gift)], 100_000n, maxFeePerGas)
    const data = encodeHandleOps(op, sponsor.account.address)
    return (await mined(await sponsor.sendTransaction({ to: ENTRY_POINT, data, gas: 1_000_000n }))).gasUsed
  }
  // The same operation, its gas paid in USDC through a token paymaster: it takes the most the operation
  // may cost in validation and gives back what it did not cost in postOp (two USDC transfers beside the
  // call's). Its price: 3,000 USDC an ether, 3,000 × 10⁶ base units (PaymasterERC20's tokenPerNative).
  const paymasterFixture = compileFixture('FixedPriceTokenPaymaster')
  const tokenPaymaster = getAddress((await mined(await sponsor.deployContract({ abi: paymasterFixture.abi, bytecode: paymasterFixture.bytecode, args: [devnet.usdc, 3_000_000_000n] }))).contractAddress!)
  await mined(await sponsor.writeContract({ address: tokenPaymaster, abi: paymasterFixture.abi, functionName: 'deposit', value: 10n ** 18n }))
  // postOp's limit at 40,000: above it, PaymasterERC20 charges a tenth of the limit as the EntryPoint's unused-gas penalty.
  const paymasterAndData = concat([tokenPaymaster, pad(toHex(100_000n), { size: 16 }), pad(toHex(40_000n), { size: 16 })])
  const approvePaymaster = async (owner: PrivateKeyAccount) => {
    const wallet = createWalletClient({ account: owner, chain: devnetChain(), transport })
    await mined(await wallet.writeContract({ address: devnet.usdc, abi: erc20Abi, functionName: 'approve', args: [tokenPaymaster, maxUint256] }))
  }
  const bundlerWithTokenPaymaster = async (owner: PrivateKeyAccount) => {
    const nonce = await client.readContract({ address: ENTRY_POINT, abi: entryPointAbi, functionName: 'getNonce', args: [owner.address, 0n] })
    const { maxFeePerGas } = await client.estimateFeesPerGas()
    const op = await userOperation(owner, nonce, [transferCall(fresh(), gift)], 100_000n, maxFeePerGas, paymasterAndData)
    const data = encodeHandleOps(op, sponsor.account.address)
    return (await mined(await sponsor.sendTransaction({ to: ENTRY_POINT, data, gas: 1_000_000n }))).gasUsed
  }

  const keys = new Map<Address, Hex>()
  const keyed = async (delegate?: Address) => {
    const key = generatePrivateKey()
    const owner = privateKeyToAccount(key)
    keys.set(owner.address, key)
    await mintUsdc(anvil.rpcUrl, devnet, owner.address, 100_000_000n)
    if (delegate) await mined(await sponsor.sendTransaction({ to: sponsor.account.address, authorizationList: [await sponsor.signAuthorization({ account: owner, contractAddress: delegate })] }))
    return owner
  }
  const ways = [
    { name: 'the account itself (EOA, pays ETH)', run: itself, delegate: undefined, needsEth: true },
    { name: 'Bruno / signed transfer (flow 2)', run: signedTransfer, delegate: undefined, needsEth: false },
    { name: 'Bruno / Calibur (2 signed batches)', run: calibur, delegate: CALIBUR_ADDRESS, needsEth: false },
    { name: 'Bruno / MetaMask (1 delegation, 2 redemptions)', run: metaMask, delegate: metaMaskContracts.delegator, needsEth: false },
    { name: 'Bruno / Simple7702 (the third-party example: 2 UserOperations, Bruno the bundler)', run: simple7702Relay, delegate: implementation, needsEth: false },
    { name: 'a 4337 bundler, Simple7702 (1 UserOperation, gas paid in ETH)', run: bundler, delegate: implementation, needsEth: true },
    { name: 'a 4337 bundler, Simple7702 + token paymaster (1 UserOperation, gas paid in USDC)', run: bundlerWithTokenPaymaster, delegate: implementation, needsEth: true, setup: approvePaymaster },
  ] as const
  // Where a frame's gas goes: by the contract it runs (and, for USDC, what the transfer is for).
  const ECRECOVER = '0x0000000000000000000000000000000000000001'
  const word = (input: Hex, index: number) => getAddress(`0x${input.slice(10 + 64 * index + 24, 10 + 64 * (index + 1))}`)
  const usdcRole = (input: Hex, owner: Address): string => {
    const selector = input.slice(0, 10)
    if (selector === '0x23b872dd') return 'the payment: the paymaster takes the most the operation may cost (transferFrom)'
    if (selector === '0xa9059cbb' && word(input, 0) === owner) return 'the refund: the paymaster gives back what it did not cost'
    if (selector === '0xa9059cbb') return word(input, 0) === payee ? 'the payment: USDC transfer to the payee' : 'the call: the 1 USDC transfer'
    if (selector === '0xe3ee160e' || selector === '0xcf092995') return word(input, 1) === payee ? 'the payment: signed USDC transfer (EIP-3009) to the payee' : 'the call: the signed 1 USDC transfer (EIP-3009)'
    return 'USDC reads (balances, the settlement)'
  }
  const roleOf = (owner: Address) => (frame: { to?: Address; input: Hex }): FrameRole | undefined => {
    const to = checksummed(frame.to)
    if (to === devnet.runner.contract) return { role: "the Runner: checks, settlement, its event", whole: false }
    if (to === ECRECOVER) return { role: 'signature recovery (ecrecover)', whole: true }
    if (to === devnet.usdc) return { role: usdcRole(frame.input, owner), whole: true }
    if (to === owner) return { role: "the account's delegate: signature checks, nonces, running the batches", whole: false }
    if (to === metaMaskContracts.delegationManager) return { role: "MetaMask's DelegationManager", whole: false }
    if (to === paymentFirstEnforcer) return { role: "Bruno's PaymentFirstEnforcer (the delegation's caveat)", whole: false }
    if (to === ENTRY_POINT) return { role: 'the EntryPoint', whole: false }
    if (to === tokenPaymaster) return { role: "the token paymaster (OpenZeppelin's PaymasterERC20)", whole: false }
    return undefined
  }
  const results: { name: string; first: bigint[]; warm: bigint[]; spent: GasSpent }[] = []
  for (const way of ways) {
    const first: bigint[] = []
    const warm: bigint[] = []
    let owner: PrivateKeyAccount | undefined
    for (let round = 0; round < rounds; round++) {
      owner = await keyed(way.delegate)
      if (way.needsEth) await mined(await sponsor.sendTransaction({ to: owner.address, value: 10n ** 18n }))
      if ('setup' in way) await way.setup(owner)
      first.push(await way.run(owner))
      warm.push(await way.run(owner))
    }
    const spent = await whereGasGoes(client, last!, roleOf(owner!.address))
    results.push({ name: way.name, first, warm, spent })
    log(`${way.name}: first ${first.join(', ')}; warm ${warm.join(', ')}`)
  }
  const median = (values: bigint[]) => [...values].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))[Math.floor(values.length / 2)]!
  const base = median(results[0]!.warm)
  const rows = results.map((r) => `| ${r.name} | ${median(r.first).toLocaleString('en')} | ${median(r.warm).toLocaleString('en')} | ${(Number(median(r.warm)) / Number(base)).toFixed(2)}× |`)
  const table = [
    '| way | gas, first relay of a fresh account | gas, warm | warm ÷ the account itself |',
    '|---|---|---|---|',
    ...rows,
  ].join('\n')
  log(table)
  const gas = (value: bigint) => value.toLocaleString('en')
  for (const { name, spent } of results) {
    log(`\n**${name}**, one warm relay: ${gas(spent.gasUsed)} gas\n\n| where | gas |\n|---|--:|`)
    for (const [role, used] of spent.roles) log(`| ${role} | ${gas(used)} |`)
    const { SSTORE, SLOAD, LOG, KECCAK256 } = spent.opcodes
    log(`\nAcross those: storage writes ${gas(SSTORE)}, reads ${gas(SLOAD)}, events ${gas(LOG)}, hashing ${gas(KECCAK256)}.`)
    log(`Calldata ${spent.calldata.bytes} bytes (${spent.calldata.zeroBytes} zero), ${gas(spent.calldata.gas)} gas; signed transaction ${spent.signedBytes} bytes, FastLZ ${spent.fastLzBytes}, Fjord's estimated size ${spent.fjordSize}.`)
  }
  mkdirSync(new URL('./out/', import.meta.url), { recursive: true })
  writeFileSync(new URL('./out/gas.json', import.meta.url), JSON.stringify({ machine: machine(), rounds, results: results.map((r) => ({ ...r, first: r.first.map(String), warm: r.warm.map(String), spent: JSON.parse(JSON.stringify(r.spent, (_key, value) => (typeof value === 'bigint' ? value.toString() : value))) })) }, null, 2))
} finally {
  await anvil.stop()
}
