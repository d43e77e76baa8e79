import t from 'tap'
import {
  type Address,
  BaseError,
  type Hex,
  type SignedAuthorizationList,
  createPublicClient,
  createWalletClient,
  decodeErrorResult,
  encodeAbiParameters,
  encodeFunctionData,
  erc20Abi,
  http,
  parseEventLogs,
  parseSignature,
  parseUnits,
  toHex,
  zeroAddress,
  zeroHash,
} from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { foundry } from 'viem/chains'
import { caliburCompatibleAbi, runnerAbi } from '../contracts/abi.ts'
import { startAnvil } from '../core/devnet/anvil.ts'
import { deployDevnet } from '../core/devnet/deploy.ts'

const anvil = await startAnvil()
t.teardown(() => anvil.stop())
const devnet = await deployDevnet(anvil.rpcUrl)
const transport = http(anvil.rpcUrl)
const chain = { ...foundry, id: devnet.chainId }
const client = createPublicClient({ chain, transport, pollingInterval: 50 })
const operator = createWalletClient({ account: privateKeyToAccount(devnet.runner.operator.privateKey), chain, transport })
const runner = devnet.runner.contract
// anvil #9, the devnet config's payee.
const payee = '0xa0Ee7A142d267C1f36714E4a8F75612F20a79720'
const demoAccount = (index: number) => {
  const demo = devnet.demoAccounts[index]
  if (!demo) throw new Error(`the devnet has no demo account #${index + 1}`)
  return privateKeyToAccount(demo.privateKey)
}
// #1 delegates to Calibur in the first relay; #2 only ever signs USDC transfers.
const delegated = demoAccount(0)
const usdcOnly = demoAccount(1)

const usdcBalance = (address: Address) =>
  client.readContract({ address: devnet.usdc, abi: erc20Abi, functionName: 'balanceOf', args: [address] })

type Request = { from: Address; data: Hex; authorizationList?: SignedAuthorizationList }

// The full revert data of a simulated call, or undefined when it succeeds.
async function revertData({ from, data, authorizationList }: Request): Promise<Hex | undefined> {
  try {
    await client.call({ account: from, to: runner, data, ...(authorizationList ? { authorizationList } : {}) })
    return undefined
  } catch (error) {
    if (!(error instanceof BaseError)) throw error
    const withData = error.walk((inner) => typeof (inner as { data?: unknown }).data === 'string') as {
      data?: Hex
    } | null
    if (!withData?.data) throw error
    return withData.data
  }
}

const runnerError = (data: Hex | undefined) => {
  if (data === undefined) return undefined
  const { errorName, args } = decodeErrorResult({ abi: runnerAbi, data })
  return { errorName, args }
}

// Sends from the operator only what simulates cleanly: the runner's ETH is never spent on a revert.
async function send(request: Omit<Request, 'from'>) {
  const failure = await revertData({ ...request, from: operator.account.address })
  if (failure !== undefined) throw new Error(`would revert: ${failure}`)
  const { data, authorizationList } = request
  const hash = await operator.sendTransaction({ to: runner, data, ...(authorizationList ? { authorizationList } : {}) })
  const receipt = await client.waitForTransactionReceipt({ hash })
  if (receipt.status !== 'success') throw new Error(`reverted: ${hash}`)
  return receipt
}

// A Calibur batch the delegated account signs: the typed data a wallet would be shown, built from the
// domain's facts (the account has no code yet to read eip712Domain() from).
async function signedBatch(calls: { to: Address; value: bigint; data: Hex }[], nonce: bigint) {
  const message = {
    batchedCall: { calls, revertOnFailure: true },
    nonce,
    keyHash: zeroHash,
    executor: zeroAddress,
    deadline: 0n,
  }
  const signature = await delegated.signTypedData({
    domain: {
      name: 'Calibur',
      version: '1.0.0',
      chainId: devnet.chainId,
      verifyingContract: delegated.address,
      salt: toHex(BigInt(devnet.calibur), { size: 32 }),
    },
    types: {
      SignedBatchedCall: [
        { name: 'batchedCall', type: 'BatchedCall' },
        { name: 'nonce', type: 'uint256' },
        { name: 'keyHash', type: 'bytes32' },
        { name: 'executor', type: 'address' },
        { name: 'deadline', type: 'uint256' },
      ],
      BatchedCall: [
        { name: 'calls', type: 'Call[]' },
        { name: 'revertOnFailure', type: 'bool' },
      ],
      Call: [
        { name: 'to', type: 'address' },
        { name: 'value', type: 'uint256' },
        { name: 'data', type: 'bytes' },
      ],
    },
    primaryType: 'SignedBatchedCall',
    message,
  })
  const wrapped = encodeAbiParameters([{ type: 'bytes' }, { type: 'bytes' }], [signature, '0x'])
  return encodeFunctionData({ abi: caliburCompatibleAbi, functionName: 'execute', args: [message, wrapped] })
}

const usdcTransfer = (to: Address, amount: bigint) => ({
  to: devnet.usdc,
  value: 0n,
  data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [to, amount] }),
})

const relayData = (target: Address, data: Hex, amount: bigint) =>
  encodeFunctionData({ abi: runnerAbi, functionName: 'relay', args: [target, data, devnet.usdc, payee, amount] })

t.test('the devnet deploys the Runner for anvil #4 and places the delegate at Calibur\'s address', async (t) => {
  t.equal(devnet.runner.operator.address, '0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65')
  t.equal(
    await client.readContract({ address: runner, abi: runnerAbi, functionName: 'operator' }),
    devnet.runner.operator.address,
  )
  t.equal(devnet.calibur, '0x000000005c84F8Fd50b21CAC312528A64437030e')
  t.ok(((await client.getCode({ address: devnet.calibur })) ?? '0x').length > 2, 'Calibur\'s address has code')
})

t.test('only the operator may relay', async (t) => {
  const data = relayData(zeroAddress, '0x', 0n)
  t.same(runnerError(await revertData({ from: usdcOnly.address, data })), { errorName: 'NotOperator', args: undefined })
  t.equal(await revertData({ from: operator.account.address, data }), undefined)
})

const fee = parseUnits('1.5', 6)

t.test('relay: a Calibur batch that pays the payee in USDC, delegated in the same transaction', async (t) => {
  const authorization = await operator.signAuthorization({ account: delegated, contractAddress: devnet.calibur })
  const authorizationList = [authorization]
  const spender = '0x2222222222222222222222222222222222222222'
  const approve = {
    to: devnet.usdc,
    value: 0n,
    data: encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [spender, 1000n] }),
  }
  const execute = await signedBatch([approve, usdcTransfer(payee, fee)], 0n)

  // Asking for one unit more than the batch pays fails the whole transaction, in simulation.
  t.same(
    runnerError(
      await revertData({
        from: operator.account.address,
        data: relayData(delegated.address, execute, fee + 1n),
        authorizationList,
      }),
    ),
    { errorName: 'PaymentShort', args: [fee, fee + 1n] },
  )

  const payeeBefore = await usdcBalance(payee)
  const receipt = await send({ data: relayData(delegated.address, execute, fee), authorizationList })
  t.comment(`gas: relay of a 2-call Calibur batch with its 7702 delegation, ${receipt.gasUsed}`)
  t.equal(await usdcBalance(payee), payeeBefore + fee)
  t.equal(
    await client.readContract({
      address: devnet.usdc,
      abi: erc20Abi,
      functionName: 'allowance',
      args: [delegated.address, spender],
    }),
    1000n,
  )
  t.equal(
    await client.getCode({ address: delegated.address }),
    `0xef0100${devnet.calibur.slice(2).toLowerCase()}`,
  )
  const [relayed] = parseEventLogs({ abi: runnerAbi, eventName: 'Relayed', logs: receipt.logs })
  t.same(relayed?.args, { target: delegated.address, payee, received: fee })

  // The same batch again: the account refuses the spent nonce, and the Runner passes its reason on.
  const replay = runnerError(
    await revertData({ from: operator.account.address, data: relayData(delegated.address, execute, fee) }),
  )
  t.equal(replay?.errorName, 'CallReverted')
  t.equal((replay?.args as readonly [Hex] | undefined)?.[0], '0x756688fe', 'InvalidNonce()')
})

// A signed EIP-3009 transfer of `value` from the USDC-only account to the payee, as the Runner takes it.
async function authorizationFor(value: bigint) {
  const { timestamp } = await client.getBlock()
  const message = {
    from: usdcOnly.address,
    to: payee as Address,
    value,
    validAfter: 0n,
    validBefore: timestamp + 3600n,
    nonce: toHex(BigInt(generatePrivateKey()), { size: 32 }),
  }
  const signature = await usdcOnly.signTypedData({
    domain: { name: 'USD Coin', version: '2', chainId: devnet.chainId, verifyingContract: devnet.usdc },
    types: {
      TransferWithAuthorization: [
        { name: 'from', type: 'address' },
        { name: 'to', type: 'address' },
        { name: 'value', type: 'uint256' },
        { name: 'validAfter', type: 'uint256' },
        { name: 'validBefore', type: 'uint256' },
        { name: 'nonce', type: 'bytes32' },
      ],
    },
    primaryType: 'TransferWithAuthorization',
    message,
  })
  const { r, s, v } = parseSignature(signature)
  const { to: _payee, ...fields } = message
  return { ...fields, v: Number(v), r, s }
}

const relayWithAuthorizationData = (
  target: Address,
  data: Hex,
  amount: bigint,
  authorization: Awaited<ReturnType<typeof authorizationFor>>,
) =>
  encodeFunctionData({
    abi: runnerAbi,
    functionName: 'relayWithAuthorization',
    args: [target, data, devnet.usdc, payee, amount, authorization],
  })

t.test('relayWithAuthorization: a signed USDC transfer pays, then the call runs', async (t) => {
  const spender = '0x3333333333333333333333333333333333333333'
  const approve = {
    to: devnet.usdc,
    value: 0n,
    data: encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [spender, 7n] }),
  }
  // The call: another batch of the (now delegated) account, which pays nothing itself.
  const execute = await signedBatch([approve], 1n)
  const authorization = await authorizationFor(fee)

  t.same(
    runnerError(
      await revertData({
        from: operator.account.address,
        data: relayWithAuthorizationData(delegated.address, execute, fee + 1n, authorization),
      }),
    ),
    { errorName: 'PaymentShort', args: [fee, fee + 1n] },
    'the transfer counts toward the amount, and no more',
  )

  const [payeeBefore, fromBefore] = [await usdcBalance(payee), await usdcBalance(usdcOnly.address)]
  const receipt = await send({ data: relayWithAuthorizationData(delegated.address, execute, fee, authorization) })
  t.comment(`gas: relayWithAuthorization (3009 transfer + 1-call Calibur batch), ${receipt.gasUsed}`)
  t.equal(await usdcBalance(payee), payeeBefore + fee)
  t.equal(await usdcBalance(usdcOnly.address), fromBefore - fee)
  t.equal(
    await client.readContract({
      address: devnet.usdc,
      abi: erc20Abi,
      functionName: 'allowance',
      args: [delegated.address, spender],
    }),
    7n,
  )
  const [relayed] = parseEventLogs({ abi: runnerAbi, eventName: 'Relayed', logs: receipt.logs })
  t.same(relayed?.args, { target: delegated.address, payee, received: fee })

  // The authorization is single-use: the token's own reason comes back unchanged.
  const reused = await revertData({
    from: operator.account.address,
    data: relayWithAuthorizationData(zeroAddress, '0x', fee, authorization),
  })
  t.equal(reused?.slice(0, 10), '0x08c379a0', 'Error(string) from FiatToken')
})

t.test('relayWithAuthorization with no target: the payment alone', async (t) => {
  const authorization = await authorizationFor(fee)
  const payeeBefore = await usdcBalance(payee)
  const receipt = await send({ data: relayWithAuthorizationData(zeroAddress, '0x', fee, authorization) })
  t.comment(`gas: relayWithAuthorization, payment only, ${receipt.gasUsed}`)
  t.equal(await usdcBalance(payee), payeeBefore + fee)
})
