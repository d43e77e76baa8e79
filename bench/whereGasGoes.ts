import { getAddress, hexToBytes, serializeTransaction, type Address, type Hex, type PublicClient } from 'viem'
import solady from 'solady'

/** One call frame of a `callTracer` trace. */
interface Frame {
  readonly type: string
  readonly to?: Address
  readonly input: Hex
  readonly gasUsed: Hex
  readonly calls?: readonly Frame[]
}

/** What a frame is, for the table: a role name, and whether its whole subtree is that role (a token's transfer, its proxy's delegatecall inside). */
export type FrameRole = { readonly role: string; readonly whole: boolean }

/** A relay's gas by where it goes, its calldata, and that calldata as an OP-stack chain prices it. */
export interface GasSpent {
  readonly gasUsed: bigint
  /** Gas by role, in the order first met; `intrinsic` first (21,000 and the calldata). */
  readonly roles: readonly (readonly [string, bigint])[]
  /** Gas of some opcodes across every frame (they overlap the roles): storage writes and reads, events, hashing. */
  readonly opcodes: Readonly<Record<'SSTORE' | 'SLOAD' | 'LOG' | 'KECCAK256', bigint>>
  readonly calldata: { readonly bytes: number; readonly zeroBytes: number; readonly gas: bigint }
  /** The signed transaction's size, FastLZ-compressed (Solady's `LibZip.flzCompress`), and OP-stack Fjord's estimated size from it. */
  readonly signedBytes: number
  readonly fastLzBytes: number
  readonly fjordSize: bigint
}

/**
 * Where a mined transaction's gas went, read from anvil's own traces: the call tree (`callTracer`:
 * each frame's gas less its children's, by the role `roleOf` gives it) and the opcode trace (the
 * gas of storage writes and reads, events and hashing). Intrinsic gas is 21,000 and the calldata's
 * (4 per zero byte, 16 per other). The transaction as signed is FastLZ-compressed, and Fjord's
 * estimated size is `max(100, (-42,585,600 + 836,500 × compressed) / 1e6)` (OP-stack's Fjord fee:
 * the L1 data fee is that size times the L1 fee per byte).
 *
 * @example
 * await whereGasGoes(client, hash, (frame) => frame.to === usdc ? { role: 'the payment', whole: true } : undefined)
 */
export async function whereGasGoes(client: PublicClient, hash: Hex, roleOf: (frame: Frame) => FrameRole | undefined): Promise<GasSpent> {
  const [transaction, receipt, tree, steps] = await Promise.all([
    client.getTransaction({ hash }),
    client.getTransactionReceipt({ hash }),
    client.request({ method: 'debug_traceTransaction' as never, params: [hash, { tracer: 'callTracer' }] as never }) as Promise<Frame>,
    client.request({ method: 'debug_traceTransaction' as never, params: [hash, { disableStack: true, disableMemory: true, disableStorage: true }] as never }) as Promise<{ structLogs: { op: string; gasCost: number }[] }>,
  ])
  const input = hexToBytes(transaction.input)
  const zeroBytes = input.filter((byte) => byte === 0).length
  const calldataGas = BigInt(zeroBytes * 4 + (input.length - zeroBytes) * 16)
  const roles = new Map<string, bigint>([['intrinsic: 21,000 and the calldata', 21_000n + calldataGas]])
  const add = (role: string, gas: bigint) => roles.set(role, (roles.get(role) ?? 0n) + gas)
  const walk = (frame: Frame, inherited: string): bigint => {
    const used = BigInt(frame.gasUsed)
    const found = roleOf(frame)
    if (found?.whole) {
      add(found.role, used)
      return used
    }
    const role = found?.role ?? inherited
    const children = (frame.calls ?? []).reduce((sum, child) => sum + walk(child, role), 0n)
    add(role, used - children)
    return used
  }
  // The top frame's gas includes the intrinsic gas: taken out of its own share.
  const top = walk(tree, 'the Runner')
  add(roleOf(tree)?.role ?? 'the Runner', -(21_000n + calldataGas))
  if (top !== receipt.gasUsed) roles.set('(refunds: the trace and the receipt differ by)', receipt.gasUsed - top)
  const opcodes = { SSTORE: 0n, SLOAD: 0n, LOG: 0n, KECCAK256: 0n }
  for (const step of steps.structLogs) {
    const key = step.op.startsWith('LOG') ? 'LOG' : step.op
    if (key in opcodes) opcodes[key as keyof typeof opcodes] += BigInt(step.gasCost)
  }
  const signed = serializeTransaction(
    { ...transaction, data: transaction.input } as never,
    { r: transaction.r, s: transaction.s, yParity: transaction.yParity ?? 0 } as never,
  )
  const fastLzBytes = (solady.LibZip.flzCompress(signed).length - 2) / 2
  const estimated = (-42_585_600n + 836_500n * BigInt(fastLzBytes)) / 1_000_000n
  return {
    gasUsed: receipt.gasUsed,
    roles: [...roles.entries()].filter(([, gas]) => gas !== 0n),
    opcodes,
    calldata: { bytes: input.length, zeroBytes, gas: calldataGas },
    signedBytes: (signed.length - 2) / 2,
    fastLzBytes,
    fjordSize: estimated > 100n ? estimated : 100n,
  }
}

/** `address` checksummed, or `undefined`. */
export const checksummed = (address: string | undefined): Address | undefined => (address ? getAddress(address) : undefined)
