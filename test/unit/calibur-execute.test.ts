import t, { type Test } from 'tap'
import { getAddress, zeroHash, type Address, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { ToolError } from '../../core/tool.ts'
import { readCaliburDomain } from '../../plugins/calibur/readDomain.ts'
import { account, caliburNode, delegatedTo, reverted, salt, signedExecute, signer, type NodeOptions } from './caliburNode.ts'
import { fakeClient } from './fakeChain.ts'

// calibur_execute (plugins/calibur/execute.ts) as Bruno calls it, on a node the test answers: a batch
// calibur_batch prepared, signed by the account's own key (viem's signer), checked back; the call it
// returns rebuilt here from Calibur's Solidity signature; every refusal's words. And readCaliburDomain
// (plugins/calibur/readDomain.ts) on an account that answers, does not, or answers for another.

const one = getAddress('0x1111111111111111111111111111111111111111')
const runner = getAddress('0x0000000000000000000000000000000000000B0B')
const calibur = '0x000000005c84F8Fd50b21CAC312528A64437030e'
const stranger = privateKeyToAccount('0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a')

type TypedData = {
  domain: { name: 'Calibur'; version: '1.0.0'; chainId: number; verifyingContract: Address; salt: Hex }
  types: Record<string, { name: string; type: string }[]>
  primaryType: 'SignedBatchedCall'
  message: {
    batchedCall: { calls: { to: string; value: string; data: string }[]; revertOnFailure: boolean }
    nonce: string
    keyHash: string
    executor: string
    deadline: string
  }
}

const sign = (typedData: TypedData, by = signer) => by.signTypedData(typedData as never)

async function prepared(options: NodeOptions = {}, args: Record<string, unknown> = {}) {
  const node = caliburNode(options)
  const batch = await node.call('calibur_batch', { chain: 'local', account, calls: [{ to: one, data: '0x1234' }], token: 'USDC', deadline: 4_000_000_000, ...args })
  return { node, batch, typedData: batch.typedData as TypedData, amount: (batch.payment as { amountBaseUnits: string }).amountBaseUnits }
}

const rejectsWith = (t: Test, promise: Promise<unknown>, message: string) => t.rejects(promise, new ToolError(message), message)

/** The typed data changed by `edit`, re-signed by the account: only the change is refused. */
const edited = (typedData: TypedData, edit: (copy: TypedData) => void) => {
  const copy = structuredClone(typedData)
  edit(copy)
  return copy
}

t.test('a signed batch: the account’s signed execute for submit, and its payment', async (t) => {
  const { node, typedData, amount } = await prepared()
  const signature = await sign(typedData)
  node.seen.length = 0
  node.calls.length = 0
  const result = await node.call('calibur_execute', { chain: 'local', typedData, signature })
  const whole = `${BigInt(amount) / 1_000_000n}.${(BigInt(amount) % 1_000_000n).toString().padStart(6, '0')}`.replace(/\.?0+$/, '')
  t.strictSame(result, {
    call: { to: account, data: signedExecute(typedData.message, signature) },
    payment: { token: getAddress('0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913'), amountBaseUnits: amount },
    account,
    paymentFormatted: `${whole} USDC`,
    next: 'call submit with {chain: "local", call, payment} as given here; then poll status with the id it returns until done',
  })
  t.equal(node.validOutput('calibur_execute', result), true)
  t.same([...new Set(node.seen.map((request) => request.method))].sort(), ['eth_call', 'eth_getCode'])
  t.same(node.calls.map((call) => [call.functionName, call.args, call.stateOverride]), [
    ['eip712Domain', [], undefined],
    ['getSeq', [0n], undefined],
  ])
})

t.test('a batch executable by Bruno’s runner, never expiring, on a nonce key in use: accepted', async (t) => {
  const { node, typedData } = await prepared({ seq: (key) => (key === 9n ? 4n : 0n) }, { nonceKey: '9' })
  const mine = edited(typedData, (copy) => {
    copy.message.executor = runner.toLowerCase()
    copy.message.deadline = '0'
    copy.domain.salt = salt.toUpperCase().replace('0X', '0x') as Hex
  })
  const signature = await sign(mine)
  const result = await node.call('calibur_execute', { chain: 'local', typedData: mine, signature })
  t.equal((result.call as { data: Hex }).data, signedExecute({ ...mine.message, executor: runner }, signature))
  t.same(node.calls.filter((call) => call.functionName === 'getSeq').map((call) => call.args), [[9n], [9n]])
})

t.test('delegated in the same transaction: the authorization checked again and passed on to submit', async (t) => {
  const signed = await signer.signAuthorization({ address: calibur, chainId: 31337, nonce: 3 })
  const item = { chainId: signed.chainId, address: signed.address, nonce: signed.nonce, r: signed.r, s: signed.s, yParity: signed.yParity as 0 | 1 }
  const { node, typedData } = await prepared({ code: { [account]: '0x' }, eoaNonce: 3 }, { authorizationList: [item] })
  const signature = await sign(typedData)
  node.calls.length = 0
  const result = await node.call('calibur_execute', { chain: 'local', typedData, signature, authorizationList: [item] })
  t.strictSame(result.authorizationList, [item])
  t.equal(result.next, 'call submit with {chain: "local", call, payment, authorizationList} as given here; then poll status with the id it returns until done')
  const override = { [account]: { code: delegatedTo(calibur) } }
  t.same(node.calls.map((call) => [call.functionName, call.stateOverride]), [
    ['eip712Domain', override],
    ['getSeq', override],
  ])
  t.equal(node.validOutput('calibur_execute', result), true)
  // Without the list, the undelegated account is refused.
  await t.rejects(node.call('calibur_execute', { chain: 'local', typedData, signature }), { name: 'ToolError', message: new RegExp(`^${account} has no code: it is not delegated to Calibur`) })
})

t.test('each refusal, with its words', async (t) => {
  const { node, typedData } = await prepared()
  const refused = async (typed: TypedData, message: string, by = signer) =>
    rejectsWith(t, node.call('calibur_execute', { chain: 'local', typedData: typed, signature: await sign(typed, by) }), message)
  await refused(edited(typedData, (copy) => (copy.domain.chainId = 1)), 'the batch is signed for chain 1, not local (31337)')
  await rejectsWith(
    t,
    node.call('calibur_execute', { chain: 'local', typedData: edited(typedData, (copy) => (copy.domain.verifyingContract = '0x70997970c51812dc3a010C7d01b50e0d17dc79C8')), signature: `0x${'11'.repeat(65)}` }),
    'typedData.domain.verifyingContract 0x70997970c51812dc3a010C7d01b50e0d17dc79C8 does not match its EIP-55 checksum (its mixed case is wrong): check it, or write it all lowercase',
  )
  const notCalibur = "typedData.types are not Calibur's: pass the typedData calibur_batch returned, unchanged"
  await rejectsWith(t, node.call('calibur_execute', { chain: 'local', typedData: edited(typedData, (copy) => copy.types.Call!.reverse()), signature: `0x${'11'.repeat(65)}` }), notCalibur)
  await rejectsWith(t, node.call('calibur_execute', { chain: 'local', typedData: edited(typedData, (copy) => (copy.types.Extra = [])), signature: `0x${'11'.repeat(65)}` }), notCalibur)
  await refused(edited(typedData, (copy) => (copy.message.executor = one)), `the batch may only be executed by ${one}, not by Bruno's runner`)
  await refused(
    edited(typedData, (copy) => (copy.message.keyHash = `0x${'00'.repeat(31)}01`)),
    "the batch names a registered key (keyHash is not zero): Bruno relays batches signed by the account's own (root) key only",
  )
  await t.rejects(node.call('calibur_execute', { chain: 'local', typedData: edited(typedData, (copy) => (copy.message.deadline = '1')), signature: await sign(edited(typedData, (copy) => (copy.message.deadline = '1'))) }), {
    name: 'ToolError',
    message: /^the batch's deadline 1 has passed \(now \d+\): prepare it again with calibur_batch and sign anew$/,
  })
  const now = Math.floor(Date.now() / 1000)
  const atNow = edited(typedData, (copy) => (copy.message.deadline = String(now)))
  await t.rejects(node.call('calibur_execute', { chain: 'local', typedData: atNow, signature: await sign(atNow) }), { name: 'ToolError', message: new RegExp(`^the batch's deadline ${now} has passed`) })
  const otherSalt = `0x${'ab'.repeat(32)}` as Hex
  await refused(
    edited(typedData, (copy) => (copy.domain.salt = otherSalt)),
    `the batch's domain salt ${otherSalt} is not the account's now (${salt}): prepare it again with calibur_batch`,
  )
  await refused(
    edited(typedData, (copy) => (copy.message.batchedCall.revertOnFailure = true)),
    `the batch is not payment-first: its outer batch reverts on failure (revertOnFailure must be false, so the payment stands alone). Bruno relays a batch whose first call pays ${getAddress('0xa0Ee7A142d267C1f36714E4a8F75612F20a79720')} and whose own calls run after the Runner's payment guard, in a second call to the account (a failing call still pays): build it with calibur_batch`,
  )
  await refused(
    typedData,
    `the signature recovers to ${stranger.address}, not the account ${account}: the account's own key must sign this typedData, unchanged (smart-wallet signers, ERC-1271 / ERC-6492, cannot sign a Calibur batch)`,
    stranger,
  )
  await rejectsWith(t, node.call('calibur_execute', { chain: 'local', typedData, signature: `0x${'ff'.repeat(65)}` }), 'bad signature: it is not a valid secp256k1 signature of the batch (Invalid yParityOrV value)')
})

t.test('the nonce: used already, or skipping ahead of the account’s', async (t) => {
  const { typedData } = await prepared({ seq: () => 2n })
  const signature = await sign(typedData)
  await rejectsWith(
    t,
    caliburNode({ seq: () => 3n }).call('calibur_execute', { chain: 'local', typedData, signature }),
    'the batch\'s nonce (key 0, seq 2) was used already (the account is at seq 3): this batch ran, or another took its place',
  )
  await rejectsWith(
    t,
    caliburNode({ seq: () => 1n }).call('calibur_execute', { chain: 'local', typedData, signature }),
    'the batch\'s nonce (key 0, seq 2) skips ahead of the account\'s (seq 1): it cannot run until the batches before it do',
  )
  const ok = await caliburNode({ seq: () => 2n }).call('calibur_execute', { chain: 'local', typedData, signature })
  t.equal(ok.account, account)
})

t.test('the input schema: typedData, a 65-byte signature, at most one authorization', async (t) => {
  const { node, typedData } = await prepared()
  const signature = await sign(typedData)
  const base = { chain: 'local', typedData, signature }
  const accepts = (args: Record<string, unknown>, what: string) => t.equal(node.accepts('calibur_execute', args), true, `accepts ${what}`)
  const refuses = (args: Record<string, unknown>, what: string) => t.equal(node.accepts('calibur_execute', args), false, `refuses ${what}`)
  accepts(base, 'a signed batch')
  for (const key of ['chain', 'typedData', 'signature']) refuses(Object.fromEntries(Object.entries(base).filter(([name]) => name !== key)), `no ${key}`)
  refuses({ ...base, extra: 1 }, 'an unknown argument')
  refuses({ ...base, signature: signature.slice(0, -2) }, 'a 64-byte signature')
  refuses({ ...base, signature: `${signature}00` }, 'a 66-byte signature')
  refuses({ ...base, signature: `0x${'g'.repeat(130)}` }, 'a signature not hex')
  const item = { chainId: 1, address: one, nonce: 0, r: zeroHash, s: zeroHash, yParity: 0 }
  accepts({ ...base, authorizationList: [item] }, 'one authorization')
  refuses({ ...base, authorizationList: [item, item] }, 'two authorizations')
  const types = (value: unknown) => ({ ...base, typedData: { ...typedData, types: value } })
  accepts(types({ ...typedData.types, Other: [{ name: 'a'.repeat(64), type: 'b'.repeat(64) }] }), 'other type names (refused by the handler, naming them)')
  refuses(types({ ...typedData.types, Other: [{ name: 'a'.repeat(65), type: 'b' }] }), 'a field name of 65 characters')
  refuses(types({ ...typedData.types, Other: [{ name: 'a', type: 'b'.repeat(65) }] }), 'a field type of 65 characters')
  refuses(types({ ...typedData.types, Other: [{ name: 'a', type: 'b', extra: 1 }] }), 'a field with more')
  refuses(types({ ...typedData.types, Other: Array.from({ length: 9 }, () => ({ name: 'a', type: 'b' })) }), 'a type of 9 fields')
  accepts(types({ ...typedData.types, Other: Array.from({ length: 8 }, () => ({ name: 'a', type: 'b' })) }), 'a type of 8 fields')
  accepts(types({ ...typedData.types, A: [], B: [], C: [], D: [] }), '8 types')
  refuses(types({ ...typedData.types, A: [], B: [], C: [], D: [], E: [] }), '9 types')
  const message = (value: Record<string, unknown>) => ({ ...base, typedData: { ...typedData, message: { ...typedData.message, ...value } } })
  const calls = (count: number) => message({ batchedCall: { calls: Array.from({ length: count }, () => ({ to: one, value: '0', data: '0x' })), revertOnFailure: false } })
  accepts(calls(64), '64 calls')
  refuses(calls(65), '65 calls')
  refuses(calls(0), 'no calls')
  refuses(message({ deadline: '-1' }), 'a negative deadline')
  refuses(message({ nonce: '0x1' }), 'a hex nonce')
  refuses(message({ executor: 'runner' }), 'an executor that is no address')
  const published = node.registry.view(['calibur'])!.tools.get('calibur_execute')!.listing as {
    title: string
    description: string
    annotations: unknown
    inputSchema: { properties: Record<string, { description?: string }> }
    outputSchema: { properties: Record<string, { description?: string }> }
  }
  t.equal(published.title, 'Check a signed Calibur batch')
  t.same(published.annotations, { readOnlyHint: true, openWorldHint: true })
  t.equal(
    published.description,
    'Takes calibur_batch\'s typedData, unchanged, and the account\'s signature of it; checks what Calibur will ' +
      '(domain, signer = the account, nonce, deadline) and that the batch pays first, and returns `call` (it acts by ' +
      'the account\'s signature, so it can run from Bruno\'s Runner) and `payment` for submit, as they are. Pass ' +
      'calibur_batch\'s authorizationList here too, if it had one.',
  )
  t.equal(published.inputSchema.properties.typedData!.description, "calibur_batch's typedData, unchanged")
  t.equal(published.inputSchema.properties.signature!.description, "by the account's own key")
  t.equal(published.inputSchema.properties.authorizationList!.description, 'as given to calibur_batch')
  t.equal(published.outputSchema.properties.authorizationList!.description, 'for submit')
  t.equal(published.outputSchema.properties.paymentFormatted!.description, 'whole token units and symbol')
  const result = await node.call('calibur_execute', base)
  t.equal(node.validOutput('calibur_execute', { ...result, extra: 1 }), false, 'the result: nothing else')
})

t.test('readCaliburDomain: the account’s own domain, or a refusal that says why', async (t) => {
  const domain = ['0x1f', 'Calibur', '1.0.0', 31337n, account, salt, []] as const
  const node = caliburNode()
  t.same(await readCaliburDomain(node.services.networks.get('local').client, account), { chainId: 31337, account, salt })
  const noDomain = `${account} has no eip712Domain(): it is not delegated to Calibur (or to any ERC-5267 delegate)`
  // No code: the call returns nothing. Another delegate: it reverts.
  for (const code of ['0x', delegatedTo(one)] as Hex[]) {
    const other = caliburNode({ code: { [account]: code } })
    await rejectsWith(t, readCaliburDomain(other.services.networks.get('local').client, account), noDomain)
  }
  const elsewhere = caliburNode({ domain: [...domain.slice(0, 4), one, salt, []] as never })
  await rejectsWith(t, readCaliburDomain(elsewhere.services.networks.get('local').client, account), `${account}'s EIP-712 domain names ${one} as its verifyingContract, not the account itself`)
  // Asked with the address in lower case: the account compared checksummed.
  t.same(await readCaliburDomain(node.services.networks.get('local').client, account.toLowerCase() as Address), { chainId: 31337, account, salt })
  // The node failing is not the account's fault: rethrown as it is.
  const down = fakeClient({
    eth_call: () => {
      throw Object.assign(new Error('upstream unavailable'), { code: -32000 })
    },
  })
  const failure = await readCaliburDomain(down.client, account).then(
    () => undefined,
    (error: Error) => error,
  )
  t.equal(failure instanceof ToolError, false)
  t.match(failure?.message, /upstream unavailable/)
  const plain = fakeClient({
    eth_call: () => {
      throw 'not an Error'
    },
  })
  const odd = await readCaliburDomain(plain.client, account).then(
    () => undefined,
    (error: unknown) => error,
  )
  t.equal(odd instanceof ToolError, false)
  t.ok(reverted('0x'))
})
