import t from 'tap'
import { encodeFunctionData, erc20Abi, getAddress, parseEther, type Address, type Hex, type PrivateKeyAccount } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { encodeTransfer } from '../../core/chain/erc20Calls.ts'
import { encodeOwnerExecute, encodeSignedExecute } from '../../plugins/calibur/executeCalldata.ts'
import { caliburTypedData, type CaliburCall } from '../../plugins/calibur/typedData.ts'
import { startDevnetBruno } from '../fixtures/devnetBruno.ts'
import { RawMcpClient } from '../fixtures/mcpHttp.ts'
import { adversaryChain, ATTACK_FEES, bindings, compileAdversary, expectCallFailedAndPaid, fundedPayer, runnerCallGas, switchAbi, type Binding } from './adversary.ts'
import { CALIBUR_ADDRESS } from '../../plugins/calibur/networkOptions.ts'

// Issue 27, point 1: a call that is honest when Bruno simulates it and, mined a block later, reverts with revert
// data sized to all its gas (or burns all of it), the switch armed by one cheap transaction ahead of the runner's.
// When the payment leg ran in the same call from the Runner as the account's calls, the frame that copied that
// revert data back ran out of gas and took the payment leg with it: the runner paid the whole stipend for nothing.
// Now the Runner takes the payment in a call of its own (a signed payment-only batch) before the account's batch,
// so whatever that batch returns, reverts or burns, the payee keeps the payment and the runner spends no more than
// it was paid — at stipends from 100k to the largest Bruno gives, for calls made flat and through a nested
// self-call, through each binding.

const bruno = await startDevnetBruno(t, { groups: ['bruno', 'calibur'], pollMs: 100 })
const { deployment } = bruno
const chain = adversaryChain(bruno)
const switchAddress = await chain.deploy(compileAdversary().Switch)
const mcp = new RawMcpClient(`${bruno.mcpUrl}/bruno,calibur`)
const api = bindings(bruno, mcp)
const usdc = deployment.usdc
const payee = getAddress(bruno.config.networks[0]!.payee)
const maxCallGas = BigInt(bruno.config.networks[0]!.relay.maxCallGas)
const [RETURN_DATA_BOMB, GAS_BOMB] = await Promise.all([
  chain.client.readContract({ address: switchAddress, abi: switchAbi, functionName: 'RETURN_DATA_BOMB' }),
  chain.client.readContract({ address: switchAddress, abi: switchAbi, functionName: 'GAS_BOMB' }),
])
// Revert data whose memory costs 18 % of the gas the call has: what undid the payment leg when it shared the frame.
const BOMB_PERCENT = 18n
const attacker = privateKeyToAccount(generatePrivateKey())
await chain.testClient.setBalance({ address: attacker.address, value: parseEther('10') })

const sign = (account: PrivateKeyAccount, typedData: unknown) => account.signTypedData(typedData as never)
const runCall = (rounds: bigint): CaliburCall => ({ to: switchAddress, value: '0', data: encodeFunctionData({ abi: switchAbi, functionName: 'run', args: [rounds] }) })

/** A fresh account delegated to Calibur, holding USDC and no ETH. */
async function delegatedPayer(): Promise<PrivateKeyAccount> {
  const account = await fundedPayer(bruno, chain, generatePrivateKey(), 2_000_000_000n)
  await chain.mined(await chain.delegateBy(account, CALIBUR_ADDRESS))
  return account
}

/** The account's calls: the switch's `run` made flat, or through the account's own `execute` (a nested self-call). */
const callsFor = (account: Address, rounds: bigint, path: 'flat' | 'nested'): CaliburCall[] =>
  path === 'flat' ? [runCall(rounds)] : [{ to: account, value: '0', data: encodeOwnerExecute({ calls: [runCall(rounds)], revertOnFailure: true }) }]

t.test('the bomb undoes a payment leg that shares its call frame (the old layout, sent by hand: what Bruno no longer signs)', async (t) => {
  const account = await delegatedPayer()
  const amount = 5_000_000n
  const batch = {
    calls: [encodeTransfer({ token: usdc, to: payee, amount }) as CaliburCall, { to: account.address, value: '0', data: encodeOwnerExecute({ calls: [runCall(60_000n)], revertOnFailure: true }) }],
    revertOnFailure: false,
  }
  const domain = { chainId: deployment.chainId, account: account.address, salt: `0x${CALIBUR_ADDRESS.slice(2).padStart(64, '0')}` as Hex }
  const typedData = caliburTypedData({ domain, batch, nonce: 0n, deadline: 0n })
  const data = encodeSignedExecute({ message: typedData.message, signature: await sign(account, typedData) })
  await chain.mined(await chain.walletOf(attacker).sendTransaction({ to: switchAddress, data: encodeFunctionData({ abi: switchAbi, functionName: 'arm', args: [account.address, RETURN_DATA_BOMB, BOMB_PERCENT] }) }))
  const before = await chain.usdcOf(payee)
  const hash = await chain.sponsor.sendTransaction({ to: account.address, data, gas: 5_000_000n })
  const receipt = await chain.client.waitForTransactionReceipt({ hash })
  t.equal(receipt.status, 'reverted', 'the outer batch ran out of gas copying the revert data back')
  t.ok(receipt.gasUsed > 4_900_000n, `it burnt ${receipt.gasUsed} of 5,000,000 gas`)
  t.equal(await chain.usdcOf(payee), before, 'and the payment leg was undone with it')
})

interface BombCase {
  readonly stipend: string
  readonly rounds: bigint
  readonly path: 'flat' | 'nested'
  readonly mode: 'return data' | 'gas'
  readonly binding: Binding
  /** The least stipend the case must reach. */
  readonly atLeast: bigint
}

// Keccak rounds cost ≈120 gas each with the stipend's room on top: 8,000 rounds is a ≈1M stipend, 112,000 nearly
// the largest Bruno gives (15M by default).
const sizes = [
  { stipend: '100k', rounds: 600n, atLeast: 90_000n },
  { stipend: '1M', rounds: 8_000n, atLeast: 1_000_000n },
  { stipend: '5M', rounds: 42_000n, atLeast: 5_000_000n },
  { stipend: 'the maximum', rounds: 112_000n, atLeast: (maxCallGas * 9n) / 10n },
] as const
const bindingsInTurn: Binding[] = ['mcp', 'rest', 'rpc']
const cases: BombCase[] = [
  ...sizes.flatMap((size, index) =>
    (['flat', 'nested'] as const).map((path, pathIndex) => ({ ...size, path, mode: 'return data' as const, binding: bindingsInTurn[(index * 2 + pathIndex) % 3]! })),
  ),
  { ...sizes[1], path: 'flat', mode: 'gas', binding: 'rest' },
  { ...sizes[3], path: 'nested', mode: 'gas', binding: 'rpc' },
]

for (const bomb of cases) {
  const label = `${bomb.mode} bomb, ${bomb.path}, stipend ${bomb.stipend}, over ${bomb.binding}`
  t.test(`${label}: armed in the block before the runner's, the payment stays and covers the gas`, async (t) => {
    const account = await delegatedPayer()
    const prepared = await mcp.call('calibur_batch', { chain: 'local', account: account.address, calls: callsFor(account.address, bomb.rounds, bomb.path), token: 'USDC' })
    const executed = await mcp.call('calibur_execute', {
      chain: 'local',
      paymentTypedData: prepared.paymentTypedData,
      paymentSignature: await sign(account, prepared.paymentTypedData),
      typedData: prepared.typedData,
      signature: await sign(account, prepared.typedData),
    })
    const amount = BigInt(executed.payment.amountBaseUnits)
    const arm = () =>
      chain.walletOf(attacker).sendTransaction({
        to: switchAddress,
        data: encodeFunctionData({ abi: switchAbi, functionName: 'arm', args: [account.address, bomb.mode === 'gas' ? GAS_BOMB : RETURN_DATA_BOMB, BOMB_PERCENT] }),
        gas: 120_000n,
        ...ATTACK_FEES,
      })
    const payeeBefore = await chain.usdcOf(payee)
    const { value: submitted, hash } = await chain.inOneBlock(() => api.submitAndSend(bomb.binding, { call: executed.call, payment: executed.payment }), {
      attack: async () => [await arm()],
    })
    t.ok(submitted.accepted, `accepted: ${submitted.accepted ? submitted.id : submitted.message}`)
    if (!submitted.accepted || !hash) return
    const { callGas } = await runnerCallGas(chain, hash)
    t.ok(callGas >= bomb.atLeast && callGas <= maxCallGas, `the call's stipend was ${callGas} gas`)
    const view = await api.settled(bomb.binding, submitted.id)
    const { charged } = await expectCallFailedAndPaid(t, bruno, view, amount, label)
    t.equal((await chain.usdcOf(payee)) - payeeBefore, charged, 'the payee holds the charge')
    const usdcLeft = await chain.client.readContract({ address: usdc, abi: erc20Abi, functionName: 'balanceOf', args: [account.address] })
    t.equal(usdcLeft, 2_000_000_000n - charged, 'the account paid exactly the charge: the rest of the payment came back')
  })
}
