import t from 'tap'
import { createPublicClient, encodeFunctionData, erc20Abi, getAddress, http, parseSignature, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { mintUsdc } from '../core/devnet/fund.ts'
import { eip3009Abi } from '../plugins/3009/abi.ts'
import { startDevnetBruno } from './fixtures/devnetBruno.ts'
import { RawMcpClient } from './fixtures/mcpHttp.ts'
import { signTransfer } from './fixtures/signedTransfer.ts'
import { waitFor } from './fixtures/waitFor.ts'

// Flow 2 through the bruno group: an account with only USDC (no ETH, no delegate) sends USDC to a
// friend by signature, and pays Bruno with a signed EIP-3009 transfer in the same transaction. The
// payee here is an account (`refunds: false`), as an operator without a PayeeVault runs Bruno: it
// keeps every payment whole (test/refunds.test.ts has the devnet's default, the vault that refunds).

const bruno = await startDevnetBruno(t, { groups: ['bruno', 'erc20'], refunds: false })
const { deployment } = bruno
const client = createPublicClient({ transport: http(deployment.rpcUrl) })
const mcp = new RawMcpClient(`${bruno.mcpUrl}/bruno`)
const payee = getAddress(bruno.config.networks[0]!.payee)
const usdc = deployment.usdc
const token = { address: usdc, name: 'USD Coin', version: '2', chainId: deployment.chainId }

const signedTransfer = (key: Hex, to: Hex, value: bigint) => signTransfer(key, token, to, value)

const balance = (address: Hex) => client.readContract({ address: usdc, abi: erc20Abi, functionName: 'balanceOf', args: [address] })

t.test('a USDC-only account pays with a signed transfer and its call runs, in one transaction', async (t) => {
  const key = generatePrivateKey()
  const account = privateKeyToAccount(key).address
  const friend = privateKeyToAccount(generatePrivateKey()).address
  await mintUsdc(deployment.rpcUrl, deployment, account, 50_000_000n)
  t.equal(await client.getBalance({ address: account }), 0n, 'no ETH')

  const gift = await signedTransfer(key, friend, 10_000_000n)
  const { v, r, s } = parseSignature(gift.signature)
  const call = {
    to: usdc,
    data: encodeFunctionData({
      abi: eip3009Abi,
      functionName: 'transferWithAuthorization',
      args: [account, friend, 10_000_000n, 0n, BigInt(gift.message.validBefore), gift.message.nonce, Number(v), r, s],
    }),
  }
  const quote = await mcp.call('quote', { chain: 'local', call, token: 'USDC', payment: 'authorization' })
  t.equal(quote.payee, payee)
  t.ok(BigInt(quote.amountBaseUnits) > 0n)

  const fee = await signedTransfer(key, payee, BigInt(quote.amountBaseUnits))
  const payeeBefore = await balance(payee)
  const runnerBefore = await client.getBalance({ address: deployment.runner.operator.address })
  const accepted = await mcp.call('submit', {
    chain: 'local',
    call,
    payment: { token: usdc, authorization: fee.message, signature: fee.signature },
  })
  t.equal(accepted.stage, 'waiting')

  const status = await waitFor(() => mcp.call('status', { id: accepted.id }), (status) => status.stage === 'done' || status.stage === 'failed', `submission ${accepted.id} settled`, 30_000)
  t.equal(status.stage, 'done', status.reason)
  t.same(
    { charged: status.outcome.chargedBaseUnits, refunded: status.outcome.refundedBaseUnits },
    { charged: quote.amountBaseUnits, refunded: '0' },
    'an account as payee refunds nothing: the whole payment is charged',
  )
  const receipt = await client.getTransactionReceipt({ hash: status.transaction.hash })
  t.equal(receipt.status, 'success')
  t.equal(await balance(friend), 10_000_000n, 'the call ran: the friend got 10 USDC')
  t.equal((await balance(payee)) - payeeBefore, BigInt(quote.amountBaseUnits), 'the payee got the quoted amount')
  t.equal(await balance(account), 50_000_000n - 10_000_000n - BigInt(quote.amountBaseUnits), 'the account paid exactly the call and the fee')
  const runnerAfter = await client.getBalance({ address: deployment.runner.operator.address })
  t.equal(runnerBefore - runnerAfter, receipt.gasUsed * receipt.effectiveGasPrice, 'the runner paid only the gas')
  t.equal(status.transaction.feeWei, (receipt.gasUsed * receipt.effectiveGasPrice).toString())
})

t.test('refusals: short payment, payment to someone else, a call that reverts, unknown id', async (t) => {
  const key = generatePrivateKey()
  const account = privateKeyToAccount(key).address
  await mintUsdc(deployment.rpcUrl, deployment, account, 5_000_000n)
  const nonceBefore = await client.getTransactionCount({ address: deployment.runner.operator.address })
  const call = { to: usdc, data: encodeFunctionData({ abi: erc20Abi, functionName: 'balanceOf', args: [account] }) }

  const short = await signedTransfer(key, payee, 1n)
  let result = await mcp.callTool('submit', { chain: 'local', call, payment: { token: usdc, authorization: short.message, signature: short.signature } })
  t.equal(result.isError, true)
  t.match(result.content[0].text, /is below the most the runner could pay for it now/)

  const elsewhere = await signedTransfer(key, account, 1_000_000n)
  result = await mcp.callTool('submit', { chain: 'local', call, payment: { token: usdc, authorization: elsewhere.message, signature: elsewhere.signature } })
  t.match(result.content[0].text, /not the payee/)

  const tooMuch = { to: usdc, data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [payee, 1n] }) }
  const fee = await signedTransfer(key, payee, 1_000_000n)
  result = await mcp.callTool('submit', { chain: 'local', call: tooMuch, payment: { token: usdc, authorization: fee.message, signature: fee.signature } })
  t.equal(result.isError, true)
  t.match(result.content[0].text, /the call reverted: ERC20: transfer amount exceeds balance/)

  result = await mcp.callTool('status', { id: 'no-such-id' })
  t.match(result.content[0].text, /unknown submission id/)
  t.equal(await client.getTransactionCount({ address: deployment.runner.operator.address }), nonceBefore, 'the runner sent nothing')
})
