import t, { type Test } from 'tap'
import { keccak256, type Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { startAnvil } from '../core/devnet/anvil.ts'
import { ACCOUNT_SLOTS, OVERSIZED_DATA, POOL_FULL, startParityProxy, TX_MAX_SIZE } from './fixtures/parityProxy.ts'

// The devnet's node (anvil) and production nodes (geth, reth, op-geth) differ where a test could
// pass on the devnet and fail in production (DESIGN §3, "Production parity"). Each difference is
// shown against bare anvil, then shown gone through the parity proxy every devnet test uses.

const anvil = await startAnvil()
const proxy = await startParityProxy(anvil.rpcUrl)
t.teardown(async () => {
  await proxy.close()
  await anvil.stop()
})

// anvil's account #0 (unlocked, and its well-known key for signing raw transactions).
const FUNDED = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266'
const FUNDED_KEY = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80'
// Each pending-state test sends 1 ETH to an empty address of its own, and leaves it unmined while it looks.
const ONE_ETH = 10n ** 18n
const EMPTY = ['0x000000000000000000000000000000000000bEE1', '0x000000000000000000000000000000000000bEE2', '0x000000000000000000000000000000000000bEE3'] as const
const SINK = '0x000000000000000000000000000000000000dEaD'

/** Creation code for eth_call that returns `address`'s balance, and one for eth_estimateGas that reverts while it holds nothing. */
function probes(address: string) {
  const bare = address.slice(2).toLowerCase()
  return { readBalance: `0x73${bare}3160005260206000f3`, revertIfEmpty: `0x73${bare}31601d57600080fd5b00` }
}

/** Turns automine off and sends 1 ETH to `to`, unmined until the test's end (then mined, automine back on). */
async function pendingTransfer(t: Test, to: string): Promise<unknown> {
  await result(anvil.rpcUrl, 'evm_setAutomine', [false])
  const hash = await result(anvil.rpcUrl, 'eth_sendTransaction', [{ from: FUNDED, to, value: `0x${ONE_ETH.toString(16)}` }])
  t.teardown(async () => {
    await result(anvil.rpcUrl, 'evm_mine', [])
    await result(anvil.rpcUrl, 'evm_setAutomine', [true])
  })
  return hash
}

type Answer = { jsonrpc: '2.0'; id: unknown; result?: unknown; error?: { code: number; message: string } }
let nextId = 1

async function post(url: string, body: unknown): Promise<unknown> {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  return response.json()
}

function request(method: string, params: unknown[]) {
  return { jsonrpc: '2.0', id: nextId++, method, params }
}

async function rpc(url: string, method: string, params: unknown[]): Promise<Answer> {
  return (await post(url, request(method, params))) as Answer
}

async function result(url: string, method: string, params: unknown[]): Promise<unknown> {
  const answer = await rpc(url, method, params)
  if (answer.error) throw new Error(`${method}: ${answer.error.message}`)
  return answer.result
}

t.test('an untagged eth_estimateGas: anvil answers at pending, the proxy at latest as geth does', async (t) => {
  const fresh = EMPTY[0]
  const { revertIfEmpty } = probes(fresh)
  const hash = await pendingTransfer(t, fresh)
  t.equal(await result(anvil.rpcUrl, 'eth_getTransactionReceipt', [hash]), null, 'the transfer is pending, not mined')
  t.equal(BigInt((await result(anvil.rpcUrl, 'eth_getBalance', [fresh, 'latest'])) as Hex), 0n, 'latest: the address holds nothing')
  t.equal(BigInt((await result(anvil.rpcUrl, 'eth_getBalance', [fresh, 'pending'])) as Hex), ONE_ETH, 'pending: it holds 1 ETH')

  const onAnvil = await rpc(anvil.rpcUrl, 'eth_estimateGas', [{ data: revertIfEmpty }])
  t.type(onAnvil.result, 'string', 'bare anvil: the untagged estimate sees the pending transfer and succeeds')
  const atLatest = await rpc(anvil.rpcUrl, 'eth_estimateGas', [{ data: revertIfEmpty }, 'latest'])
  t.match(atLatest.error?.message, /execution reverted/, 'bare anvil, tagged latest: it reverts')

  proxy.reset()
  const throughProxy = await rpc(proxy.url, 'eth_estimateGas', [{ data: revertIfEmpty }])
  t.match(throughProxy.error?.message, /execution reverted/, 'through the proxy the untagged estimate is at latest: it reverts')
  t.equal(proxy.rewritten.get('eth_estimateGas'), 1, 'the proxy added the tag')
  t.equal(proxy.forwarded.get('eth_estimateGas'), 1, 'and sent the request on')
  const pendingThroughProxy = await rpc(proxy.url, 'eth_estimateGas', [{ data: revertIfEmpty }, 'pending'])
  t.type(pendingThroughProxy.result, 'string', 'an explicit tag goes through untouched (pending still sees the transfer)')
  t.equal(proxy.rewritten.get('eth_estimateGas'), 1, 'a tagged request is not rewritten')
})

t.test('an untagged eth_call: the proxy answers at latest (anvil 1.7.1 does too; the estimate is where it differs)', async (t) => {
  const fresh = EMPTY[1]
  const { readBalance } = probes(fresh)
  await pendingTransfer(t, fresh)
  const held = BigInt((await result(anvil.rpcUrl, 'eth_getBalance', [fresh, 'latest'])) as Hex)
  t.equal(held, 0n)
  const pendingHeld = BigInt((await result(anvil.rpcUrl, 'eth_call', [{ data: readBalance }, 'pending'])) as Hex)
  t.equal(pendingHeld, held + ONE_ETH, 'tagged pending, eth_call sees the unmined transfer')

  // Measured on anvil 1.7.1: its eth_call resolves a missing block tag to the latest block,
  // unlike its eth_estimateGas. Should a later anvil answer at pending, the proxy still holds it at latest.
  const onAnvil = BigInt((await result(anvil.rpcUrl, 'eth_call', [{ data: readBalance }])) as Hex)
  t.equal(onAnvil, held, 'bare anvil 1.7.1: an untagged eth_call answers at latest')

  proxy.reset()
  const throughProxy = BigInt((await result(proxy.url, 'eth_call', [{ data: readBalance }])) as Hex)
  t.equal(throughProxy, held, 'through the proxy: at latest, the pending transfer unseen')
  t.equal(proxy.rewritten.get('eth_call'), 1, 'the proxy added the tag')
  const overridden = BigInt((await result(proxy.url, 'eth_call', [{ data: readBalance }, null, { [fresh]: { balance: '0x7' } }])) as Hex)
  t.equal(overridden, 7n, 'a null tag becomes latest and a state override stays in place')
  t.equal(proxy.rewritten.get('eth_call'), 2)
})

t.test('a batch is rewritten element by element, its answers in the request order', async (t) => {
  const fresh = EMPTY[2]
  const { readBalance, revertIfEmpty } = probes(fresh)
  await pendingTransfer(t, fresh)
  const held = BigInt((await result(anvil.rpcUrl, 'eth_getBalance', [fresh, 'latest'])) as Hex)
  const oversized = await signedTransaction(TX_MAX_SIZE + 1, 0)
  const batch = [
    request('eth_estimateGas', [{ data: revertIfEmpty }]),
    request('eth_chainId', []),
    request('eth_sendRawTransaction', [oversized]),
    request('eth_call', [{ data: readBalance }]),
    request('eth_call', [{ data: readBalance }, 'pending']),
  ]
  const ids = batch.map((element) => element.id)

  const onAnvil = (await post(anvil.rpcUrl, [batch[0], batch[1], batch[3], batch[4]])) as Answer[]
  t.type(onAnvil[0]!.result, 'string', 'bare anvil: the untagged estimate in a batch succeeds (pending)')

  proxy.reset()
  const answers = (await post(proxy.url, batch)) as Answer[]
  t.same(answers.map((answer) => answer.id), ids, 'one answer per request, in order')
  t.match(answers[0]!.error?.message, /execution reverted/, 'the untagged estimate: at latest, reverts')
  t.equal(answers[1]!.result, '0x7a69', 'eth_chainId: passed through')
  t.same(answers[2]!.error, { code: -32000, message: OVERSIZED_DATA }, 'the oversized raw transaction: refused')
  t.equal(BigInt(answers[3]!.result as Hex), held, 'the untagged call: at latest')
  t.equal(BigInt(answers[4]!.result as Hex), held + ONE_ETH, 'the pending-tagged call: untouched, sees the transfer')
  t.same(
    [proxy.rewritten.get('eth_estimateGas'), proxy.rewritten.get('eth_call'), proxy.refused.get('eth_sendRawTransaction')],
    [1, 1, 1],
    'rewritten: the estimate and one call; refused: the raw transaction',
  )
  t.equal(proxy.forwarded.total, 4, 'four elements went on to anvil')
  t.equal(proxy.forwarded.get('eth_sendRawTransaction'), 0, 'the oversized one did not')

  const allRefused = (await post(proxy.url, [request('eth_sendRawTransaction', [oversized])])) as Answer[]
  t.same(allRefused.map((answer) => answer.error?.message), [OVERSIZED_DATA], 'a batch of refusals only is answered without the node')
})

t.test('raw transactions over 128 KiB: anvil takes them, the proxy refuses them with "oversized data"', async (t) => {
  const nonce = Number(BigInt((await result(anvil.rpcUrl, 'eth_getTransactionCount', [FUNDED, 'latest'])) as Hex))
  const big = await signedTransaction(140 * 1024, nonce)
  t.ok(rawBytes(big) > TX_MAX_SIZE, `140 KiB of calldata: ${rawBytes(big)} bytes encoded`)
  t.equal(await result(anvil.rpcUrl, 'eth_sendRawTransaction', [big]), keccak256(big), 'bare anvil accepts it')
  t.equal(((await result(anvil.rpcUrl, 'eth_getTransactionReceipt', [keccak256(big)])) as { status: Hex }).status, '0x1', 'and mines it')

  proxy.reset()
  const refused = await signedTransaction(140 * 1024, nonce + 1)
  const answer = await rpc(proxy.url, 'eth_sendRawTransaction', [refused])
  t.same(answer.error, { code: -32000, message: OVERSIZED_DATA }, 'the proxy refuses it as geth does')
  t.equal(proxy.forwarded.get('eth_sendRawTransaction'), 0, 'it never reaches anvil')
  t.equal(BigInt((await result(anvil.rpcUrl, 'eth_getTransactionCount', [FUNDED, 'pending'])) as Hex), BigInt(nonce + 1), "anvil's pool has nothing new")

  const atLimit = await signedTransaction(TX_MAX_SIZE, nonce + 1)
  t.equal(rawBytes(atLimit), TX_MAX_SIZE, 'exactly 131072 bytes encoded')
  t.equal(await result(proxy.url, 'eth_sendRawTransaction', [atLimit]), keccak256(atLimit), 'at the limit: passed on, anvil accepts it')
  const small = await signedTransaction(100 * 1024, nonce + 2)
  t.equal(await result(proxy.url, 'eth_sendRawTransaction', [small]), keccak256(small), '100 KiB: passed on, anvil accepts it')
  t.equal(proxy.forwarded.get('eth_sendRawTransaction'), 2)
  const overByOne = await signedTransaction(TX_MAX_SIZE + 1, nonce + 3)
  t.same((await rpc(proxy.url, 'eth_sendRawTransaction', [overByOne])).error, { code: -32000, message: OVERSIZED_DATA }, 'one byte over: refused')
  t.equal(proxy.refused.get('eth_sendRawTransaction'), 2)
  for (const raw of [atLimit, small]) {
    t.equal(((await result(anvil.rpcUrl, 'eth_getTransactionReceipt', [keccak256(raw)])) as { status: Hex }).status, '0x1', 'mined')
  }
})

t.test('a sender\'s 17th pending transaction: anvil keeps it, the proxy refuses it as reth does; a replacement is no new slot', async (t) => {
  const account = privateKeyToAccount(FUNDED_KEY)
  const transfer = (nonce: number, tip = 1_000_000_000n) =>
    account.signTransaction({ chainId: 31337, to: SINK, value: 1n, gas: 21_000n, nonce, maxFeePerGas: 100n * tip, maxPriorityFeePerGas: tip, type: 'eip1559' })
  await result(anvil.rpcUrl, 'evm_setAutomine', [false])
  t.teardown(async () => {
    await result(anvil.rpcUrl, 'evm_mine', [])
    await result(anvil.rpcUrl, 'evm_setAutomine', [true])
  })
  const first = Number(BigInt((await result(anvil.rpcUrl, 'eth_getTransactionCount', [FUNDED, 'latest'])) as Hex))
  proxy.reset()
  for (let slot = 0; slot < ACCOUNT_SLOTS; slot++) {
    const raw = await transfer(first + slot)
    t.equal(await result(proxy.url, 'eth_sendRawTransaction', [raw]), keccak256(raw), `pending transaction ${slot + 1} of ${ACCOUNT_SLOTS}: passed on`)
  }
  const seventeenth = await transfer(first + ACCOUNT_SLOTS)
  t.same((await rpc(proxy.url, 'eth_sendRawTransaction', [seventeenth])).error, { code: -32003, message: POOL_FULL }, 'the 17th: refused in reth\'s words')
  t.equal(proxy.refused.get('eth_sendRawTransaction'), 1)
  const replacement = await transfer(first + 3, 2_000_000_000n)
  t.equal(await result(proxy.url, 'eth_sendRawTransaction', [replacement]), keccak256(replacement), 'a replacement at a pending nonce is passed on')
  t.equal(await result(anvil.rpcUrl, 'eth_sendRawTransaction', [seventeenth]), keccak256(seventeenth), 'bare anvil keeps the 17th')

  // Mined, the slots are free again. With 15 pending, two sent at once cannot both take the last slot.
  await result(anvil.rpcUrl, 'evm_mine', [])
  const next = first + ACCOUNT_SLOTS + 1
  for (let slot = 0; slot < ACCOUNT_SLOTS - 1; slot++) await result(proxy.url, 'eth_sendRawTransaction', [await transfer(next + slot)])
  const [sixteenth, beyond] = [await transfer(next + ACCOUNT_SLOTS - 1), await transfer(next + ACCOUNT_SLOTS)]
  const answers = await Promise.all([rpc(proxy.url, 'eth_sendRawTransaction', [sixteenth]), rpc(proxy.url, 'eth_sendRawTransaction', [beyond])])
  t.same(answers.map((answer) => answer.result ?? answer.error), [keccak256(sixteenth), { code: -32003, message: POOL_FULL }], 'the 16th goes, the one sent beside it is refused')
})

t.test('everything else passes through unchanged', async (t) => {
  proxy.reset()
  const tagged = request('eth_getBalance', [FUNDED, 'latest'])
  t.same(await post(proxy.url, tagged), await post(anvil.rpcUrl, tagged), 'the same answer as anvil gives')
  const broken = await fetch(proxy.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"not json' })
  const direct = await fetch(anvil.rpcUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"not json' })
  t.equal(broken.status, direct.status, 'a body that is not JSON gets what anvil answers')
  t.equal(await broken.text(), await direct.text())
  t.same([proxy.rewritten.total, proxy.refused.total, proxy.forwarded.get('eth_getBalance')], [0, 0, 1])
})

function rawBytes(raw: Hex): number {
  return (raw.length - 2) / 2
}

/**
 * A signed EIP-1559 transaction from account #0 whose encoding is exactly `size` bytes (above
 * 64 KiB the RLP headers keep their length, so sizing the calldata by the difference fits it).
 */
async function signedTransaction(size: number, nonce: number): Promise<Hex> {
  const account = privateKeyToAccount(FUNDED_KEY)
  const sign = (dataBytes: number) =>
    account.signTransaction({
      chainId: 31337,
      type: 'eip1559',
      to: SINK,
      nonce,
      gas: 7_000_000n,
      maxFeePerGas: 10_000_000_000n,
      maxPriorityFeePerGas: 1_000_000_000n,
      data: `0x${'01'.repeat(dataBytes)}`,
    })
  const probe = await sign(size)
  const overhead = rawBytes(probe) - size
  const exact = await sign(size - overhead)
  if (rawBytes(exact) !== size) throw new Error(`could not size a transaction to ${size} bytes (got ${rawBytes(exact)})`)
  return exact
}
