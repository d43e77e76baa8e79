import fc from 'fast-check'
import t from 'tap'
import { encodeFunctionData, erc20Abi, getAddress, maxUint256, type Address } from 'viem'
import { encodeApprove, encodeTransfer } from '../core/chain/erc20Calls.ts'

// encodeApprove and encodeTransfer write their two static words directly (core/chain/erc20Calls.ts says
// why). viem's generic encoder is the reference: the same bytes for any address and amount, and
// an amount outside uint256 refused, as viem refuses it.

const address = fc.uint8Array({ minLength: 20, maxLength: 20 }).map((bytes) => getAddress(`0x${Buffer.from(bytes).toString('hex')}`))
const uint256 = fc.oneof(fc.bigInt({ min: 0n, max: maxUint256 }), fc.constantFrom(0n, 1n, maxUint256, maxUint256 - 1n, 2n ** 128n))
const runs = { numRuns: 2_000 }

t.test('encodeTransfer gives the bytes viem encodes, for any recipient and amount', async (t) => {
  let checked = 0
  fc.assert(
    fc.property(address, address, uint256, fc.boolean(), (token, to, amount, lowercase) => {
      const recipient = (lowercase ? to.toLowerCase() : to) as Address
      const call = encodeTransfer({ token, to: recipient, amount })
      checked++
      return call.to === token && call.value === '0' && call.data === encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [to, amount] })
    }),
    runs,
  )
  t.equal(checked, runs.numRuns)
})

t.test('encodeApprove gives the bytes viem encodes, for any spender and amount', async (t) => {
  let checked = 0
  fc.assert(
    fc.property(address, address, uint256, (token, spender, amount) => {
      const call = encodeApprove({ token, spender, amount })
      checked++
      return call.to === token && call.value === '0' && call.data === encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [spender, amount] })
    }),
    runs,
  )
  t.equal(checked, runs.numRuns)
})

t.test('an amount outside uint256 or a malformed address is refused, as viem refuses it', async (t) => {
  const token = getAddress('0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48')
  const to = getAddress('0x70997970C51812dc3A010C7d01b50e0d17dc79C8')
  for (const amount of [-1n, maxUint256 + 1n]) {
    t.throws(() => encodeTransfer({ token, to, amount }), RangeError, `transfer of ${amount}`)
    t.throws(() => encodeApprove({ token, spender: to, amount }), RangeError, `approve of ${amount}`)
    t.throws(() => encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [to, amount] }), `viem refuses ${amount} too`)
  }
  for (const bad of ['0x1234', `${to}00`, to.replace('0x', '0y'), `0x${'g'.repeat(40)}`]) {
    t.throws(() => encodeTransfer({ token, to: bad as Address, amount: 1n }), TypeError, `recipient ${bad}`)
    t.throws(() => encodeApprove({ token, spender: bad as Address, amount: 1n }), TypeError, `spender ${bad}`)
  }
})
