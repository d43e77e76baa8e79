import { Type, type Static } from '@sinclair/typebox'
import { erc20Abi, formatUnits, getAddress, isAddress, isAddressEqual, type Address, type Hex } from 'viem'
import { requireAddress, requireToken } from '../chain/arguments.ts'
import type { Network } from '../chain/networks.ts'
import { encodeApprove } from '../chain/erc20Calls.ts'
import { Address as AddressSchema, HexData, type Approval, type Call } from '../tool/schemas.ts'
import type { NetworkDirectory, PaymentServices } from '../services.ts'
import { ToolError } from '../tool/tool.ts'
import type { PaymentToken } from '../charge/gasPricer.ts'

// Fields of a builder's transactionRequest that mean nothing inside a batch: the account's own
// call carries no gas, fee, nonce or sender of its own. Accepted as they come (the body limit
// bounds them), so a builder's output can be passed as it is, and ignored.
const Ignored = Type.Optional(Type.Unknown())

/**
 * One of the account's calls as a delegate group's batch tool takes it: a helper's `Call`, or a
 * builder's transactionRequest as it comes (its gas, fee, nonce and sender ignored).
 */
export const BatchCall = Type.Object(
  {
    to: AddressSchema,
    value: Type.Optional(Type.String({ pattern: '^(0x[0-9a-fA-F]{1,64}|[0-9]{1,78})$', description: 'wei, decimal or 0x-hex (default 0)' })),
    data: Type.Optional(HexData),
    chainId: Type.Optional(Type.Union([Type.Integer({ minimum: 0 }), Type.String({ pattern: '^(0x[0-9a-fA-F]{1,16}|[0-9]{1,20})$' })])),
    gas: Ignored,
    gasLimit: Ignored,
    gasPrice: Ignored,
    maxFeePerGas: Ignored,
    maxPriorityFeePerGas: Ignored,
    from: Ignored,
    nonce: Ignored,
    type: Ignored,
  },
  { additionalProperties: false },
)

/** What a delegate group's batch tool is asked for first: the chain, the account and the token to pay in. */
export interface BatchPartiesRequest {
  readonly chain: string
  readonly account: string
  readonly token: string
}

/**
 * Who a delegate batch involves, read from its tool's arguments in this order (the first refusal
 * wins): the chain (the schema admits only configured names), the account (`requireAddress`), the
 * payment token (a `ToolError` naming the accepted ones), and the payee the payment goes to.
 *
 * @example
 * const { network, account, token, payee } = readBatchParties(args, services)
 */
export function readBatchParties(
  args: BatchPartiesRequest,
  services: { readonly networks: NetworkDirectory; readonly payment: PaymentServices },
): { network: Network; account: Address; token: PaymentToken; payee: Address } {
  const network = services.networks.get(args.chain)
  const account = requireAddress(args.account, 'account')
  const token = services.payment.token(network.name, args.token)
  return { network, account, token, payee: getAddress(network.config.payee) }
}

/** An approval as a batch tool takes it: the token by address or configured symbol. */
export interface ApprovalInput {
  readonly token: string
  readonly spender: string
  readonly amountBaseUnits: string
}

/**
 * The account's calls as its batch runs them: each for this chain (a builder's `chainId`, if any,
 * must be the network's), `to` checksummed, `value` in decimal wei, `data` `0x` when absent.
 *
 * @example
 * readBatchCalls(network, [{ to: router, data: swap, value: '0x0', gas: '0x5208' }]) // [{ to: router, value: '0', data: swap }]
 */
export function readBatchCalls(network: Network, calls: readonly Static<typeof BatchCall>[]): Call[] {
  const { config } = network
  return calls.map((call, index) => {
    if (call.chainId !== undefined && chainIdOf(call.chainId) !== config.chainId) {
      throw new ToolError(`calls[${index}] is for chain ${chainIdOf(call.chainId)}, not ${config.name} (${config.chainId}): ask the builder for this chain`)
    }
    return { to: requireAddress(call.to, `calls[${index}].to`), value: call.value === undefined ? '0' : BigInt(call.value).toString(), data: (call.data ?? '0x') as Hex }
  })
}

/**
 * The approvals the account's calls need and lack: an `approve` call for each whose allowance is
 * short now, and what they are, for the summary.
 *
 * @example
 * await approvalsToAdd(network, account, [{ token: 'USDC', spender: router, amountBaseUnits: '5000000' }])
 * // { added: [{ token: usdc, spender: router, amountBaseUnits: '5000000' }], calls: [approve] }
 */
export async function approvalsToAdd(network: Network, account: Address, approvals: readonly ApprovalInput[] | undefined): Promise<{ added: Approval[]; calls: Call[] }> {
  const wanted = (approvals ?? []).map((approval, index) => ({
    // An address keeps its checksum check; a symbol is the configured token's.
    token: isAddress(approval.token, { strict: false }) ? requireAddress(approval.token, `approvals[${index}].token`) : requireToken(network.config, approval.token).address,
    spender: requireAddress(approval.spender, `approvals[${index}].spender`),
    amount: BigInt(approval.amountBaseUnits),
  }))
  const allowances = await Promise.all(
    wanted.map((approval) => network.client.readContract({ address: approval.token, abi: erc20Abi, functionName: 'allowance', args: [account, approval.spender] })),
  )
  const added: Approval[] = []
  const calls: Call[] = []
  wanted.forEach((approval, index) => {
    if (allowances[index]! >= approval.amount) return
    added.push({ token: approval.token, spender: approval.spender, amountBaseUnits: approval.amount.toString() })
    calls.push(encodeApprove(approval))
  })
  return { added, calls }
}

/**
 * The approvals a batch adds, in words: each spender and amount (whole units of a configured token).
 *
 * @example
 * describeApprovals(network, added) // 'approve 0x68b3…Fc45 for 5 USDC'
 */
export function describeApprovals(network: Network, added: readonly Approval[]): string {
  if (added.length === 0) return 'none needed'
  return added
    .map((approval) => {
      const configured = network.config.tokens.find((token) => isAddressEqual(getAddress(token.address), getAddress(approval.token)))
      const amount = configured
        ? `${formatUnits(BigInt(approval.amountBaseUnits), configured.decimals)} ${configured.symbol}`
        : `${approval.amountBaseUnits} base units of ${approval.token}`
      return `approve ${shortAddress(approval.spender as Address)} for ${amount}`
    })
    .join('; ')
}

/**
 * An address as a summary shows it: its first and last four hex digits.
 *
 * @example
 * shortAddress('0x68b3465833fb72A70ecDF485E0e4C7bD8665Fc45') // '0x68b3…Fc45'
 */
export function shortAddress(address: Address): string {
  return `${address.slice(0, 6)}…${address.slice(-4)}`
}

function chainIdOf(value: number | string): number {
  return typeof value === 'number' ? value : Number(BigInt(value))
}
