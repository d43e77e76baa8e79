import type { Completer } from '../tool/prompt.ts'
import type { RegistryView } from '../registry.ts'
import type { ToolContext } from '../tool/tool.ts'
import { ErrorCode, JsonRpcError } from '../http/jsonrpc.ts'

/** The spec's cap on values in one completion. */
export const MAX_VALUES = 100

/** A `CompleteResult`'s `completion`. */
export interface Completion {
  readonly values: readonly string[]
  readonly total: number
  readonly hasMore: boolean
}

/**
 * `completion/complete` for a prompt's argument (`ref/prompt`) or a resource template's variable
 * (`ref/resource`, by its URI template): the argument's candidates that start with what was typed
 * (any case), in the completer's order, at most 100. An argument with no completer has none. A
 * prompt or template this path does not serve is `-32602`.
 *
 * @example
 * complete(view, { ref: { type: 'ref/prompt', name: 'swap_to_eth' }, argument: { name: 'token', value: 'us' },
 *   context: { arguments: { chain: 'base' } } }, context)
 * // { values: ['USDC'], total: 1, hasMore: false }
 */
export function complete(view: RegistryView, params: Record<string, unknown>, context: ToolContext): Completion {
  const { ref, argument, context: given } = params as { ref?: Record<string, unknown>; argument?: Record<string, unknown>; context?: { arguments?: unknown } }
  if (typeof argument?.name !== 'string' || typeof argument.value !== 'string') throw invalid('"argument" must be {name, value} strings')
  const completer = completerFor(view, ref)?.(argument.name)
  if (!completer) return { values: [], total: 0, hasMore: false }
  const chosen = chosenArguments(given?.arguments)
  const typed = argument.value.toLowerCase()
  const matches = completer(context, chosen).filter((candidate) => candidate.toLowerCase().startsWith(typed))
  return { values: matches.slice(0, MAX_VALUES), total: matches.length, hasMore: matches.length > MAX_VALUES }
}

function completerFor(view: RegistryView, ref: Record<string, unknown> | undefined): ((argument: string) => Completer | undefined) | undefined {
  if (ref?.type === 'ref/prompt' && typeof ref.name === 'string') {
    const prompt = view.prompts.get(ref.name)
    if (!prompt) throw invalid(`Unknown prompt: ${ref.name}`)
    return (argument) => prompt.arguments.find((candidate) => candidate.name === argument)?.complete
  }
  if (ref?.type === 'ref/resource' && typeof ref.uri === 'string') {
    const template = view.templates.find((candidate) => candidate.definition.uriTemplate === ref.uri)
    if (!template) throw invalid(`Unknown resource template: ${ref.uri}`)
    return (argument) => template.definition.complete?.[argument]
  }
  throw invalid('"ref" must be {type: "ref/prompt", name} or {type: "ref/resource", uri}')
}

/** The arguments already chosen, keeping only string values (the spec's `context.arguments`). */
function chosenArguments(given: unknown): Record<string, string> {
  if (typeof given !== 'object' || given === null) return {}
  return Object.fromEntries(Object.entries(given).filter((entry): entry is [string, string] => typeof entry[1] === 'string'))
}

function invalid(detail: string): JsonRpcError {
  return new JsonRpcError(ErrorCode.InvalidParams, `Invalid params: ${detail}`, 200)
}
