import { BaseError } from 'viem'
import { ChainUnavailableError } from '../chain/guardedTransport.ts'

/** Where a command writes: the process's streams, or a test's buffers. */
export interface CommandIo {
  readonly env: NodeJS.ProcessEnv
  readonly stdout: { write(text: string): unknown }
  readonly stderr: { write(text: string): unknown }
}

/** A `bruno <name>` subcommand: its help text and what it does with the arguments after its name. */
export interface Command {
  readonly name: string
  /** One line for `bruno --help`. */
  readonly summary: string
  /** `bruno <name> --help`: every flag. */
  readonly usage: string
  /** Resolves to the exit code. */
  run(argv: readonly string[], io: CommandIo): Promise<number>
}

/**
 * What went wrong, in words a command may print: the chain guard's own (which names the chain, never
 * its URL), else viem's short message, else the error's.
 *
 * @example
 * commandFailure(error) // 'chain "base" is unavailable: the RPC timed out'
 */
export function commandFailure(error: unknown): string {
  for (let cause: unknown = error; cause instanceof Error; cause = cause.cause) {
    if (cause instanceof ChainUnavailableError) return cause.message
  }
  if (error instanceof BaseError) return error.shortMessage
  return error instanceof Error ? error.message : String(error)
}
