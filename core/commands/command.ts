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
