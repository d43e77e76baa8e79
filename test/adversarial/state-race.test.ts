import t, { type Test } from 'tap'
import { concat, decodeErrorResult, encodeAbiParameters, encodeFunctionData, erc20Abi, getAddress, keccak256, parseAbi, parseEther, parseSignature, type Address, type Hex, type PrivateKeyAccount } from 'viem'
import { runnerAbi } from '../../contracts/abi.ts'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { DelegationManager } from '@metamask/delegation-abis'
import { encodeSignedExecute } from '../../plugins/calibur/executeCalldata.ts'
import { metaMaskContracts } from '../../plugins/metamask/contracts.ts'
import { readRedemption } from '../../plugins/metamask/delegation.ts'
import { signedBatches } from '../fixtures/caliburSignatures.ts'
import { startDevnetBruno } from '../fixtures/devnetBruno.ts'
import { compileTypedFixture } from '../fixtures/solidityFixture.ts'
import { mintUsdc } from '../../core/devnet/fund.ts'
import { randomAuthorizationNonce, transferWithAuthorizationTypedData } from '../../plugins/3009/typedData.ts'
import type { LedgerEntry } from '../../core/testing/runnerLedger.ts'
import { RawMcpClient } from '../fixtures/mcpHttp.ts'
import { CALIBUR_ADDRESS } from '../../plugins/calibur/networkOptions.ts'
import {
  adversaryChain,
  ATTACK_FEES,
  bindings,
  compileAdversary,
  eip3009AttackAbi,
  expectCallFailedAndPaid,
  expectRevertedInPaymentPhase,
  fundedPayer,
  ledgerEntry,
  HEAVY_ROUNDS,
  stateTargetAbi,
  transferPayment,
  type Binding,
} from './adversary.ts'

// Issue 12, part 2: state changed before inclusion. Bruno accepted a submission and its runner transaction
// waits in the pool; in the same block, ahead of it (a higher tip), the payer — or anyone holding the payer's
// signatures — moves the USDC away, cancels or spends the EIP-3009 authorization, undelegates or re-delegates
// the account, spends its Calibur nonce or disables its MetaMask delegation, revokes an allowance the call needs or flips a flag the call reads.
// Payment first means one of two endings (DESIGN §3): the runner is paid anyway (the call fails, the payment
// stays), or the whole transaction reverts in its payment phase, the one loss allowed, bounded by that phase's
// gas. Each call here does ≈2M gas of work, so a revert that cost more than the payment phase would show.

const bruno = await startDevnetBruno(t, { groups: ['bruno', 'calibur', 'metamask'], pollMs: 100, x402HoldSec: 1 })
const { deployment } = bruno
const chain = adversaryChain(bruno)
const artifacts = compileAdversary()
const [target, inert] = [await chain.deploy(artifacts.StateTarget), await chain.deploy(artifacts.Inert)]
const mcp = new RawMcpClient(`${bruno.mcpUrl}/bruno,calibur,metamask`)
const api = bindings(bruno, mcp)
const usdc = deployment.usdc
const payee = getAddress(bruno.config.networks[0]!.payee)
const usdcDomain = { name: 'USD Coin', version: '2', chainId: deployment.chainId, verifyingContract: usdc } as const
const PULLED = 1_000_000n

const losses: { label: string; entry: LedgerEntry }[] = []
const paidAnyway: string[] = []
/** How many of the races run were to end reverted in the payment phase (the tally checks them all did). */
let expectedReverts = 0

/** What the payer does to its own payment or its call, in a transaction of its own ahead of the runner's. */
type Attack = (payer: PrivateKeyAccount, context: { payment: any; signedCall?: { to: Address; data: Hex } }) => Promise<Hex>

const wallet = (account: PrivateKeyAccount) => chain.walletOf(account)
const send = (account: PrivateKeyAccount, to: Address, data: Hex) => wallet(account).sendTransaction({ to, data, gas: 200_000n, ...ATTACK_FEES })

/** The payer's own setup transactions, mined at once: its flag up, the call's allowance given. */
async function prepare(account: PrivateKeyAccount) {
  await chain.mined(await wallet(account).sendTransaction({ to: target, data: encodeFunctionData({ abi: stateTargetAbi, functionName: 'setOpen', args: [true] }) }))
  await chain.mined(await wallet(account).sendTransaction({ to: usdc, data: encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [target, PULLED] }) }))
}

const workCall = (owner: Address) => ({ to: target, data: encodeFunctionData({ abi: stateTargetAbi, functionName: 'workIfOpen', args: [owner, HEAVY_ROUNDS] }) })
const pullCall = (owner: Address) => ({ to: target, data: encodeFunctionData({ abi: stateTargetAbi, functionName: 'pullAndWork', args: [usdc, owner, PULLED, HEAVY_ROUNDS] }) })

const moveUsdcAway: Attack = async (payer) =>
  send(payer, usdc, encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [privateKeyToAccount(generatePrivateKey()).address, await chain.usdcOf(payer.address)] }))
const revokeAllowance: Attack = (payer) => send(payer, usdc, encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [target, 0n] }))
const flipFlag: Attack = (payer) => send(payer, target, encodeFunctionData({ abi: stateTargetAbi, functionName: 'setOpen', args: [false] }))

interface RaceCase {
  readonly name: string
  readonly call: (owner: Address) => { to: Address; data: Hex }
  readonly attack: Attack
  /** `unharmed`: the attack fails on its own and the relay runs as signed. */
  readonly expected: 'reverted' | 'paid' | 'unharmed'
  /** For a call that fails: what status.reason says. */
  readonly reason?: RegExp
  /** The attacker's own transaction paid the payee (it spent the payment itself). */
  readonly payeePaidByAttacker?: boolean
}

const authorizationCases: RaceCase[] = [
  { name: 'the payer moves all its USDC away', call: workCall, attack: moveUsdcAway, expected: 'reverted' },
  {
    name: 'the payer cancels the authorization (cancelAuthorization, sent by a third party)',
    call: workCall,
    expected: 'reverted',
    attack: async (payer, { payment }) => {
      const nonce = payment.authorization.nonce as Hex
      const signature = await payer.signTypedData({
        domain: usdcDomain,
        types: { CancelAuthorization: [{ name: 'authorizer', type: 'address' }, { name: 'nonce', type: 'bytes32' }] },
        primaryType: 'CancelAuthorization',
        message: { authorizer: payer.address, nonce },
      })
      const { v, r, s } = parseSignature(signature)
      return send(chain.sponsor.account as PrivateKeyAccount, usdc, encodeFunctionData({ abi: eip3009AttackAbi, functionName: 'cancelAuthorization', args: [payer.address, nonce, Number(v), r, s] }))
    },
  },
  {
    name: 'a third party spends the authorization itself (transferWithAuthorization to the payee, directly)',
    call: workCall,
    expected: 'reverted',
    payeePaidByAttacker: true,
    attack: async (_payer, { payment }) => {
      const { authorization } = payment
      const { v, r, s } = parseSignature(payment.signature as Hex)
      const args = [authorization.from, authorization.to, BigInt(authorization.value), BigInt(authorization.validAfter), BigInt(authorization.validBefore), authorization.nonce, Number(v), r, s] as const
      return send(chain.sponsor.account as PrivateKeyAccount, usdc, encodeFunctionData({ abi: eip3009AttackAbi, functionName: 'transferWithAuthorization', args }))
    },
  },
  { name: 'the payer revokes the allowance the call pulls with', call: pullCall, attack: revokeAllowance, expected: 'paid', reason: /exceeds allowance/ },
  { name: 'the payer flips the flag the call reads', call: workCall, attack: flipFlag, expected: 'paid', reason: /closed by its owner/ },
]

t.test('the EIP-3009 form: the payer races its own submission, in the same block', async (t) => {
  const transports: Binding[] = ['mcp', 'rest', 'rpc']
  let index = 0
  // Each race by one of the three bindings in turn, and each again by x402: a signed transfer goes by any binding (x402 takes no batch).
  for (const [race, binding] of authorizationCases.flatMap((race) => [[race, transports[index++ % transports.length]!], [race, 'x402']] as const)) {
    if (race.expected === 'reverted') expectedReverts++
    const label = `3009: ${race.name} (submitted via ${binding})`
    await t.test(label, async (t) => {
      const key = generatePrivateKey()
      const payer = await fundedPayer(bruno, chain, key, 100_000_000n, parseEther('1'))
      await prepare(payer)
      const call = race.call(payer.address)
      const quote = await mcp.call('quote', { chain: 'local', call, token: 'USDC', payment: 'authorization' })
      const amount = BigInt(quote.amountBaseUnits)
      const payment = await transferPayment(bruno, key, amount)
      const payeeBefore = await chain.usdcOf(payee)
      const { value: submitted, hash } = await chain.inOneBlock(() => api.submitAndSend(binding, { call, payment }), {
        attack: async () => [await race.attack(payer, { payment })],
      })
      t.ok(submitted.accepted && hash, 'accepted and sent before the attack')
      if (!submitted.accepted) return
      const view = await api.settled(binding, submitted.id)
      if (race.expected === 'paid') {
        const { charged } = await expectCallFailedAndPaid(t, bruno, view, amount, label, race.reason)
        t.equal((await chain.usdcOf(payee)) - payeeBefore, charged, 'the payee holds the charge')
        paidAnyway.push(label)
        return
      }
      const entry = await expectRevertedInPaymentPhase(t, bruno, chain, view, label)
      // DESIGN §3's one allowed loss, declared for the teardown's ledger check.
      if (entry.status === 'reverted') bruno.allowRevertedRunnerTransactions(1)
      losses.push({ label, entry })
      t.equal((await chain.usdcOf(payee)) - payeeBefore, race.payeePaidByAttacker ? amount : 0n, race.payeePaidByAttacker ? 'the payee was paid, by the attacker\'s own transaction' : 'the payee got nothing')
      const state = await chain.client.readContract({ address: usdc, abi: eip3009AttackAbi, functionName: 'authorizationState', args: [payer.address, payment.authorization.nonce] })
      t.equal(state, race.name.includes('moves') ? false : true, 'the authorization is used or canceled only when the attack did so')
    })
  }
})

/** A Calibur-delegated account with USDC, a little ETH for its own attacks, its flag up and its allowance given. */
async function caliburAccount(): Promise<PrivateKeyAccount> {
  const account = await fundedPayer(bruno, chain, generatePrivateKey(), 100_000_000n, parseEther('1'))
  await chain.mined(await chain.delegateBy(account, CALIBUR_ADDRESS))
  await prepare(account)
  return account
}

/** Another batch at the payment batch's Calibur nonce, signed by the account: the flag set again, nothing paid. */
async function otherBatchAtSameNonce(account: PrivateKeyAccount, typedData: any): Promise<Hex> {
  const other = structuredClone(typedData)
  other.message.batchedCall = { calls: [{ to: target, value: '0', data: encodeFunctionData({ abi: stateTargetAbi, functionName: 'setOpen', args: [true] }) }], revertOnFailure: true }
  // For any executor: the account's own batch, sent by whoever it likes.
  other.message.executor = '0x0000000000000000000000000000000000000000'
  const signature = await account.signTypedData(other)
  return encodeSignedExecute({ message: other.message, signature })
}

const caliburCases: (RaceCase & { attack: Attack })[] = [
  { name: 'the account moves all its USDC away', call: workCall, attack: moveUsdcAway, expected: 'reverted' },
  {
    name: 'the account spends its payment batch\'s Calibur nonce (another signed batch at that nonce, executed directly)',
    call: workCall,
    expected: 'reverted',
    attack: async (account, { signedCall }) => {
      const data = await otherBatchAtSameNonce(account, (signedCall as any).typedData)
      return send(chain.sponsor.account as PrivateKeyAccount, account.address, data)
    },
  },
  {
    // Both batches name the Runner their executor: the attacker's own transaction reverts Unauthorized.
    name: 'a third party executes the signed payment batch itself, directly on the account',
    call: workCall,
    expected: 'unharmed',
    attack: async (account, { payment }) => send(chain.sponsor.account as PrivateKeyAccount, account.address, payment.batch),
  },
  {
    name: 'a third party executes the signed batch of calls itself, directly on the account',
    call: workCall,
    expected: 'unharmed',
    attack: async (account, { signedCall }) => send(chain.sponsor.account as PrivateKeyAccount, account.address, signedCall!.data),
  },
  {
    name: 'the account undelegates (an EIP-7702 authorization to address 0)',
    call: workCall,
    expected: 'reverted',
    attack: (account) => chain.delegateBy(account, '0x0000000000000000000000000000000000000000', ATTACK_FEES),
  },
  {
    name: 'the account re-delegates to a contract with no execute (every call reverts)',
    call: workCall,
    expected: 'reverted',
    attack: (account) => chain.delegateBy(account, inert, ATTACK_FEES),
  },
  { name: 'the account revokes the allowance its call pulls with', call: pullCall, attack: revokeAllowance, expected: 'paid' },
  { name: 'the account flips the flag its call reads', call: workCall, attack: flipFlag, expected: 'paid' },
]

/** What a delegate form's race needs: its account, and its signed batches for a call, as submit takes them. */
interface DelegateForm {
  readonly name: string
  readonly account: () => Promise<PrivateKeyAccount>
  readonly signed: (account: PrivateKeyAccount, call: { to: Address; data: Hex }) => Promise<{ call: { to: Address; data: Hex }; payment: any; signedCall: any }>
  /** Why a third party's own run of the signed batches reverts. */
  readonly unharmedBecause: string
}

/** Each race of `cases` in turn, by each binding in turn: the account races its own signed batches, in the same block. */
async function raceDelegate(t: Test, form: DelegateForm, cases: readonly (RaceCase & { attack: Attack })[]) {
  const transports: Binding[] = ['mcp', 'rest', 'rpc']
  let index = 0
  for (const race of cases) {
    const binding = transports[index++ % transports.length]!
    if (race.expected === 'reverted') expectedReverts++
    const label = `${form.name}: ${race.name} (submitted via ${binding})`
    await t.test(label, async (t) => {
      const account = await form.account()
      const { call, payment, signedCall } = await form.signed(account, race.call(account.address))
      const amount = BigInt(payment.amountBaseUnits)
      const payeeBefore = await chain.usdcOf(payee)
      const { value: submitted, hash, attackHashes } = await chain.inOneBlock(() => api.submitAndSend(binding, { call, payment }), {
        attack: async () => [await race.attack(account, { payment, signedCall })],
      })
      t.ok(submitted.accepted && hash, 'accepted and sent before the attack')
      if (!submitted.accepted) return
      const view = await api.settled(binding, submitted.id)
      if (race.expected === 'unharmed') {
        const attack = await chain.client.getTransactionReceipt({ hash: attackHashes[0]! })
        t.equal(attack.status, 'reverted', `the attacker's transaction reverted (${form.unharmedBecause})`)
        t.equal(view.stage, 'done', `done (${view.reason})`)
        t.equal(view.outcome?.callSucceeded, true, 'the calls ran as signed')
        const entry = await ledgerEntry(bruno, view.transaction.hash)
        t.equal((await chain.usdcOf(payee)) - payeeBefore, entry.charged, 'the payee holds the charge')
        t.ok(entry.spentWei <= entry.keptWei, `spent ${entry.spentWei} wei ≤ kept ${entry.keptWei} wei`)
        return
      }
      if (race.expected === 'paid') {
        const { charged } = await expectCallFailedAndPaid(t, bruno, view, amount, label)
        t.equal((await chain.usdcOf(payee)) - payeeBefore, charged, 'the payee holds the charge')
        paidAnyway.push(label)
        return
      }
      const entry = await expectRevertedInPaymentPhase(t, bruno, chain, view, label)
      // DESIGN §3's one allowed loss, declared for the teardown's ledger check.
      if (entry.status === 'reverted') bruno.allowRevertedRunnerTransactions(1)
      losses.push({ label, entry })
      t.equal((await chain.usdcOf(payee)) - payeeBefore, 0n, 'the payee got nothing')
    })
  }
}

t.test('the Calibur form: the account races its own signed batch, in the same block', (t) =>
  raceDelegate(
    t,
    {
      name: 'Calibur',
      account: caliburAccount,
      signed: async (account, call) => {
        const batch = await mcp.call('calibur_batch', { chain: 'local', account: account.address, calls: [{ ...call, value: '0' }], token: 'USDC' })
        const executed = await mcp.call('calibur_execute', { chain: 'local', ...(await signedBatches(account, batch)) })
        return { call: executed.call, payment: executed.payment, signedCall: { ...executed.call, typedData: batch.paymentTypedData } }
      },
      unharmedBecause: 'Unauthorized: only the Runner may execute',
    },
    caliburCases,
  ),
)

/** A MetaMask-delegated account with USDC, a little ETH for its own attacks, its flag up and its allowance given. */
async function metaMaskAccount(): Promise<PrivateKeyAccount> {
  return metaMaskAccountOf(generatePrivateKey())
}

/** The same, for a key the test also signs signed transfers with. */
async function metaMaskAccountOf(key: Hex): Promise<PrivateKeyAccount> {
  const account = await fundedPayer(bruno, chain, key, 100_000_000n, parseEther('1'))
  await chain.mined(await chain.delegateBy(account, metaMaskContracts.delegator))
  await prepare(account)
  return account
}

const metaMaskCases: (RaceCase & { attack: Attack })[] = [
  { name: 'the account moves all its USDC away', call: workCall, attack: moveUsdcAway, expected: 'reverted' },
  {
    name: 'the account disables the delegation (DelegationManager.disableDelegation)',
    call: workCall,
    expected: 'reverted',
    attack: async (account, { signedCall }) => {
      const redemption = readRedemption(signedCall!.data)
      if (typeof redemption !== 'object') throw new Error('not a redemption')
      const { delegation } = redemption
      return send(account, metaMaskContracts.delegationManager, encodeFunctionData({ abi: DelegationManager, functionName: 'disableDelegation', args: [{ ...delegation, caveats: [...delegation.caveats] }] }))
    },
  },
  {
    // The delegation names the Runner its delegate: the attacker's own redemption reverts InvalidDelegate.
    name: 'a third party redeems the delegation\'s payment batch itself',
    call: workCall,
    expected: 'unharmed',
    attack: async (_account, { payment }) => send(chain.sponsor.account as PrivateKeyAccount, metaMaskContracts.delegationManager, payment.batch),
  },
  {
    name: 'the account undelegates (an EIP-7702 authorization to address 0)',
    call: workCall,
    expected: 'reverted',
    attack: (account) => chain.delegateBy(account, '0x0000000000000000000000000000000000000000', ATTACK_FEES),
  },
  { name: 'the account revokes the allowance its call pulls with', call: pullCall, attack: revokeAllowance, expected: 'paid' },
  { name: 'the account flips the flag its call reads', call: workCall, attack: flipFlag, expected: 'paid' },
]

t.test('the MetaMask form: the account races its own signed delegation, in the same block', (t) =>
  raceDelegate(
    t,
    {
      name: 'MetaMask',
      account: metaMaskAccount,
      signed: async (account, call) => {
        const batch = await mcp.call('metamask_batch', { chain: 'local', account: account.address, calls: [{ ...call, value: '0' }], token: 'USDC' })
        const executed = await mcp.call('metamask_execute', { chain: 'local', typedData: batch.typedData, batches: batch.batches, signature: await account.signTypedData(batch.typedData) })
        return { call: executed.call, payment: executed.payment, signedCall: executed.call }
      },
      unharmedBecause: 'InvalidDelegate: only the Runner may redeem',
    },
    metaMaskCases,
  ),
)

/** What a listed wallet paying by signed transfer can do to its own code in the block before the runner's transaction. */
const listedWalletCases: RaceCase[] = [
  {
    name: 'it re-delegates to code the Runner does not list',
    call: workCall,
    expected: 'reverted',
    attack: (payer) => chain.delegateBy(payer, inert, ATTACK_FEES),
  },
  {
    // A plain account again: the token checks its signature by ecrecover, which the same key made.
    name: 'it undelegates (an EIP-7702 authorization to address 0)',
    call: workCall,
    expected: 'unharmed',
    attack: (payer) => chain.delegateBy(payer, '0x0000000000000000000000000000000000000000', ATTACK_FEES),
  },
]

t.test('a listed wallet (a MetaMask-delegated account) paying by signed transfer changes its own code in the same block: refused by the Runner before that code runs, or unharmed (issue 46, point 1)', async (t) => {
  const designator = keccak256(concat(['0xef0100', metaMaskContracts.delegator]))
  t.equal(await chain.client.readContract({ address: deployment.runner.contract, abi: runnerAbi, functionName: 'payerCodeAllowed', args: [designator] }), true, 'the devnet lists MetaMask\'s delegation')
  for (const race of listedWalletCases) {
    if (race.expected === 'reverted') expectedReverts++
    const label = `listed wallet: ${race.name}`
    await t.test(label, async (t) => {
      const key = generatePrivateKey()
      const payer = await metaMaskAccountOf(key)
      const call = race.call(payer.address)
      const quote = await mcp.call('quote', { chain: 'local', call, token: 'USDC', payment: 'authorization' })
      const amount = BigInt(quote.amountBaseUnits)
      const payment = await transferPayment(bruno, key, amount)
      const payeeBefore = await chain.usdcOf(payee)
      const { value: submitted, hash } = await chain.inOneBlock(() => api.submitAndSend('mcp', { call, payment }), { attack: async () => [await race.attack(payer, { payment })] })
      t.ok(submitted.accepted && hash, 'accepted and sent before the attack')
      if (!submitted.accepted) return
      const view = await api.settled('mcp', submitted.id)
      if (race.expected === 'unharmed') {
        t.equal(view.stage, 'done', view.reason)
        t.equal(view.outcome.callSucceeded, true, 'the relay ran as signed')
        return
      }
      const entry = await expectRevertedInPaymentPhase(t, bruno, chain, view, label)
      const trace = await chain.client.request({ method: 'debug_traceTransaction' as never, params: [view.transaction.hash, { tracer: 'callTracer' }] as never }) as { output: Hex; calls?: unknown[] }
      t.same(decodeErrorResult({ abi: runnerAbi, data: trace.output }), { abiItem: runnerAbi.find((item) => item.type === 'error' && item.name === 'PayerHasCode'), errorName: 'PayerHasCode', args: [payer.address] }, 'the Runner\'s PayerHasCode')
      t.equal(trace.calls, undefined, 'before it called anything: the token never ran the new code')
      if (entry.status === 'reverted') bruno.allowRevertedRunnerTransactions(1)
      losses.push({ label, entry })
      t.equal((await chain.usdcOf(payee)) - payeeBefore, 0n, 'the payee got nothing')
    })
  }
})

t.test('a listed smart wallet\'s owner hands it on in the same block: its signature void, the runner transaction reverts in its payment phase, bounded and counted (issue 46, point 1)', async (t) => {
  // The one change of validity a listed wallet allows is its owner's: the payer voiding its own payment, as above.
  const walletAbi = parseAbi(['function owner() view returns (address)', 'function setOwner(address next)', 'function isValidSignature(bytes32 hash, bytes signature) view returns (bytes4)'])
  const walletArtifact = compileTypedFixture('WalletFixture', walletAbi)
  const ownerKey = generatePrivateKey()
  const owner = await fundedPayer(bruno, chain, ownerKey, 1n, parseEther('1'))
  const walletAddress = getAddress((await chain.mined(await chain.sponsor.deployContract({ ...walletArtifact, args: [owner.address] }))).contractAddress!)
  await mintUsdc(deployment.rpcUrl, deployment, walletAddress, 1_000_000_000n)
  const walletCode = keccak256((await chain.client.getCode({ address: walletAddress }))!)
  const list = (allowed: boolean) => chain.sponsor.sendTransaction({ to: deployment.runner.contract, data: encodeFunctionData({ abi: runnerAbi, functionName: 'setPayerCode', args: [walletCode, allowed] }) })
  await chain.mined(await list(true))
  t.teardown(async () => chain.mined(await list(false)))
  await chain.mined(await send(owner, target, encodeFunctionData({ abi: stateTargetAbi, functionName: 'setOpen', args: [true] })))
  const heavy = workCall(owner.address)
  const quote = await mcp.call('quote', { chain: 'local', call: heavy, token: 'USDC', payment: 'authorization' })
  const typedData = transferWithAuthorizationTypedData({ token: { ...usdcDomain, address: usdc }, from: walletAddress, to: payee, value: BigInt(quote.amountBaseUnits), validAfter: 0n, validBefore: BigInt(Math.floor(Date.now() / 1000) + 3600), nonce: randomAuthorizationNonce() })
  const signature = encodeAbiParameters([{ type: 'bytes' }], [await owner.signTypedData(typedData as never)])
  const payment = { token: usdc, authorization: typedData.message, signature }
  expectedReverts++
  const label = 'listed smart wallet: its owner hands it on'
  const { value: submitted, hash } = await chain.inOneBlock(() => api.submitAndSend('mcp', { call: heavy, payment }), {
    attack: async () => [await send(owner, walletAddress, encodeFunctionData({ abi: walletAbi, functionName: 'setOwner', args: [privateKeyToAccount(generatePrivateKey()).address] }))],
  })
  t.ok(submitted.accepted && hash, `accepted and sent before the owner acted${submitted.accepted ? '' : `: ${submitted.message}`}`)
  if (!submitted.accepted) return
  const view = await api.settled('mcp', submitted.id)
  const entry = await expectRevertedInPaymentPhase(t, bruno, chain, view, label)
  if (entry.status === 'reverted') bruno.allowRevertedRunnerTransactions(1)
  losses.push({ label, entry })
  t.equal(await chain.usdcOf(walletAddress), 1_000_000_000n, 'the wallet paid nothing')
})

t.test('tally of the races', async (t) => {
  const reverted = losses.length
  t.equal(reverted, expectedReverts, 'every payment voided in the same block reverted the runner transaction, and nothing else did')
  const lostWei = losses.reduce((total, { entry }) => total + entry.spentWei, 0n)
  const maxGas = losses.reduce((most, { entry }) => (entry.gasUsed > most ? entry.gasUsed : most), 0n)
  for (const { label, entry } of losses) t.comment(`loss | ${label} | ${entry.gasUsed} gas | ${entry.spentWei} wei`)
  t.comment(`state races: ${paidAnyway.length} paid anyway (the call failed), ${reverted} reverted in the payment phase: ${lostWei} wei lost in all, at most ${maxGas} gas each`)
})

t.test(
  'a payer that voided its own payment is refused for a while (DESIGN §3: "the account is then refused for a while")',
  async (t) => {
    const key = generatePrivateKey()
    const payer = await fundedPayer(bruno, chain, key, 100_000_000n, parseEther('1'))
    await prepare(payer)
    const call = workCall(payer.address)
    const quote = await mcp.call('quote', { chain: 'local', call, token: 'USDC', payment: 'authorization' })
    const first = await transferPayment(bruno, key, BigInt(quote.amountBaseUnits))
    const { value: submitted } = await chain.inOneBlock(() => api.submitAndSend('mcp', { call, payment: first }), {
      attack: async () => [await authorizationCases[1]!.attack(payer, { payment: first })],
    })
    if (submitted.accepted) await api.settled('mcp', submitted.id)
    bruno.allowRevertedRunnerTransactions(1)
    const again = await api.submit('mcp', { call, payment: await transferPayment(bruno, key, BigInt(quote.amountBaseUnits)) })
    t.equal(again.accepted, false, 'the same payer\'s next submission is refused')
    if (again.accepted) await api.settled('mcp', again.id)
    else t.match(again.message, new RegExp(`^refused: the account ${payer.address} is refused until \\d{4}-\\d\\d-\\d\\dT[0-9:.]+Z: a payment of its reverted on chain after it was accepted$`))
  },
)
