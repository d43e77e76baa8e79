import t, { type Test } from 'tap'
import { getAddress, zeroHash, type Address, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { ToolError } from '../../core/tool/tool.ts'
import { STRANGER } from '../../core/relay/paymentPin.ts'
import { caliburDelegate } from '../../plugins/calibur/paymentFirstBatch.ts'
import { readCaliburDomain } from '../../plugins/calibur/readDomain.ts'
import { account, caliburNode, delegatedTo, reverted, salt, signedExecute, signer, type NodeOptions } from './caliburNode.ts'
import { fakeClient } from './fakeChain.ts'
import { CALIBUR_ADDRESS } from '../../plugins/calibur/networkOptions.ts'

// calibur_execute (plugins/calibur/execute.ts) as Bruno calls it, on a node the test answers: the two
// batches calibur_batch prepared (payment only, then the account's calls), each signed by the account's
// own key (viem's signer), checked back; the call and payment batch it returns rebuilt here from
// Calibur's Solidity signature; every refusal's words. And readCaliburDomain
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
const usdc = getAddress('0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913')
const payee = getAddress('0xa0Ee7A142d267C1f36714E4a8F75612F20a79720')

async function prepared(options: NodeOptions = {}, args: Record<string, unknown> = {}) {
  const node = caliburNode(options)
  const batch = await node.call('calibur_batch', { chain: 'local', account, calls: [{ to: one, data: '0x1234' }], token: 'USDC', deadline: 4_000_000_000, ...args })
  return {
    node,
    batch,
    paymentTypedData: batch.paymentTypedData as TypedData,
    typedData: batch.typedData as TypedData,
    amount: (batch.payment as { amountBaseUnits: string }).amountBaseUnits,
  }
}

/** calibur_execute's arguments: both typed data, each signed (by the account unless said otherwise). */
async function signedArgs(paymentTypedData: TypedData, typedData: TypedData, by: { payment?: typeof signer; calls?: typeof signer } = {}) {
  return {
    chain: 'local',
    paymentTypedData,
    paymentSignature: await sign(paymentTypedData, by.payment),
    typedData,
    signature: await sign(typedData, by.calls),
  }
}

const rejectsWith = (t: Test, promise: Promise<unknown>, message: string) => t.rejects(promise, new ToolError(message), message)

/** The typed data changed by `edit`, re-signed by the account: only the change is refused. */
const edited = (typedData: TypedData, edit: (copy: TypedData) => void) => {
  const copy = structuredClone(typedData)
  edit(copy)
  return copy
}

t.test('two signed batches: the account’s signed execute of its calls for submit, and the payment with its signed batch', async (t) => {
  const { node, paymentTypedData, typedData, amount } = await prepared()
  const args = await signedArgs(paymentTypedData, typedData)
  node.seen.length = 0
  node.calls.length = 0
  const result = await node.call('calibur_execute', args)
  const whole = `${BigInt(amount) / 1_000_000n}.${(BigInt(amount) % 1_000_000n).toString().padStart(6, '0')}`.replace(/\.?0+$/, '')
  t.strictSame(result, {
    call: { to: account, data: signedExecute(typedData.message, args.signature) },
    payment: { token: usdc, amountBaseUnits: amount, batch: signedExecute(paymentTypedData.message, args.paymentSignature) },
    account,
    paymentFormatted: `${whole} USDC`,
    next: 'call submit with {chain: "local", call, payment} as given here; then poll status with the id it returns until done',
  })
  t.not((result.payment as { batch: Hex }).batch, (result.call as { data: Hex }).data, 'two different signed executes')
  t.equal(node.validOutput('calibur_execute', result), true)
  t.same([...new Set(node.seen.map((request) => request.method))].sort(), ['eth_call', 'eth_getCode'])
  const delegated = { [account]: { code: delegatedTo(calibur) } }
  t.same(node.calls.map((call) => [call.functionName, call.args, call.stateOverride]).slice(0, 2), [
    ['eip712Domain', [], undefined],
    ['getSeq', [0n], undefined],
  ])
  // last, the signed payment batch sent as a stranger would send it: it must revert (issue 43, point 5)
  t.same(node.calls.map((call) => call.functionName), ['eip712Domain', 'getSeq', 'execute'])
  t.same(node.calls[2]!.stateOverride, delegated)
  const asStranger = node.seen.filter((request) => request.method === 'eth_call').map((request) => (request.params as [{ from?: string; data: Hex }])[0]).at(-1)!
  t.match(asStranger, { from: STRANGER.toLowerCase(), data: (result.payment as { batch: Hex }).batch })
  // what it returns is what the relay's reader takes: the payment batch, the calls after it, from the Runner
  const terms = caliburDelegate(node.services.payment, () => CALIBUR_ADDRESS).read(node.services.networks.get('local'), result.call as never, (result.payment as { batch: Hex }).batch)
  t.match(terms, { account, token: usdc, payee, amount: BigInt(amount), paymentData: (result.payment as { batch: Hex }).batch, paymentGas: 150_000n, identity: `calibur:local:${account}:0` })
})

t.test('a calls batch executable by anyone, never expiring, on a nonce key in use: accepted; a payment batch executable by anyone: refused (issue 43, point 5)', async (t) => {
  const { node, paymentTypedData, typedData } = await prepared({ seq: (key) => (key === 9n ? 4n : 0n) }, { nonceKey: '9' })
  t.equal(paymentTypedData.message.nonce, ((9n << 64n) | 4n).toString())
  t.equal(typedData.message.nonce, ((9n << 64n) | 5n).toString())
  const open = (typed: TypedData) =>
    edited(typed, (copy) => {
      copy.message.executor = '0x0000000000000000000000000000000000000000'
      copy.message.deadline = '0'
      copy.domain.salt = salt.toUpperCase().replace('0X', '0x') as Hex
    })
  const args = await signedArgs(paymentTypedData, open(typedData))
  const result = await node.call('calibur_execute', args)
  t.equal((result.call as { data: Hex }).data, signedExecute(open(typedData).message, args.signature))
  t.equal((result.payment as { batch: Hex }).batch, signedExecute(paymentTypedData.message, args.paymentSignature))
  // A payment batch any executor may run: a stranger holding it could run it before the Runner.
  await t.rejects(node.call('calibur_execute', await signedArgs(open(paymentTypedData), open(typedData))), {
    name: 'ToolError',
    message: `refused: the Calibur payment batch of ${account} can be run by anyone, not only by Bruno's Runner: whoever holds it could run it first (the payee would keep the payment, your calls would not run, and the relay would fail). Nothing was sent; sign a payment batch that only the Runner can run, as calibur_batch builds it`,
  })
  // the Runner as executor, in lower case: the same
  const lower = (typed: TypedData) => edited(typed, (copy) => (copy.message.executor = runner.toLowerCase()))
  const byRunner = await signedArgs(lower(paymentTypedData), lower(typedData))
  t.equal((await node.call('calibur_execute', byRunner)).account, account)
  // the seq is read for the payment batch's key only
  t.same(node.calls.filter((call) => call.functionName === 'getSeq').map((call) => call.args), [[9n], [9n], [9n], [9n]])
})

t.test('delegated in the same transaction: the authorization checked again and passed on to submit', async (t) => {
  const signed = await signer.signAuthorization({ address: calibur, chainId: 31337, nonce: 3 })
  const item = { chainId: signed.chainId, address: signed.address, nonce: signed.nonce, r: signed.r, s: signed.s, yParity: signed.yParity as 0 | 1 }
  const { node, paymentTypedData, typedData } = await prepared({ code: { [account]: '0x' }, eoaNonce: 3 }, { authorizationList: [item] })
  const args = await signedArgs(paymentTypedData, typedData)
  node.calls.length = 0
  const result = await node.call('calibur_execute', { ...args, authorizationList: [item] })
  t.strictSame(result.authorizationList, [item])
  t.equal(result.next, 'call submit with {chain: "local", call, payment, authorizationList} as given here; then poll status with the id it returns until done')
  const override = { [account]: { code: delegatedTo(calibur) } }
  t.same(node.calls.map((call) => [call.functionName, call.stateOverride]), [
    ['eip712Domain', override],
    ['getSeq', override],
    ['execute', override],
  ])
  t.equal(node.validOutput('calibur_execute', result), true)
  // Without the list, the undelegated account is refused.
  await t.rejects(node.call('calibur_execute', args), { name: 'ToolError', message: new RegExp(`^${account} has no code: it is not delegated to Calibur`) })
})

t.test('each refusal, with its words, for either batch', async (t) => {
  const { node, paymentTypedData, typedData } = await prepared()
  const refused = async (payment: TypedData, calls: TypedData, message: string, by: { payment?: typeof signer; calls?: typeof signer } = {}) =>
    rejectsWith(t, node.call('calibur_execute', await signedArgs(payment, calls, by)), message)
  const which = [
    ['the payment batch', (edit: (copy: TypedData) => void) => [edited(paymentTypedData, edit), typedData] as const],
    ["the calls batch", (edit: (copy: TypedData) => void) => [paymentTypedData, edited(typedData, edit)] as const],
  ] as const
  for (const [name, edit] of which) {
    await refused(...edit((copy) => (copy.domain.chainId = 1)), `${name} is signed for chain 1, not local (31337)`)
    const notCalibur = `${name}'s types are not Calibur's: pass the typed data calibur_batch returned, unchanged`
    await refused(...edit((copy) => copy.types.Call!.reverse()), notCalibur)
    await refused(...edit((copy) => (copy.types.Extra = [])), notCalibur)
    await refused(...edit((copy) => (copy.message.executor = one)), `${name} may only be executed by ${one}, not by Bruno's runner`)
    await refused(
      ...edit((copy) => (copy.message.keyHash = `0x${'00'.repeat(31)}01`)),
      `${name} names a registered key (keyHash is not zero): Bruno relays batches signed by the account's own (root) key only`,
    )
    await t.rejects(node.call('calibur_execute', await signedArgs(...edit((copy) => (copy.message.deadline = '1')))), {
      name: 'ToolError',
      message: new RegExp(`^${name}'s deadline 1 has passed \\(now \\d+\\): prepare the batches again with calibur_batch and sign anew$`),
    })
    const now = Math.floor(Date.now() / 1000)
    await t.rejects(node.call('calibur_execute', await signedArgs(...edit((copy) => (copy.message.deadline = String(now))))), {
      name: 'ToolError',
      message: new RegExp(`^${name}'s deadline ${now} has passed`),
    })
    const otherSalt = `0x${'ab'.repeat(32)}` as Hex
    await refused(...edit((copy) => (copy.domain.salt = otherSalt)), `${name}'s domain salt ${otherSalt} is not the account's now (${salt}): prepare the batches again with calibur_batch`)
  }
  // the payment batch names the account; the calls must be signed for the same one
  await rejectsWith(
    t,
    node.call('calibur_execute', {
      ...(await signedArgs(paymentTypedData, typedData)),
      paymentTypedData: edited(paymentTypedData, (copy) => (copy.domain.verifyingContract = '0x70997970c51812dc3a010C7d01b50e0d17dc79C8')),
    }),
    'paymentTypedData.domain.verifyingContract 0x70997970c51812dc3a010C7d01b50e0d17dc79C8 does not match its EIP-55 checksum (its mixed case is wrong): check it, or write it all lowercase',
  )
  await refused(
    paymentTypedData,
    edited(typedData, (copy) => (copy.domain.verifyingContract = stranger.address)),
    `the calls batch is signed for ${stranger.address}, not the account ${account}: both batches are the same account's`,
  )

  // the payment batch must only pay
  const notPaymentOnly = (why: string) =>
    `the payment batch is not payment-only: ${why}. Bruno takes its payment in a batch of its own, the one call ` +
    `token.transfer(${payee}, amount), run before the batch of the account's calls: build both with calibur_batch`
  await refused(edited(paymentTypedData, (copy) => (copy.message.batchedCall.revertOnFailure = false)), typedData, notPaymentOnly('it does not revert on failure (revertOnFailure must be true)'))
  await refused(
    edited(paymentTypedData, (copy) => copy.message.batchedCall.calls.push({ to: one, value: '0', data: '0x1234' })),
    typedData,
    notPaymentOnly('it has 2 calls, not 1'),
  )
  // the account's calls given as the payment batch
  await refused(
    edited(paymentTypedData, (copy) => (copy.message.batchedCall = structuredClone(typedData.message.batchedCall))),
    typedData,
    notPaymentOnly(`its call goes to ${one}, not an accepted payment token`),
  )

  // the calls at the nonce right after the payment's, on its key
  const order = (key: bigint, seq: bigint, expected: bigint) =>
    `the batch of the account's calls has nonce key ${key} seq ${seq}; it must be signed at key 0, seq ${expected}, right after the payment batch's, so that it runs only after the payment: build both with calibur_batch`
  await refused(paymentTypedData, edited(typedData, (copy) => (copy.message.nonce = '0')), order(0n, 0n, 1n))
  await refused(paymentTypedData, edited(typedData, (copy) => (copy.message.nonce = '2')), order(0n, 2n, 1n))
  await refused(paymentTypedData, edited(typedData, (copy) => (copy.message.nonce = ((1n << 64n) | 1n).toString())), order(1n, 1n, 1n))
  // the batches swapped
  await refused(typedData, paymentTypedData, order(0n, 0n, 2n))

  // each signature by the account, over its own batch
  await refused(
    paymentTypedData,
    typedData,
    `the payment batch's signature recovers to ${stranger.address}, not the account ${account}: the account's own key must sign the typed data, unchanged (smart-wallet signers, ERC-1271 / ERC-6492, cannot sign a Calibur batch)`,
    { payment: stranger },
  )
  await refused(
    paymentTypedData,
    typedData,
    `the calls batch's signature recovers to ${stranger.address}, not the account ${account}: the account's own key must sign the typed data, unchanged (smart-wallet signers, ERC-1271 / ERC-6492, cannot sign a Calibur batch)`,
    { calls: stranger },
  )
  const good = await signedArgs(paymentTypedData, typedData)
  const swapped = await node.call('calibur_execute', { ...good, paymentSignature: good.signature, signature: good.paymentSignature }).then(
    () => undefined,
    (error: Error) => error,
  )
  t.type(swapped, ToolError)
  t.match(swapped?.message, /^the payment batch's signature recovers to 0x[0-9a-fA-F]{40}, not the account /, 'the signatures swapped')
  await rejectsWith(
    t,
    node.call('calibur_execute', { ...good, paymentSignature: `0x${'ff'.repeat(65)}` }),
    'bad signature of the payment batch: it is not a valid secp256k1 signature (Invalid yParityOrV value)',
  )
  await rejectsWith(
    t,
    node.call('calibur_execute', { ...good, signature: `0x${'ff'.repeat(65)}` }),
    "bad signature of the calls batch: it is not a valid secp256k1 signature (Invalid yParityOrV value)",
  )
  t.equal((await node.call('calibur_execute', good)).account, account, 'the batches as prepared still pass')
})

t.test('the nonce: used already, or skipping ahead of the account’s', async (t) => {
  const { paymentTypedData, typedData } = await prepared({ seq: () => 2n })
  const args = await signedArgs(paymentTypedData, typedData)
  await rejectsWith(
    t,
    caliburNode({ seq: () => 3n }).call('calibur_execute', args),
    "the payment batch's nonce (key 0, seq 2) was used already (the account is at seq 3): these batches ran, or others took their place",
  )
  await rejectsWith(
    t,
    caliburNode({ seq: () => 1n }).call('calibur_execute', args),
    "the payment batch's nonce (key 0, seq 2) skips ahead of the account's (seq 1): it cannot run until the batches before it do",
  )
  const ok = await caliburNode({ seq: () => 2n }).call('calibur_execute', args)
  t.equal(ok.account, account)
})

t.test('the input schema: both typed data, two 65-byte signatures, at most one authorization', async (t) => {
  const { node, paymentTypedData, typedData } = await prepared()
  const base = await signedArgs(paymentTypedData, typedData)
  const { signature } = base
  const accepts = (args: Record<string, unknown>, what: string) => t.equal(node.accepts('calibur_execute', args), true, `accepts ${what}`)
  const refuses = (args: Record<string, unknown>, what: string) => t.equal(node.accepts('calibur_execute', args), false, `refuses ${what}`)
  accepts(base, 'two signed batches')
  for (const key of ['chain', 'paymentTypedData', 'paymentSignature', 'typedData', 'signature']) refuses(Object.fromEntries(Object.entries(base).filter(([name]) => name !== key)), `no ${key}`)
  refuses({ ...base, extra: 1 }, 'an unknown argument')
  for (const key of ['signature', 'paymentSignature']) {
    refuses({ ...base, [key]: signature.slice(0, -2) }, `a 64-byte ${key}`)
    refuses({ ...base, [key]: `${signature}00` }, `a 66-byte ${key}`)
    refuses({ ...base, [key]: `0x${'g'.repeat(130)}` }, `a ${key} not hex`)
  }
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
  for (const field of ['typedData', 'paymentTypedData'] as const) {
    const given = field === 'typedData' ? typedData : paymentTypedData
    const message = (value: Record<string, unknown>) => ({ ...base, [field]: { ...given, message: { ...given.message, ...value } } })
    const calls = (count: number) => message({ batchedCall: { calls: Array.from({ length: count }, () => ({ to: one, value: '0', data: '0x' })), revertOnFailure: true } })
    accepts(calls(64), `${field}: 64 calls`)
    refuses(calls(65), `${field}: 65 calls`)
    refuses(calls(0), `${field}: no calls`)
    refuses(message({ deadline: '-1' }), `${field}: a negative deadline`)
    refuses(message({ nonce: '0x1' }), `${field}: a hex nonce`)
    refuses(message({ executor: 'runner' }), `${field}: an executor that is no address`)
    refuses({ ...base, [field]: { ...given, primaryType: 'Call' } }, `${field}: another primaryType`)
  }
  const published = node.registry.view(['calibur'])!.tools.get('calibur_execute')!.listing as {
    title: string
    description: string
    annotations: unknown
    inputSchema: { properties: Record<string, { description?: string }> }
    outputSchema: { properties: Record<string, { description?: string }> }
  }
  t.equal(published.title, 'Check signed Calibur batches')
  t.same(published.annotations, { readOnlyHint: true, openWorldHint: true })
  t.equal(
    published.description,
    'Takes calibur_batch\'s paymentTypedData and typedData, unchanged, with the account\'s signature of each; checks ' +
      'them as Calibur will and that the payment batch only pays; returns `call` and `payment` for submit. Pass ' +
      'calibur_batch\'s authorizationList too, if any.',
  )
  t.equal(published.inputSchema.properties.paymentTypedData!.description, "calibur_batch's paymentTypedData, unchanged")
  t.equal(published.inputSchema.properties.typedData!.description, "calibur_batch's typedData, unchanged")
  t.equal(published.inputSchema.properties.paymentSignature!.description, "by the account's own key")
  t.equal(published.inputSchema.properties.signature!.description, "by the account's own key")
  t.equal(published.inputSchema.properties.authorizationList!.description, "as given to calibur_batch; each item as submit's authorizationList")
  t.equal(published.outputSchema.properties.authorizationList!.description, "for submit; each item as submit's authorizationList")
  t.equal(published.outputSchema.properties.paymentFormatted!.description, 'whole token units and symbol')
  const result = await node.call('calibur_execute', base)
  t.equal(node.validOutput('calibur_execute', { ...result, extra: 1 }), false, 'the result: nothing else')
  const { batch: _batch, ...withoutBatch } = result.payment as Record<string, unknown>
  t.equal(node.validOutput('calibur_execute', { ...result, payment: withoutBatch }), false, 'the result\'s payment carries its batch')
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
