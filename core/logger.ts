import pino, { type DestinationStream, type Logger, type LoggerOptions } from 'pino'
import { secretRedactor } from './redaction.ts'

export interface LoggerSettings {
  readonly level?: LoggerOptions['level']
  /** Values that must never reach a log line (RPC URLs, keys): replaced wherever they appear. */
  readonly secrets: readonly string[]
  readonly destination?: DestinationStream
}

/**
 * Bruno's pino logger. Every serialized line passes through a scrubber (`secretRedactor`), so a
 * secret that slips into an error message, a stack or an upstream reply is redacted wherever it
 * sits in the line, in any letter case.
 *
 * @example
 * const log = createLogger({ secrets: [process.env.BASE_RPC!] })
 */
export function createLogger(settings: LoggerSettings): Logger {
  const scrub = secretRedactor(settings.secrets)
  const options: LoggerOptions = {
    level: settings.level ?? 'info',
    base: { service: 'bruno' },
    hooks: { streamWrite: scrub },
  }
  return settings.destination ? pino(options, settings.destination) : pino(options)
}

/** How long a log line may wait in the buffer before it is written. */
const FLUSH_EVERY_MS = 1_000

/**
 * The log file descriptor (stderr by default) behind a 4 KiB buffer: a busy server writes its log
 * in a few large writes instead of one system call per line, and a quiet one still shows each line
 * within a second. `flushSync()` before exiting writes the rest.
 *
 * @example
 * const destination = bufferedLogDestination()
 * const logger = createLogger({ secrets, destination })
 * process.on('exit', () => destination.flushSync())
 */
export function bufferedLogDestination(dest: number | string = 2) {
  const destination = pino.destination({ dest, sync: false, minLength: 4096 })
  setInterval(() => destination.flush(), FLUSH_EVERY_MS).unref()
  return destination
}
