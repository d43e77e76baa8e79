import type { ToolContext } from './tool.ts'

/**
 * Candidate values for an argument being typed, given the arguments already chosen (e.g. the
 * tokens of the chosen chain). Core keeps those that start with what was typed, in this order.
 */
export type Completer = (context: ToolContext, chosen: Readonly<Record<string, string>>) => readonly string[]

/** One argument of a prompt, as `prompts/list` publishes it; `complete` serves `completion/complete`. */
export interface PromptArgumentDefinition {
  readonly name: string
  readonly title?: string
  readonly description: string
  readonly required?: boolean
  readonly complete?: Completer
}

/**
 * A user-invoked workflow (MCP prompt): its text walks the agent through a group's tools in order.
 * `requires` names the other groups whose tools the text uses: a path that does not serve them all
 * does not list the prompt, so a prompt never names a tool the path lacks.
 *
 * @example
 * const hello = definePrompt({
 *   name: 'hello', description: 'Greets a chain.',
 *   arguments: [{ name: 'chain', description: 'a network', required: true, complete: completeChain }],
 *   render: ({ chain }) => `Say hello to ${chain}.`,
 * })
 */
export interface PromptDefinition {
  readonly name: string
  readonly title?: string
  readonly description: string
  readonly requires?: readonly string[]
  readonly arguments: readonly PromptArgumentDefinition[]
  /** The text of the prompt's one user message; throws `PromptArgumentError` for an argument it refuses. */
  readonly render: (args: Readonly<Record<string, string>>, context: ToolContext) => string
}

/** Identity, for symmetry with `defineTool`: a prompt's definition stays a plain object. */
export function definePrompt(prompt: PromptDefinition): PromptDefinition {
  return prompt
}

/** An argument a prompt refuses (an unknown chain, a token the chain does not have): JSON-RPC -32602. */
export class PromptArgumentError extends Error {
  override readonly name = 'PromptArgumentError'
}
