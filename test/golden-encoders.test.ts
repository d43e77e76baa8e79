import { readFileSync, writeFileSync } from 'node:fs'
import t from 'tap'
import { decodeFunctionData, getAddress, type Address, type Hex } from 'viem'
import { swapRouter02Artifact } from '../core/devnet/artifacts.ts'
import type { Call } from '../core/tool/schemas.ts'
import { encodeApprove, encodeTransfer } from '../core/chain/erc20Calls.ts'
import { encodeWethWithdraw } from '../plugins/erc20/unwrap.ts'
import { encodeV3Path, type SwapHop } from '../plugins/uniswap/path.ts'
import { encodeSwapToEth, minimumOutAfterSlippage } from '../plugins/uniswap/swapToEth.ts'

// The golden files hold, for fixed inputs, the calls the helpers' pure encoders produce — the
// encoders the tools themselves call. `UPDATE_GOLDEN=1 npx tap test/golden-encoders.test.ts`
// rewrites them from the inputs below; without it the files must match byte for byte. Either way
// each vector is also checked against expectations computed here without the encoders.

const update = process.env.UPDATE_GOLDEN === '1'
const erc20File = new URL('../golden/erc20.json', import.meta.url)
const uniswapFile = new URL('../golden/uniswap.json', import.meta.url)

// Mainnet addresses (fixed, public) and the devnet's, which its deploy yields deterministically.
const mainnet = {
  usdc: '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48',
  dai: '0x6B175474E89094C44Da98b954EedeAC495271d0F',
  weth: '0xC02aaA39b223FE8D0A0e5C4F27eAD9083C756Cc2',
  swapRouter02: '0x68b3465833fb72A70ecDF485E0e4C7bD8665Fc45',
} as const
const devnet = {
  usdc: '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512',
  weth: '0xa513E6E4b8f2a923D98304ec87F64353C4D5C853',
  swapRouter02: '0x610178dA211FEF7D417bC0e6FeD39F05609AD788',
} as const
const alice = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'
const bob = '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC'

type Erc20Case =
  | { name: string; encoder: 'encodeApprove'; input: { token: Address; spender: Address; amountBaseUnits: string } }
  | { name: string; encoder: 'encodeTransfer'; input: { token: Address; to: Address; amountBaseUnits: string } }
  | { name: string; encoder: 'encodeWethWithdraw'; input: { weth: Address; amountWei: string } }
type Erc20Vector = Erc20Case & { calls: Call[] }

interface SwapVector {
  name: string
  encoder: 'encodeSwapToEth'
  input: { router: Address; hops: SwapHop[]; amountInBaseUnits: string; expectedOutWei: string; slippageBps: number; recipient: Address }
  path: Hex
  minimumOutWei: string
  calls: Call[]
}

const erc20Inputs: Erc20Case[] = [
  { name: 'approve 12.5 USDC to SwapRouter02 (mainnet)', encoder: 'encodeApprove', input: { token: mainnet.usdc, spender: mainnet.swapRouter02, amountBaseUnits: '12500000' } },
  {
    name: 'approve max USDC to SwapRouter02 (mainnet)',
    encoder: 'encodeApprove',
    input: { token: mainnet.usdc, spender: mainnet.swapRouter02, amountBaseUnits: (2n ** 256n - 1n).toString() },
  },
  { name: 'revoke: approve 0 USDC to SwapRouter02 (mainnet)', encoder: 'encodeApprove', input: { token: mainnet.usdc, spender: mainnet.swapRouter02, amountBaseUnits: '0' } },
  { name: 'transfer 250.75 USDC (mainnet)', encoder: 'encodeTransfer', input: { token: mainnet.usdc, to: alice, amountBaseUnits: '250750000' } },
  { name: 'unwrap 0.5 WETH (mainnet)', encoder: 'encodeWethWithdraw', input: { weth: mainnet.weth, amountWei: '500000000000000000' } },
  { name: 'devnet: approve 12.5 USDC to SwapRouter02', encoder: 'encodeApprove', input: { token: devnet.usdc, spender: devnet.swapRouter02, amountBaseUnits: '12500000' } },
  { name: 'devnet: transfer 250.75 USDC', encoder: 'encodeTransfer', input: { token: devnet.usdc, to: bob, amountBaseUnits: '250750000' } },
  { name: 'devnet: unwrap 0.4 WETH', encoder: 'encodeWethWithdraw', input: { weth: devnet.weth, amountWei: '400000000000000000' } },
]

const swapInputs: Pick<SwapVector, 'name' | 'encoder' | 'input'>[] = [
  {
    name: 'swap 100 USDC to ETH via the 0.05% pool (mainnet)',
    encoder: 'encodeSwapToEth',
    input: {
      router: mainnet.swapRouter02,
      hops: [{ tokenIn: mainnet.usdc, fee: 500, tokenOut: mainnet.weth }],
      amountInBaseUnits: '100000000',
      expectedOutWei: '33123456789012345',
      slippageBps: 50,
      recipient: alice,
    },
  },
  {
    name: 'swap 250.5 DAI to ETH via DAI/USDC 0.01% then USDC/WETH 0.05% (mainnet)',
    encoder: 'encodeSwapToEth',
    input: {
      router: mainnet.swapRouter02,
      hops: [
        { tokenIn: mainnet.dai, fee: 100, tokenOut: mainnet.usdc },
        { tokenIn: mainnet.usdc, fee: 500, tokenOut: mainnet.weth },
      ],
      amountInBaseUnits: '250500000000000000000',
      expectedOutWei: '83456789000000001',
      slippageBps: 30,
      recipient: bob,
    },
  },
  {
    name: 'devnet: swap 100 USDC to ETH via the 0.05% pool',
    encoder: 'encodeSwapToEth',
    input: {
      router: devnet.swapRouter02,
      hops: [{ tokenIn: devnet.usdc, fee: 500, tokenOut: devnet.weth }],
      amountInBaseUnits: '100000000',
      expectedOutWei: '33233333333333333',
      slippageBps: 50,
      recipient: alice,
    },
  },
]

function encodeErc20(vector: Erc20Case): Call {
  switch (vector.encoder) {
    case 'encodeApprove':
      return encodeApprove({ token: vector.input.token, spender: vector.input.spender, amount: BigInt(vector.input.amountBaseUnits) })
    case 'encodeTransfer':
      return encodeTransfer({ token: vector.input.token, to: vector.input.to, amount: BigInt(vector.input.amountBaseUnits) })
    case 'encodeWethWithdraw':
      return encodeWethWithdraw({ weth: vector.input.weth, amount: BigInt(vector.input.amountWei) })
  }
}

function encodeSwap({ name, encoder, input }: Pick<SwapVector, 'name' | 'encoder' | 'input'>): SwapVector {
  const path = encodeV3Path(input.hops)
  const minimumOut = minimumOutAfterSlippage(BigInt(input.expectedOutWei), input.slippageBps)
  const call = encodeSwapToEth({ router: input.router, path, amountIn: BigInt(input.amountInBaseUnits), minimumOut, recipient: input.recipient })
  return { name, encoder, input, path, minimumOutWei: minimumOut.toString(), calls: [call] }
}

const erc20Golden = {
  note:
    'Byte-exact calls of the erc20 group\'s encoders (plugins/erc20: encodeApprove, encodeTransfer, encodeWethWithdraw — the ' +
    'functions erc20_approve, erc20_transfer and weth_unwrap call) for fixed inputs; amounts in base units, named for their unit ' +
    '(`amountBaseUnits`, `amountWei`: SPEC §5, Units). Produced by ' +
    '`UPDATE_GOLDEN=1 npx tap test/golden-encoders.test.ts` from the inputs in that test. Pinned by: the selectors asserted ' +
    'literally there (approve 0x095ea7b3, transfer 0xa9059cbb, withdraw 0x2e1a7d4d), calldata rebuilt there by hand from ' +
    'selector and 32-byte words, test/erc20.test.ts comparing the devnet tools\' output to the "devnet:" vectors and sending ' +
    'such calls on the devnet. "devnet:" vectors use the addresses the devnet deploy (anvil key #0) yields deterministically.',
  vectors: erc20Inputs.map((vector) => ({ ...vector, calls: [encodeErc20(vector)] })),
}

const uniswapGolden = {
  note:
    'Byte-exact calls of uniswap_swap_to_eth\'s encoders (plugins/uniswap: encodeV3Path, minimumOutAfterSlippage, ' +
    'encodeSwapToEth) for fixed inputs (amounts named for their unit: SPEC §5, Units), a fixed quoted amount ' +
    '(`expectedOutWei`) standing in for QuoterV2. Produced by ' +
    '`UPDATE_GOLDEN=1 npx tap test/golden-encoders.test.ts` from the inputs in that test. Pinned by: the selectors ' +
    'asserted literally there (multicall(bytes[]) 0xac9650d8, exactInput 0xb858183f, unwrapWETH9(uint256,address) ' +
    '0x49404b7c), the calls decoded there with SwapRouter02\'s published ABI (@uniswap/swap-router-contracts), the path ' +
    'rebuilt by hand (token 20 bytes, fee 3 bytes, token …), minimumOutWei recomputed as expectedOutWei − ⌈expectedOutWei·bps/10000⌉, ' +
    'and test/uniswap.test.ts executing such calls on the devnet. The "devnet:" vector uses the devnet deploy\'s addresses.',
  vectors: swapInputs.map(encodeSwap),
}

function checkFile(file: URL, golden: object): void {
  const text = `${JSON.stringify(golden, null, 2)}\n`
  if (update) {
    writeFileSync(file, text)
    return
  }
  const committed = readFileSync(file, 'utf8')
  t.same(JSON.parse(committed), golden, `${file.pathname}: the encoders produce the committed vectors`)
  t.equal(committed, text, `${file.pathname}: byte for byte`)
}

t.test('the encoders reproduce golden/erc20.json', async () => checkFile(erc20File, erc20Golden))
t.test('the encoders reproduce golden/uniswap.json', async () => checkFile(uniswapFile, uniswapGolden))

// From here on, only the committed files and arithmetic done here: no encoder is called.
const word = (hex: string) => hex.toLowerCase().replace(/^0x/, '').padStart(64, '0')

t.test('golden/erc20.json agrees with hand-built calldata', async (t) => {
  const { vectors } = JSON.parse(readFileSync(erc20File, 'utf8')) as { vectors: Erc20Vector[] }
  t.equal(vectors.length, erc20Inputs.length)
  const selectors = { encodeApprove: '0x095ea7b3', encodeTransfer: '0xa9059cbb', encodeWethWithdraw: '0x2e1a7d4d' } as const
  for (const vector of vectors) {
    const [call] = vector.calls
    t.equal(vector.calls.length, 1, vector.name)
    t.equal(call?.data.slice(0, 10), selectors[vector.encoder], `${vector.name}: selector`)
    t.equal(call?.value, '0', `${vector.name}: no ETH sent`)
    const amount = word(BigInt(vector.encoder === 'encodeWethWithdraw' ? vector.input.amountWei : vector.input.amountBaseUnits).toString(16))
    switch (vector.encoder) {
      case 'encodeApprove':
        t.equal(call?.to, getAddress(vector.input.token))
        t.equal(call?.data, `0x095ea7b3${word(vector.input.spender)}${amount}`, vector.name)
        break
      case 'encodeTransfer':
        t.equal(call?.to, getAddress(vector.input.token))
        t.equal(call?.data, `0xa9059cbb${word(vector.input.to)}${amount}`, vector.name)
        break
      case 'encodeWethWithdraw':
        t.equal(call?.to, getAddress(vector.input.weth))
        t.equal(call?.data, `0x2e1a7d4d${amount}`, vector.name)
        break
    }
  }
  const max = vectors.find((vector) => vector.name.startsWith('approve max'))
  t.equal(max?.calls[0]?.data.slice(-64), 'f'.repeat(64), 'max is 2^256-1')
})

t.test('golden/uniswap.json agrees with SwapRouter02\'s published ABI and a hand-packed path', async (t) => {
  const { vectors } = JSON.parse(readFileSync(uniswapFile, 'utf8')) as { vectors: SwapVector[] }
  t.equal(vectors.length, swapInputs.length)
  const abi = swapRouter02Artifact.abi
  for (const { name, input, path, minimumOutWei, calls } of vectors) {
    const packed = `0x${input.hops[0]!.tokenIn.slice(2)}${input.hops.map((hop) => hop.fee.toString(16).padStart(6, '0') + hop.tokenOut.slice(2)).join('')}`
    t.equal(path, packed.toLowerCase(), `${name}: path`)
    const expected = BigInt(input.expectedOutWei)
    const shortfall = (expected * BigInt(input.slippageBps) + 9_999n) / 10_000n
    t.equal(minimumOutWei, (expected - shortfall).toString(), `${name}: minimumOutWei`)

    t.equal(calls.length, 1, `${name}: one call`)
    const [call] = calls
    t.equal(call?.to, getAddress(input.router), `${name}: sent to the router`)
    t.equal(call?.value, '0', `${name}: no ETH sent`)
    t.equal(call?.data.slice(0, 10), '0xac9650d8', `${name}: multicall(bytes[])`)
    const outer = decodeFunctionData({ abi, data: call!.data as Hex })
    t.equal(outer.functionName, 'multicall')
    const [inner] = outer.args as [Hex[]]
    t.equal(inner.length, 2, `${name}: swap then unwrap`)
    t.equal(inner[0]?.slice(0, 10), '0xb858183f', `${name}: exactInput`)
    t.equal(inner[1]?.slice(0, 10), '0x49404b7c', `${name}: unwrapWETH9(uint256,address)`)
    const swap = decodeFunctionData({ abi, data: inner[0]! })
    t.same(swap.args, [{ path, recipient: '0x0000000000000000000000000000000000000002', amountIn: BigInt(input.amountInBaseUnits), amountOutMinimum: 0n }], `${name}: exactInput params`)
    const unwrap = decodeFunctionData({ abi, data: inner[1]! })
    t.same(unwrap.args, [BigInt(minimumOutWei), getAddress(input.recipient)], `${name}: unwrapWETH9 args`)
  }
})
