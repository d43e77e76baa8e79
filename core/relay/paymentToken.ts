import { erc20Abi, formatUnits, getAddress, hexToBigInt, keccak256, size, zeroHash, type Address, type Hex } from 'viem'
import { runnerAbi } from '../../contracts/abi.ts'
import { requireToken } from '../chain/arguments.ts'
import type { Network } from '../chain/networks.ts'
import { blameOf } from '../chain/faults.ts'
import { ToolError } from '../tool/tool.ts'
import type { PaymentToken } from '../charge/gasPricer.ts'
import { batchToolNames, delegateBatchTools, type Delegate } from './delegate.ts'
import { DELEGATION_PREFIX } from './delegation7702.ts'
import { PaymentRefusal } from './paymentRefusal.ts'
import { revertData } from './revertReason.ts'
import { walletDeployment } from './walletDeployment.ts'

/**
 * EIP-3009's `authorizationState`: true once `nonce` of `authorizer` was used or cancelled. A token
 * that answers it takes signed transfers (the relay asks before pricing one; the 3009 group reads a
 * payment's nonce with it).
 *
 * @example
 * await client.readContract({ address: usdc, abi: authorizationStateAbi, functionName: 'authorizationState', args: [from, nonce] }) // false
 */
export const authorizationStateAbi = [
  {
    type: 'function',
    name: 'authorizationState',
    stateMutability: 'view',
    inputs: [
      { name: 'authorizer', type: 'address' },
      { name: 'nonce', type: 'bytes32' },
    ],
    outputs: [{ name: '', type: 'bool' }],
  },
] as const

/**
 * A payment token the relay accepts on a network: configured, and priced along a swap path (or
 * WETH itself); else a `ToolError` naming the accepted ones.
 *
 * @example
 * paymentToken(network, 'USDC') // { address: '0x8335…2913', symbol: 'USDC', decimals: 6 }
 */
export function paymentToken(network: Network, token: string): PaymentToken {
  const { config } = network
  const found = requireToken(config, token)
  const weth = getAddress(config.weth)
  if (!found.configured || (!found.configured.swapPath && found.address !== weth)) {
    const accepted = config.tokens.filter((candidate) => candidate.swapPath || getAddress(candidate.address) === weth).map((candidate) => candidate.symbol)
    throw new ToolError(`${token} is not accepted as payment on ${config.name}: pay in one of ${accepted.join(', ')}`)
  }
  return { address: found.address, symbol: found.configured.symbol, decimals: found.configured.decimals }
}

/**
 * Refuses a token that cannot pay by signed transfer (EIP-3009's `transferWithAuthorization`):
 * one that does not answer `authorizationState` (WETH9's fallback takes any call as a deposit and
 * answers nothing). Said before a quote prices a payment the wallet could never sign, naming the
 * forms that can pay. A node that fails the read is the chain's fault, not a refusal.
 *
 * @example
 * await requireSignedTransfers(network, weth, context.delegates) // ToolError: WETH cannot pay by signed transfer on base: …
 */
export async function requireSignedTransfers(network: Network, token: PaymentToken, delegates: readonly Delegate[]): Promise<void> {
  const answered = await network.client
    .readContract({ address: token.address, abi: authorizationStateAbi, functionName: 'authorizationState', args: [getAddress(network.config.payee), zeroHash] })
    .then(
      () => true,
      (error: unknown) => {
        if (blameOf(error).side !== 'caller') throw error
        return false
      },
    )
  if (answered) return
  const others = network.config.tokens.filter((candidate) => getAddress(candidate.address) !== token.address && (candidate.swapPath || getAddress(candidate.address) === getAddress(network.config.weth)))
  throw new ToolError(
    `${token.symbol} cannot pay by signed transfer on ${network.name}: ${token.address} has no EIP-3009 transferWithAuthorization. ` +
      `Pay it with payment "batch" (a delegated account's payment batch transfers ${token.symbol}: ${batchToolNames(delegates) ?? 'no delegate group is enabled on this server'})` +
      (others.length > 0 ? `, or by signed transfer in ${others.map((candidate) => candidate.symbol).join(' or ')} (payment_authorization)` : ''),
  )
}

/**
 * Why a payer with code cannot pay by signed transfer, in the relay's words (the Runner's
 * `PayerHasCode` and the payment tools say the same).
 *
 * @example
 * payerHasCodeWords('0x7099…79C8', [calibur]) // 'the payer 0x7099…79C8 has code (a contract, or an account delegated by EIP-7702) that is not on the Runner's list of wallets: …'
 */
export function payerHasCodeWords(payer: string, delegates: readonly Pick<Delegate, 'name' | 'tools'>[]): string {
  return (
    `the payer ${payer} has code (a contract, or an account delegated by EIP-7702) that is not on the Runner's list of wallets that may pay by signed transfer: ` +
    `the token would run it inside the payment. A signed EIP-3009 transfer must come from a plain account or a listed wallet; a delegated account pays with ${delegateBatchTools(delegates)}`
  )
}

/**
 * Whether the chain's Runner takes signed-transfer payers whose code is `code` (its owner's list,
 * `payerCodeAllowed` by the code's hash). A Runner that has no list (deployed before it) takes none.
 *
 * @example
 * await payerCodeListed(network, '0xef0100…') // true once the owner listed that delegation
 */
export async function payerCodeListed(network: Network, code: Hex): Promise<boolean> {
  return network.client
    .readContract({ address: getAddress(network.config.runner.contract), abi: runnerAbi, functionName: 'payerCodeAllowed', args: [keccak256(code)] })
    .catch((error: unknown) => {
      if (revertData(error) !== undefined) return false
      throw error
    })
}

/**
 * Why an ERC-6492 signature's factory cannot deploy a payer, in the relay's words (the Runner's
 * `WalletFactoryNotAllowed` and submit say the same).
 *
 * @example
 * walletFactoryWords('0x0BA5…428a') // 'the ERC-6492 signature's factory 0x0BA5…428a is not on the Runner's list of wallet factories: …'
 */
export function walletFactoryWords(factory: string): string {
  return (
    `the ERC-6492 signature's factory ${factory} is not on the Runner's list of wallet factories (its owner's walletFactoryAllowed): ` +
    'the Runner deploys a wallet only by a factory whose call deploys the same listed wallet whoever makes it. Deploy the wallet first, then sign again'
  )
}

/**
 * Whether the chain's Runner deploys ERC-6492 payers by `factory` (its owner's list,
 * `walletFactoryAllowed`). A Runner that has no list (deployed before it) deploys none.
 *
 * @example
 * await walletFactoryListed(network, '0x0BA5ED0c6AA8c49038F819E587E2633c4A9F428a') // true once the owner listed it
 */
export async function walletFactoryListed(network: Network, factory: Address): Promise<boolean> {
  return network.client
    .readContract({ address: getAddress(network.config.runner.contract), abi: runnerAbi, functionName: 'walletFactoryAllowed', args: [factory] })
    .catch((error: unknown) => {
      if (revertData(error) !== undefined) return false
      throw error
    })
}

/** Where an ERC-1967 proxy keeps its implementation (`bytes32(uint256(keccak256("eip1967.proxy.implementation")) - 1)`). */
export const ERC1967_IMPLEMENTATION_SLOT = '0x360894a13ba1a3210667c828492db98dca3e2076cc3735a920a3ca505d382bbc'

/**
 * Why a payer with code cannot pay by signed transfer, `undefined` when it can: its code must be on
 * the Runner's list of wallets (`payerCodeListed`), and a listed wallet that is an ERC-1967 proxy
 * (its implementation slot set; an EIP-7702 account's storage is not read) must point at one of the
 * network's `walletImplementations`: a proxy's code is the same whatever it runs, so its hash alone
 * does not say what answers the token's ERC-1271 question.
 *
 * @example
 * await payerWalletRefusal(network, proxy, code, delegates) // 'the payer 0x… is an ERC-1967 proxy whose implementation 0x… is not one of …'
 */
async function payerWalletRefusal(network: Network, payer: Address, code: Hex, delegates: readonly Delegate[]): Promise<string | undefined> {
  if (!(await payerCodeListed(network, code))) return payerHasCodeWords(payer, delegates)
  if (code.toLowerCase().startsWith(DELEGATION_PREFIX)) return undefined
  const slot = await network.client.getStorageAt({ address: payer, slot: ERC1967_IMPLEMENTATION_SLOT })
  if (!slot || hexToBigInt(slot) === 0n) return undefined
  const implementation = getAddress(`0x${slot.slice(-40)}`)
  const known = network.config.walletImplementations.map((address) => getAddress(address))
  if (known.includes(implementation)) return undefined
  return (
    `the payer ${payer} is an ERC-1967 proxy whose implementation ${implementation} is not one this relay knows ` +
    `(${known.length > 0 ? known.join(', ') : 'none is configured'}: the network's walletImplementations): its code on the Runner's list says nothing of what it runs`
  )
}

/**
 * Refuses a signed-transfer payer the Runner would refuse in the payment phase (`PayerHasCode`), or
 * one whose code is a proxy pointing where this relay does not know (`payerWalletRefusal`). A payment
 * tool asks first, before the wallet signs anything that submit could only refuse.
 *
 * @example
 * await requireTransferPayer(network, from, context.delegates) // ToolError: from 0x7099…79C8 cannot pay by signed transfer: the payer … has code …
 */
export async function requireTransferPayer(network: Network, payer: Address, delegates: readonly Delegate[]): Promise<void> {
  const code = await network.client.getCode({ address: payer })
  if (!code || code === '0x') return
  const refusal = await payerWalletRefusal(network, payer, code, delegates)
  if (refusal !== undefined) throw new ToolError(`from ${payer} cannot pay by signed transfer: ${refusal}`)
}

/**
 * Refuses, before the runner transaction is simulated, a signed transfer whose payer and signature
 * the Runner would refuse, in words that name the fix: a payer with code off the Runner's list; an
 * account with no code whose signature is not the 65 bytes its key makes, unless ERC-6492 wraps it
 * with a factory on the Runner's list (which deploys the wallet in the payment phase). Whether the
 * wallet's signature is good only the token can say, in the simulation.
 *
 * @example
 * await requireSignedTransferPayer(network, payer, signature, context.delegates) // PaymentRefusal: … the factory 0x… is not on the Runner's list …
 */
export async function requireSignedTransferPayer(network: Network, payer: Address, signature: Hex, delegates: readonly Delegate[]): Promise<void> {
  const refuse = (why: string) => new PaymentRefusal(`refused: the payment's payer (payment.authorization.from) cannot pay by signed transfer: ${why}`, 'payer')
  const code = await network.client.getCode({ address: payer })
  if (code && code !== '0x') {
    const refusal = await payerWalletRefusal(network, payer, code, delegates)
    if (refusal !== undefined) throw refuse(refusal)
    return
  }
  const deployment = walletDeployment(signature)
  if (deployment) {
    if (!(await walletFactoryListed(network, deployment.factory))) throw refuse(walletFactoryWords(deployment.factory))
    return
  }
  if (size(signature) !== 65) {
    throw new PaymentRefusal(
      `refused: payment.signature is ${size(signature)} bytes, but its payer ${payer} has no code: an account's key signs 65 bytes (r, s, v). ` +
        'A longer signature is a smart wallet\'s: deploy the wallet first, or send the signature its wallet wraps by ERC-6492 with its factory\'s call',
      'signature',
    )
  }
}

/**
 * Why a payment failed when its payer holds less of the token than it transfers: read after a
 * simulation refused it, so that the refusal names the shortfall rather than the token's words
 * ("transfer amount exceeds balance", or WETH9's bare revert); `field` names what set the amount.
 * `undefined` when the payer holds enough (or its balance cannot be read). A payer that holds
 * none is told so without an amount: a batch tool prices its payment leg with a provisional one
 * of one base unit first, which is no figure to quote.
 *
 * @example
 * await payerShortfall(network, usdc, payer, 150_000n, 'payment.authorization.value')
 * // 'the payer 0x… holds 0.1 USDC, less than the 0.15 USDC its payment transfers (payment.authorization.value): fund it with USDC, or pay in another token'
 */
export async function payerShortfall(network: Network, token: PaymentToken, payer: Address, amount: bigint, field?: string): Promise<string | undefined> {
  const balance = await network.client.readContract({ address: token.address, abi: erc20Abi, functionName: 'balanceOf', args: [payer] }).catch(() => undefined)
  if (balance === undefined || balance >= amount) return undefined
  if (balance === 0n) return `the payer ${payer} holds no ${token.symbol}, which its payment transfers${field ? ` (${field})` : ''}: fund it with ${token.symbol}, or pay in another token`
  const [held, needed] = [formatUnits(balance, token.decimals), formatUnits(amount, token.decimals)]
  return `the payer ${payer} holds ${held} ${token.symbol}, less than the ${needed} ${token.symbol} its payment transfers${field ? ` (${field})` : ''}: fund it with ${token.symbol}, or pay in another token`
}
