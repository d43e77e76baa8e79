import { parseArgs, type ParseArgsConfig } from 'node:util'
import { BaseError } from 'viem'
import { nearest } from '../../config/suggest.ts'
import { ChainUnavailableError } from '../chain/guardedTransport.ts'
import { FlagError } from './serveFlags.ts'

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

/**
 * `parseArgs` for `command`'s flags (strict), its refusals as a `FlagError` in Bruno's words: an
 * unknown flag names the nearest known one (`--confg`: did you mean --config?), a flag missing its
 * value or a stray argument says so, each pointing at `--help`.
 *
 * @example
 * parseFlags('bruno', { args: ['--confg', 'x'], options: { config: { type: 'string' } } })
 * // throws FlagError('unknown flag --confg: did you mean --config? (bruno --help lists every flag)')
 */
export function parseFlags<T extends ParseArgsConfig>(command: string, config: T): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs(config)
  } catch (error) {
    const code = (error as { code?: string }).code
    if (typeof code !== 'string' || !code.startsWith('ERR_PARSE_ARGS_')) throw error
    const help = `(${command} --help lists every flag)`
    const unknown = /Unknown option '(-{1,2}[^']+)'/.exec((error as Error).message)?.[1]
    if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && unknown) {
      const known = Object.keys(config.options ?? {})
      const near = nearest(unknown.replace(/^-+/, ''), known)
      throw new FlagError(`unknown flag ${unknown}${near ? `: did you mean --${near}?` : ''} ${help}`)
    }
    const missing = /Option '(-{1,2}[^' ]+)[^']*' argument missing/.exec((error as Error).message)?.[1]
    if (missing) throw new FlagError(`${missing} needs a value ${help}`)
    throw new FlagError(`${(error as Error).message.split('.')[0]} ${help}`)
  }
}
