import pino, { type DestinationStream, type Logger, type LoggerOptions } from 'pino'

export interface LoggerSettings {
  readonly level?: LoggerOptions['level']
  /** Values that must never reach a log line (RPC URLs, keys): replaced wherever they appear. */
  readonly secrets: readonly string[]
  readonly destination?: DestinationStream
}

/**
 * Bruno's pino logger. Every serialized line passes through a scrubber, so a secret that slips
 * into an error message, a stack or an upstream reply is redacted wherever it sits in the line.
 *
 * @example
 * const log = createLogger({ secrets: [process.env.BASE_RPC!] })
 */
export function createLogger(settings: LoggerSettings): Logger {
  const secrets = settings.secrets.filter((secret) => secret.length >= 8)
  const scrub = (line: string): string => secrets.reduce((text, secret) => text.split(secret).join('[redacted]'), line)
  const options: LoggerOptions = {
    level: settings.level ?? 'info',
    base: { service: 'bruno' },
    hooks: { streamWrite: secrets.length === 0 ? (line) => line : scrub },
    redact: { paths: ['req.headers.authorization', 'privateKey', '*.privateKey'], censor: '[redacted]' },
  }
  return settings.destination ? pino(options, settings.destination) : pino(options)
}
