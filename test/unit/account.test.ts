import t, { type Test } from 'tap'
import { getAddress, parseAbi, toHex, type Hex } from 'viem'
import { ChainUnavailableError } from '../../core/chain/guardedTransport.ts'
import { readAccount } from '../../core/relay/account.ts'
import { paymentToken } from '../../core/relay/paymentToken.ts'
import { ToolError } from '../../core/tool/tool.ts'
import { caliburDelegate } from '../../plugins/calibur/paymentFirstBatch.ts'
import { ethCall, fakeClient, fakeNetwork, networkConfig } from './fakeChain.ts'
import { CALIBUR_ADDRESS } from '../../plugins/calibur/networkOptions.ts'

// The account view (core/relay/account.ts) and the payment tokens (paymentToken.ts) against a node
// the test answers: an ERC-20's balanceOf and Calibur's getSeq(uint256) written from their
// Solidity signatures, balances formatted by hand. The view names a delegate through the calibur
// group's Delegate, as the relay is given it.

const config = networkConfig()
const usdc = getAddress(config.tokens[0]!.address)
const weth = getAddress(config.weth)
const calibur = getAddress(CALIBUR_ADDRESS)
const account = getAddress('0x70997970C51812dc3A010C7d01b50e0d17dc79C8')
const erc20 = parseAbi(['function balanceOf(address account) view returns (uint256)'])
const caliburAbi = parseAbi(['function getSeq(uint256 key) view returns (uint256 seq)'])

function node(code: Hex, options: { seq?: bigint; chainId?: number } = {}) {
  const seqAsked: unknown[] = []
  const balanceAsked: unknown[] = []
  const balances: Record<string, bigint> = { [usdc]: 12_345_678n, [weth]: 1n }
  const token = (address: string) => ({
    abi: erc20,
    answer: (_name: string, args: readonly unknown[]) => {
      balanceAsked.push(args[0])
      return balances[address]!
    },
  })
  const { client, seen } = fakeClient({
    eth_chainId: () => toHex(options.chainId ?? 31337),
    eth_getCode: () => code,
    eth_getTransactionCount: () => '0x5',
    eth_getBalance: () => toHex(1_500_000_000_000_000_000n),
    eth_call: ethCall({
      [usdc]: token(usdc),
      [weth]: token(weth),
      [account]: {
        abi: caliburAbi,
        answer: (_name, args) => {
          seqAsked.push(args[0])
          return options.seq ?? 3n
        },
      },
    }),
  })
  return { network: fakeNetwork(client, config), seen, seqAsked, balanceAsked }
}

const tokens = [
  { symbol: 'USDC', address: usdc, balance: '12.345678', balanceBaseUnits: '12345678' },
  { symbol: 'WETH', address: weth, balance: '0.000000000000000001', balanceBaseUnits: '1' },
]
const delegates = [caliburDelegate({ token: () => Promise.reject(new Error('not priced here')) as never }, () => CALIBUR_ADDRESS)]
const plain = { address: account, delegated: false, nonce: 5, ethBalance: '1.5', ethBalanceWei: '1500000000000000000', tokens }

t.test('a plain account: not delegated, its nonce, ETH and token balances, read at latest', async (t) => {
  const { network, seen, seqAsked, balanceAsked } = node('0x')
  t.strictSame(await readAccount(network, account, delegates), plain)
  t.strictSame(seqAsked, [], 'no Calibur nonce read')
  t.strictSame(balanceAsked, [account, account])
  for (const method of ['eth_getCode', 'eth_getTransactionCount', 'eth_getBalance']) {
    const request = seen.find((candidate) => candidate.method === method)!
    t.strictSame([getAddress(request.params[0] as string), request.params[1]], [account, 'latest'], method)
  }
  t.ok(seen.some((request) => request.method === 'eth_chainId'))
})

t.test('delegated to Calibur: the delegate, named, and its batch nonce (key 0), 0 included', async (t) => {
  const delegation = `0xef0100${calibur.slice(2).toLowerCase()}` as Hex
  const { network, seqAsked } = node(delegation)
  t.strictSame(await readAccount(network, account, delegates), { ...plain, delegated: true, delegate: calibur, delegateName: 'Calibur', delegateNonce: '3' })
  t.strictSame(seqAsked, [0n])
  t.strictSame(await readAccount(node(delegation, { seq: 0n }).network, account, delegates), { ...plain, delegated: true, delegate: calibur, delegateName: 'Calibur', delegateNonce: '0' })
  // the designator in capitals is the same designator
  t.strictSame(await readAccount(node(`0xEF0100${calibur.slice(2).toUpperCase()}` as Hex).network, account, delegates), {
    ...plain,
    delegated: true,
    delegate: calibur,
    delegateName: 'Calibur',
    delegateNonce: '3',
  })
  // Where no delegate group is served, the delegate is an address, unnamed, and no nonce is read.
  const unserved = node(delegation)
  t.strictSame(await readAccount(unserved.network, account, []), { ...plain, delegated: true, delegate: calibur })
  t.strictSame(unserved.seqAsked, [])
})

t.test('a delegate that needs a step after the delegation says so, in its own words (issue 49, point 9)', async (t) => {
  const delegation = `0xef0100${calibur.slice(2).toLowerCase()}` as Hex
  const asked: string[] = []
  const needsSetup = { ...delegates[0]!, readiness: async (_network: unknown, who: string) => (asked.push(who), 'its proxy has no implementation yet: sign setImplementation first') }
  t.strictSame(await readAccount(node(delegation).network, account, [needsSetup]), {
    ...plain,
    delegated: true,
    delegate: calibur,
    delegateName: 'Calibur',
    delegateNonce: '3',
    delegateNotReady: 'its proxy has no implementation yet: sign setImplementation first',
  })
  t.strictSame(asked, [account], 'asked of the delegated account')
  const ready = { ...delegates[0]!, readiness: async () => undefined }
  t.notOk('delegateNotReady' in (await readAccount(node(delegation).network, account, [ready])), 'ready: nothing said')
  t.notOk('delegateNotReady' in (await readAccount(node('0x').network, account, [needsSetup])), 'not delegated: not asked')
})

t.test('delegated elsewhere, or code that is no delegation designator', async (t) => {
  const other = getAddress('0x5FbDB2315678afecb367f032d93F642f64180aa3')
  const elsewhere = node(`0xef0100${other.slice(2).toLowerCase()}` as Hex)
  t.strictSame(await readAccount(elsewhere.network, account, delegates), { ...plain, delegated: true, delegate: other })
  t.strictSame(elsewhere.seqAsked, [])
  // 23 bytes that do not start with 0xef0100; a designator with a byte more; a contract's code
  for (const code of [`0xef0200${other.slice(2)}`, `0xef0100${other.slice(2)}00`, `0x6080604052${'00'.repeat(18)}`, '0x6080604052'] as Hex[]) {
    t.strictSame(await readAccount(node(code).network, account, delegates), plain, code)
  }
})

t.test('a node on another chain is refused', async (t) => {
  const error = await readAccount(node('0x', { chainId: 1 }).network, account, delegates).catch((error: unknown) => error)
  t.type(error, ChainUnavailableError)
})

/** Throws a ToolError with exactly `message` (t.throws matches a message as a substring). */
function refuses(t: Test, run: () => unknown, message: string) {
  let error: unknown
  try {
    run()
  } catch (thrown) {
    error = thrown
  }
  t.type(error, ToolError)
  t.equal((error as Error | undefined)?.message, message)
}

t.test('paymentToken: a configured token with a swap path, or WETH; else the accepted ones named', async (t) => {
  const network = fakeNetwork(fakeClient({}).client, config)
  t.strictSame(paymentToken(network, 'USDC'), { address: usdc, symbol: 'USDC', decimals: 6 })
  t.strictSame(paymentToken(network, 'usdc'), { address: usdc, symbol: 'USDC', decimals: 6 })
  t.strictSame(paymentToken(network, usdc.toLowerCase()), { address: usdc, symbol: 'USDC', decimals: 6 })
  t.strictSame(paymentToken(network, 'WETH'), { address: weth, symbol: 'WETH', decimals: 18 }, 'WETH needs no path')
  const dai = getAddress('0x50c5725949a6f0c72e6c4a641f24049a917db0cb')
  const withDai = networkConfig({
    weth: weth.toLowerCase(),
    tokens: [...config.tokens.map((token) => ({ ...token, address: token.address.toLowerCase() })), { symbol: 'DAI', address: dai, decimals: 18 }],
  })
  const daiNetwork = fakeNetwork(fakeClient({}).client, withDai)
  refuses(t, () => paymentToken(daiNetwork, 'DAI'), 'DAI is not accepted as payment on local: pay in one of USDC, WETH')
  t.strictSame(paymentToken(daiNetwork, 'WETH'), { address: weth, symbol: 'WETH', decimals: 18 }, 'WETH configured in lower case')
  const unknown = '0x0000000000000000000000000000000000001234'
  refuses(t, () => paymentToken(network, unknown), `${unknown} is not accepted as payment on local: pay in one of USDC, WETH`)
  refuses(t, () => paymentToken(network, 'DOGE'), 'unknown token "DOGE" on local: neither a configured symbol (USDC, WETH) nor a token address')
})
