import t from 'tap'
import {
  type Address,
  BaseError,
  decodeErrorResult,
  type Hex,
  type TransactionReceipt,
  concat,
  createPublicClient,
  createTestClient,
  createWalletClient,
  encodeFunctionData,
  erc20Abi,
  getAddress,
  http,
  parseEventLogs,
  parseUnits,
  toFunctionSelector,
  toHex,
  zeroAddress,
} from 'viem'
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import { devnetChain } from '../core/devnet/chain.ts'
import { payeeVaultAbi, runnerAbi } from '../contracts/abi.ts'
import { payeeVaultArtifact } from '../contracts/artifacts.ts'
import { startAnvil } from '../core/devnet/anvil.ts'
import { deployDevnet } from '../core/devnet/deploy.ts'
import { mintUsdc } from '../core/devnet/fund.ts'
import { encodeTransfer } from '../core/chain/erc20Calls.ts'
import { decodeRelayResult, encodeRunnerCall, KEEP_PAYMENT, type RunnerCharge, type RunnerRelay } from '../core/relay/runnerCall.ts'
import { calldataGas } from '../core/relay/runnerTransaction.ts'
import { transferWithAuthorizationTypes } from '../core/relay/transferWithAuthorizationTypes.ts'
import { encodeSignedExecute } from '../plugins/calibur/executeCalldata.ts'
import { CALIBUR_ADDRESS } from '../plugins/calibur/networkOptions.ts'
import { ownCallsBatch, paymentBatch } from '../plugins/calibur/paymentFirstBatch.ts'
import { caliburTypedData } from '../plugins/calibur/typedData.ts'

// Issue 32, the contracts: the Runner's settlement (`Charge`, `_settle`) and the PayeeVault that refunds. A relay
// whose payee is a vault and whose charge asks for a refund pays the payee what the transaction cost the runner
// (priced by the charge, markup added, rounded up) and sends the rest back to the payer in the same transaction;
// a refund that cannot be made leaves the payment with the payee and never reverts anything; no relayed call can
// take what the vault holds. Every relay is sent for real and checked against its receipt.

const anvil = await startAnvil()
t.teardown(() => anvil.stop())
const devnet = await deployDevnet(anvil.rpcUrl)
const transport = http(anvil.rpcUrl)
const chain = devnetChain(devnet.chainId)
const client = createPublicClient({ chain, transport, pollingInterval: 50 })
const testClient = createTestClient({ mode: 'anvil', chain, transport })
const wallet = (account: PrivateKeyAccount) => createWalletClient({ account, chain, transport })
const operator = wallet(privateKeyToAccount(devnet.runner.operator.privateKey))
const deployer = wallet(privateKeyToAccount(devnet.deployer.privateKey))
const runner = devnet.runner.contract
const usdc = devnet.usdc
const treasury = privateKeyToAccount(generatePrivateKey())
const sink: Address = '0x5151515151515151515151515151515151515151'
// Where an attacking call would send the vault's tokens.
const thief: Address = '0x7e1f7e1f7e1f7e1f7e1f7e1f7e1f7e1f7e1f7e1f'

const mined = async (hash: Hex) => {
  const receipt = await client.waitForTransactionReceipt({ hash })
  if (receipt.status !== 'success') throw new Error(`reverted: ${hash}`)
  return receipt
}
const deployVault = async (forRunner: Address) =>
  getAddress((await mined(await deployer.deployContract({ ...payeeVaultArtifact, args: [forRunner, treasury.address] }))).contractAddress!)
const vault = await deployVault(runner)
const usdcOf = (address: Address) => client.readContract({ address: usdc, abi: erc20Abi, functionName: 'balanceOf', args: [address] })

/** What each relay pays: far more than its gas costs, so that a refund is due. */
const amount = parseUnits('5', 6)
/** The devnet's price, 3,000 USDC per ETH, as the operator would sign it. */
const USDC_PER_ETHER = 3_000_000_000n
/** The least gas the vault's refund of USDC needs on a warm payer balance (measured: less, and the refund fails). */
const LEAST_REFUND_GAS = 6_750n
/** The refund's cap the operator gives: the least and a margin (the cap is charged whole). */
const REFUND_GAS = LEAST_REFUND_GAS + 250n

async function payer(): Promise<PrivateKeyAccount> {
  const account = privateKeyToAccount(generatePrivateKey())
  await mintUsdc(anvil.rpcUrl, devnet, account.address, 100_000_000n)
  return account
}

/** A signed EIP-3009 transfer of `amount` from `from` to `to`, as the Runner takes it. */
async function authorization(from: PrivateKeyAccount, to: Address) {
  const { timestamp } = await client.getBlock()
  const message = { from: from.address, to, value: amount, validAfter: 0n, validBefore: timestamp + 3600n, nonce: toHex(BigInt(generatePrivateKey()), { size: 32 }) }
  const signature = await from.signTypedData({
    domain: { name: 'USD Coin', version: '2', chainId: devnet.chainId, verifyingContract: usdc },
    types: { TransferWithAuthorization: transferWithAuthorizationTypes.TransferWithAuthorization },
    primaryType: 'TransferWithAuthorization',
    message,
  })
  return { token: usdc, authorization: { ...message, value: message.value.toString(), validAfter: '0', validBefore: message.validBefore.toString() }, signature } as const
}

/** A signed transfer's relay to `payee`, with `call` after it. */
async function signedTransferRelay(from: PrivateKeyAccount, payee: Address, call: { to: Address; data: Hex } = { to: zeroAddress, data: '0x' }): Promise<RunnerRelay> {
  return { form: 'authorization', call, payment: await authorization(from, payee), payee }
}

/** A Calibur-delegated account's two signed batches: pay `payee`, then send 1 USDC to the sink. */
async function caliburRelay(account: PrivateKeyAccount, payee: Address): Promise<RunnerRelay> {
  await testClient.setCode({ address: account.address, bytecode: concat(['0xef0100', CALIBUR_ADDRESS]) })
  const domain = { chainId: devnet.chainId, account: account.address, salt: toHex(BigInt(CALIBUR_ADDRESS), { size: 32 }) }
  const signed = async (batch: ReturnType<typeof paymentBatch>, nonce: bigint) => {
    const typedData = caliburTypedData({ domain, batch, nonce, deadline: 0n })
    return encodeSignedExecute({ message: typedData.message, signature: await account.signTypedData(typedData as never) })
  }
  const leg = encodeTransfer({ token: usdc, to: payee, amount })
  const work = encodeTransfer({ token: usdc, to: sink, amount: 1_000_000n })
  return {
    form: 'batch',
    account: account.address,
    delegate: CALIBUR_ADDRESS,
    target: account.address,
    paymentData: await signed(paymentBatch({ ...leg, to: getAddress(leg.to), data: leg.data as Hex }), 0n),
    paymentGas: 150_000n,
    data: await signed(ownCallsBatch([{ to: getAddress(work.to), value: '0', data: work.data as Hex }]), 1n),
    token: usdc,
    payee,
    amount,
  }
}

/**
 * The operator's charge for `relay`: its intrinsic gas counted from the calldata with the charge's own words at
 * their dearest (nonzero bytes), the EIP-7623 floor likewise, the devnet's price and `overrides`.
 */
function chargeFor(relay: RunnerRelay, callGas: bigint, overrides: Partial<RunnerCharge> = {}): RunnerCharge {
  const dearest: RunnerCharge = { baseGas: 2n ** 32n - 1n, floorGas: 2n ** 32n - 1n, l1FeeWei: 2n ** 64n - 1n, unitsPerEther: 2n ** 64n - 1n, markupBps: 0xffffn, refundGas: 0xffffffn }
  // EIP-7623 counts a token per zero byte and four per other byte: a quarter of the calldata gas.
  const calldata = calldataGas(encodeRunnerCall(relay, callGas, dearest))
  return {
    baseGas: 21_000n + calldata,
    floorGas: 21_000n + (10n * calldata) / 4n,
    l1FeeWei: 0n,
    unitsPerEther: USDC_PER_ETHER,
    markupBps: 500n,
    refundGas: REFUND_GAS,
    ...overrides,
  }
}

/** Sends a relay at its estimate (the operator sends only what simulates), and returns its receipt and `Relayed`. */
async function relay(relayed: RunnerRelay, charge: RunnerCharge, callGas = 200_000n) {
  const data = encodeRunnerCall(relayed, callGas, charge)
  const gas = await client.estimateGas({ account: operator.account.address, to: runner, data })
  const receipt = await mined(await operator.sendTransaction({ to: runner, data, gas }))
  const [event] = parseEventLogs({ abi: runnerAbi, eventName: 'Relayed', logs: receipt.logs })
  if (!event) throw new Error('no Relayed')
  return { receipt, ...event.args }
}

/** What the transaction cost the runner, in USDC base units at the charge's price, rounded down (wei → units). */
const spentUnits = (receipt: TransactionReceipt) => (receipt.gasUsed * receipt.effectiveGasPrice * USDC_PER_ETHER) / 10n ** 18n
const ceilDiv = (a: bigint, b: bigint) => (a === 0n ? 0n : (a - 1n) / b + 1n)

for (const form of ['a signed transfer', 'a Calibur batch'] as const) {
  t.test(`${form}, its payee a vault: the payee keeps the cost and the markup, the payer gets the rest back in the same transaction`, async (t) => {
    const account = await payer()
    const relayed = form === 'a signed transfer' ? await signedTransferRelay(account, vault) : await caliburRelay(account, vault)
    const [payerBefore, vaultBefore] = await Promise.all([usdcOf(account.address), usdcOf(vault)])
    const { receipt, received, charged, refunded, callSucceeded } = await relay(relayed, chargeFor(relayed, 200_000n))
    t.equal(callSucceeded, true)
    t.equal(received, amount, 'the whole payment arrived')
    t.equal(charged + refunded, received, 'charged and refunded make the payment')
    t.ok(refunded > 0n, `refunded ${refunded} of ${received}`)
    const sent = form === 'a Calibur batch' ? 1_000_000n : 0n
    t.equal(await usdcOf(account.address), payerBefore - amount + refunded - sent, 'the payer paid the charge only')
    t.equal(await usdcOf(vault), vaultBefore + charged, 'the vault kept the charge')
    // Never below cost plus markup; above it only by what the Runner counts at its most (the refund's cap, the tail).
    const cost = spentUnits(receipt)
    const least = ceilDiv(cost * 10_500n, 10_000n)
    t.ok(charged >= least, `charged ${charged} ≥ cost ${cost} + 5 % = ${least}`)
    const over = Number(charged - least) / Number(least)
    t.ok(over <= 0.01, `charged ${charged} is ${(over * 100).toFixed(2)} % over cost + markup, at most 1 %`)
    t.comment(`${form}: gasUsed ${receipt.gasUsed}, cost ${cost} units, charged ${charged}, refunded ${refunded}`)
  })
}

t.test('the Runner counts the gas its transaction is charged: never less, and at most a little more', async (t) => {
  // A target that reverts with 300 bytes (the Runner keeps 256): PUSH2 0x012c PUSH1 0 REVERT.
  const reverter: Address = '0x00000000000000000000000000000000000bad00'
  await testClient.setCode({ address: reverter, bytecode: '0x61012c6000fd' })
  const tooMuch = encodeTransfer({ token: usdc, to: sink, amount: 10n ** 12n })
  const cases: [string, () => Promise<RunnerRelay>][] = [
    ['a signed transfer, no call', async () => signedTransferRelay(await payer(), vault)],
    ['a signed transfer, a call failing with a 100-byte reason', async () => signedTransferRelay(await payer(), vault, { to: usdc, data: tooMuch.data as Hex })],
    ['a signed transfer, a call failing with 300 bytes', async () => signedTransferRelay(await payer(), vault, { to: reverter, data: '0x' })],
    ['a Calibur batch', async () => caliburRelay(await payer(), vault)],
  ]
  // At exactly 1 gwei per gas and 10^9 base units per ether, a unit is a gas: `charged` is the Runner's count.
  for (const [name, make] of cases) {
    const relayed = await make()
    const charge = chargeFor(relayed, 200_000n, { unitsPerEther: 10n ** 9n, markupBps: 0n, refundGas: LEAST_REFUND_GAS })
    const data = encodeRunnerCall(relayed, 200_000n, charge)
    const gas = await client.estimateGas({ account: operator.account.address, to: runner, data })
    await testClient.setNextBlockBaseFeePerGas({ baseFeePerGas: 10n ** 9n })
    const receipt = await mined(await operator.sendTransaction({ to: runner, data, gas, maxFeePerGas: 10n ** 9n, maxPriorityFeePerGas: 0n }))
    const [event] = parseEventLogs({ abi: runnerAbi, eventName: 'Relayed', logs: receipt.logs })
    const { charged: counted, refunded } = event!.args
    t.ok(refunded > 0n, `${name}: refunded with its least gas`)
    t.ok(counted >= receipt.gasUsed, `${name}: counted ${counted} ≥ used ${receipt.gasUsed}`)
    t.ok(counted - receipt.gasUsed <= 600n, `${name}: over by ${counted - receipt.gasUsed}, at most 600`)
  }
})

t.test('the refund\'s gas: the same relay with and without it, on a warm payer balance', async (t) => {
  const gasOf = async (charge: (relayed: RunnerRelay) => RunnerCharge) => {
    const account = await payer()
    const relayed = await signedTransferRelay(account, vault)
    const { receipt, refunded } = await relay(relayed, charge(relayed))
    return { gas: receipt.gasUsed, refunded }
  }
  const kept = await gasOf(() => KEEP_PAYMENT)
  const refunding = await gasOf((relayed) => chargeFor(relayed, 200_000n))
  t.equal(kept.refunded, 0n)
  t.ok(refunding.refunded > 0n)
  const added = refunding.gas - kept.gas
  t.ok(added > 0n && added <= REFUND_GAS + 6_000n, `the settlement and refund add ${added} gas: the refund (at most ${REFUND_GAS}), its call and the arithmetic`)
  t.comment(`settlement + refund: ${added} gas (kept: ${kept.gas}, refunded: ${refunding.gas})`)
})

t.test('a simulation says what the refund took: that cap makes the same refund, and it is the least within 100 gas', async (t) => {
  for (const make of [(account: PrivateKeyAccount) => signedTransferRelay(account, vault), (account: PrivateKeyAccount) => caliburRelay(account, vault)]) {
    const relayed = await make(await payer())
    // As the relay measures it: no gas price in the simulation (nothing is charged, all is refunded) and a generous cap.
    const probe = await client.call({ account: operator.account.address, to: runner, data: encodeRunnerCall(relayed, 200_000n, chargeFor(relayed, 200_000n, { refundGas: 100_000n })) })
    const { refundGasUsed } = decodeRelayResult(relayed.form, probe.data!)
    t.ok(refundGasUsed >= LEAST_REFUND_GAS && refundGasUsed <= LEAST_REFUND_GAS + 100n, `${relayed.form}: the refund took ${refundGasUsed} (its least cap: ${LEAST_REFUND_GAS})`)
    const sent = await relay(relayed, chargeFor(relayed, 200_000n, { refundGas: refundGasUsed }))
    t.ok(sent.refunded > 0n, `${relayed.form}: with ${refundGasUsed} as its cap the refund is made (${sent.refunded})`)
  }
  const toEoa = await signedTransferRelay(await payer(), '0xa0Ee7A142d267C1f36714E4a8F75612F20a79720')
  const eoa = await client.call({ account: operator.account.address, to: runner, data: encodeRunnerCall(toEoa, 200_000n, chargeFor(toEoa, 200_000n)) })
  t.equal(decodeRelayResult('authorization', eoa.data!).refundGasUsed, 0n, 'a payee that makes no refund: 0')
})

t.test('the arithmetic: a floor, an L1 fee, the price and the markup, each division rounded up in the runner\'s favour', async (t) => {
  // With a floor above what the transaction uses, the gas counted is the floor exactly: the charge is known. At 1 gwei
  // and 10^9 units per ether the floor (3,000,000) is 3,000,000 units and the L1 fee (0.0005 ETH) 500,000: each moves
  // the charge by far more than a unit.
  const account = await payer()
  const relayed = await signedTransferRelay(account, vault)
  const charge = chargeFor(relayed, 200_000n, { floorGas: 3_000_000n, l1FeeWei: 500_000_000_000_037n, unitsPerEther: 10n ** 9n + 7n, markupBps: 333n })
  const data = encodeRunnerCall(relayed, 200_000n, charge)
  const gas = await client.estimateGas({ account: operator.account.address, to: runner, data })
  await testClient.setNextBlockBaseFeePerGas({ baseFeePerGas: 10n ** 9n })
  const receipt = await mined(await operator.sendTransaction({ to: runner, data, gas, maxFeePerGas: 10n ** 9n, maxPriorityFeePerGas: 0n }))
  const { charged, refunded } = parseEventLogs({ abi: runnerAbi, eventName: 'Relayed', logs: receipt.logs })[0]!.args
  const cost = ceilDiv((3_000_000n * receipt.effectiveGasPrice + 500_000_000_000_037n) * (10n ** 9n + 7n), 10n ** 18n)
  t.equal(charged, ceilDiv(cost * 10_333n, 10_000n), 'ceil(ceil((floor × gas price + L1 fee) × price / 1e18) × (1 + markup))')
  t.ok(charged > 3_500_000n, `the floor and the L1 fee are charged (${charged})`)
  t.equal(refunded, amount - charged)
  // One base unit per ether: the cost is a fraction of a unit, rounded up to 1; the markup on 1 rounds up to 2.
  const tiny = await payer()
  const tinyRelay = await signedTransferRelay(tiny, vault)
  const one = await relay(tinyRelay, chargeFor(tinyRelay, 200_000n, { unitsPerEther: 1n, markupBps: 0n }))
  t.equal(one.charged, 1n, 'a fraction of a unit is charged as one')
  const other = await payer()
  const otherRelay = await signedTransferRelay(other, vault)
  const two = await relay(otherRelay, chargeFor(otherRelay, 200_000n, { unitsPerEther: 1n, markupBps: 500n }))
  t.equal(two.charged, 2n, 'the markup on one unit is a unit more')
})

t.test('a gas limit that leaves the refund short of its gas is refused before the call (GasShort), never a starved refund', async (t) => {
  for (const make of [(account: PrivateKeyAccount) => signedTransferRelay(account, vault), (account: PrivateKeyAccount) => caliburRelay(account, vault)]) {
    const relayed = await make(await payer())
    const data = encodeRunnerCall(relayed, 200_000n, chargeFor(relayed, 200_000n))
    const gas = await client.estimateGas({ account: operator.account.address, to: runner, data })
    for (const short of [1_000n, 4_000n]) {
      const failure = await client.call({ account: operator.account.address, to: runner, data, gas: gas - short }).then(
        () => 'ran',
        (error: BaseError) => {
          const reverted = error.walk((inner) => typeof (inner as { data?: unknown }).data === 'string') as { data?: Hex } | null
          return reverted?.data ? decodeErrorResult({ abi: runnerAbi, data: reverted.data }).errorName : error.shortMessage
        },
      )
      t.equal(failure, 'GasShort', `${relayed.form}: ${short} gas under the estimate, the Runner refuses to start the call`)
    }
  }
})

t.test('a call that burns its whole stipend still leaves the refund all its gas: the Runner reserved it before the call', async (t) => {
  // A payee whose refund needs ≈27,000 gas (1,024 turns of a loop, then its selector): more than the settlement's own
  // reserve would leave it after a call that spends its whole stipend.
  const selector = toFunctionSelector('refund(address,address,uint256)').slice(2)
  const heavy: Address = '0x00000000000000000000000000000000000beef1'
  await testClient.setCode({ address: heavy, bytecode: `0x6104005b600190038060035750${'7f'}${selector.padEnd(64, '0')}60005260206000f3` })
  const burner: Address = '0x00000000000000000000000000000000000b0e13'
  await testClient.setCode({ address: burner, bytecode: '0x5b600056' })
  const relayed = await signedTransferRelay(await payer(), heavy, { to: burner, data: '0x' })
  const { callSucceeded, refunded } = await relay(relayed, chargeFor(relayed, 200_000n, { refundGas: 30_000n }))
  t.equal(callSucceeded, false, 'the call burnt its stipend')
  t.ok(refunded > 0n, `the refund ran to its end (${refunded} refunded, as the payee answered)`)
})

t.test('a cost at or above the payment: the payee keeps it all, nothing is refunded', async (t) => {
  const account = await payer()
  const relayed = await signedTransferRelay(account, vault)
  const { charged, refunded, received } = await relay(relayed, chargeFor(relayed, 200_000n, { unitsPerEther: 10n ** 30n }))
  t.equal(charged, received)
  t.equal(refunded, 0n)
})

t.test('a refund that cannot be made leaves the payment with the payee and the relay whole', async (t) => {
  const cases: [string, () => Promise<{ payee: Address; charge?: Partial<RunnerCharge> }>][] = [
    ['the payee is an EOA (no refunder)', async () => ({ payee: '0xa0Ee7A142d267C1f36714E4a8F75612F20a79720' })],
    ['the refund runs out of its gas', async () => ({ payee: vault, charge: { refundGas: 5_000n } })],
    ['the vault is another Runner\'s', async () => ({ payee: await deployVault(sink) })],
  ]
  for (const [name, setup] of cases) {
    const { payee, charge } = await setup()
    const account = await payer()
    const relayed = await signedTransferRelay(account, payee)
    const before = await usdcOf(account.address)
    const { receipt, received, charged, refunded, callSucceeded } = await relay(relayed, chargeFor(relayed, 200_000n, charge))
    t.equal(receipt.status, 'success', `${name}: the transaction stands`)
    t.same([received, charged, refunded, callSucceeded], [amount, amount, 0n, true], `${name}: kept, logged as kept`)
    t.equal(await usdcOf(account.address), before - amount, `${name}: the payer got nothing back`)
  }
})

t.test('a payee that burns all the gas it is given: its refund is cut at the cap, the payment kept, the runner\'s count still whole', async (t) => {
  // JUMPDEST PUSH1 0 JUMP: a loop to the end of its gas.
  const burner: Address = '0x00000000000000000000000000000000000b0e12'
  await testClient.setCode({ address: burner, bytecode: '0x5b600056' })
  // The same relay to the burner, its USDC balance no longer zero: kept, then asking a refund.
  await relay(await signedTransferRelay(await payer(), burner), KEEP_PAYMENT)
  const kept = await relay(await signedTransferRelay(await payer(), burner), KEEP_PAYMENT)
  const refunding = await signedTransferRelay(await payer(), burner)
  const charge = chargeFor(refunding, 200_000n)
  const asked = await relay(refunding, charge)
  t.same([asked.charged, asked.refunded], [amount, 0n], 'kept whole')
  const burned = asked.receipt.gasUsed - kept.receipt.gasUsed
  t.ok(burned >= charge.refundGas && burned <= charge.refundGas + 6_000n, `the refund burned ${burned} gas: its cap (${charge.refundGas}), its call and the arithmetic, no more`)
})

t.test('the vault refunds only the Runner, only while it settles, only what the token will send', async (t) => {
  // A Runner stand-in whose settling() answers true (PUSH1 1 PUSH1 0 MSTORE PUSH1 32 PUSH1 0 RETURN), by a state override.
  const settlingRunner = [{ address: runner, code: '0x600160005260206000f3' as Hex }]
  const refundCall = (to: Address, value: bigint) => encodeFunctionData({ abi: payeeVaultAbi, functionName: 'refund', args: [usdc, to, value] })
  const answer = (from: Address, data: Hex) =>
    client.call({ account: from, to: vault, data, stateOverride: settlingRunner }).then(
      (result) => result.data,
      (error: Error) => (/NotSettling|0x[0-9a-f]*/.exec(error.message) ?? ['reverted'])[0],
    )
  t.equal(await answer(runner, refundCall(thief, 1n)), toFunctionSelector('refund(address,address,uint256)').padEnd(66, '0'), 'the Runner, settling: refunded')
  t.not(await answer(thief, refundCall(thief, 1n)), toFunctionSelector('refund(address,address,uint256)').padEnd(66, '0'), 'anyone else, even while the Runner settles: refused')
  // USDC's blacklister refuses a transfer to a blacklisted address: the vault says the refund failed.
  const blocked: Address = '0x00000000000000000000000000000000000b10c7'
  await mined(await deployer.writeContract({ address: usdc, abi: [{ type: 'function', name: 'blacklist', inputs: [{ name: 'account', type: 'address' }], outputs: [], stateMutability: 'nonpayable' }], functionName: 'blacklist', args: [blocked] }))
  const refused = await client.call({ account: runner, to: vault, data: refundCall(blocked, 1n), stateOverride: settlingRunner }).then(
    () => 'refunded',
    (error: Error) => error.message,
  )
  t.match(refused, new RegExp(toFunctionSelector('TransferFailed(address)').slice(2)), 'a transfer the token refuses is no refund: TransferFailed')
})

t.test('no relayed call can take what the vault holds: not as the Runner, not by withdrawing', async (t) => {
  // Fill the vault, then relay calls aimed at it, run as the Runner in the call phase.
  const held = await usdcOf(vault)
  t.ok(held > 0n, `the vault holds ${held}`)
  const attacks: [string, Hex][] = [
    ['refund(usdc, thief, all)', encodeFunctionData({ abi: payeeVaultAbi, functionName: 'refund', args: [usdc, thief, held] })],
    ['withdraw(usdc, thief, all)', encodeFunctionData({ abi: payeeVaultAbi, functionName: 'withdraw', args: [usdc, thief, held] })],
  ]
  for (const [name, data] of attacks) {
    const account = await payer()
    const relayed = await signedTransferRelay(account, vault, { to: vault, data })
    const { callSucceeded, reason, charged, refunded } = await relay(relayed, chargeFor(relayed, 200_000n))
    t.equal(callSucceeded, false, `${name} from the call phase fails`)
    t.equal(reason, toFunctionSelector(name.startsWith('refund') ? 'NotSettling()' : 'NotOwner()'), 'with the vault\'s refusal')
    t.ok(charged + refunded === amount && refunded > 0n, 'the relay still settles: its own refund is made')
  }
  t.equal(await usdcOf(thief), 0n, 'the thief got nothing')
  // Outside any relay, the Runner's flag is down and a stranger is not the Runner.
  const stranger = wallet(privateKeyToAccount(generatePrivateKey()))
  await testClient.setBalance({ address: stranger.account.address, value: 10n ** 18n })
  await t.rejects(stranger.writeContract({ address: vault, abi: payeeVaultAbi, functionName: 'refund', args: [usdc, thief, 1n] }), /NotSettling/)
  await t.rejects(stranger.writeContract({ address: vault, abi: payeeVaultAbi, functionName: 'withdraw', args: [usdc, thief, 1n] }), /NotOwner/)
  t.equal(await client.readContract({ address: runner, abi: runnerAbi, functionName: 'settling' }), false)
  // The owner withdraws what the vault earned.
  await testClient.setBalance({ address: treasury.address, value: 10n ** 18n })
  const before = await usdcOf(vault)
  await mined(await wallet(treasury).writeContract({ address: vault, abi: payeeVaultAbi, functionName: 'withdraw', args: [usdc, treasury.address, before] }))
  t.equal(await usdcOf(treasury.address), before)
  t.equal(await usdcOf(vault), 0n)
})
