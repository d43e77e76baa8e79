import { PromptArgumentError } from '../tool/prompt.ts'
import type { RegistryView } from '../registry.ts'
import type { ToolContext } from '../tool/tool.ts'
import { ErrorCode, JsonRpcError } from '../http/jsonrpc.ts'

/** A `GetPromptResult` before the era adds its own fields. */
export interface PromptResult {
  readonly description: string
  readonly messages: readonly { role: 'user'; content: { type: 'text'; text: string } }[]
}

/**
 * `prompts/get`: checks the arguments (strings, the required ones present, none unknown) and
 * renders the prompt's one user message. An unknown prompt, a prompt outside the path, or an
 * argument the prompt refuses is `-32602`, as the spec asks.
 *
 * @example
 * getPrompt(view, { name: 'swap_to_eth', arguments: { chain: 'base', account: '0x…', amount: '25' } }, context)
 * // { description: '…', messages: [{ role: 'user', content: { type: 'text', text: 'Swap 25 USDC …' } }] }
 */
export function getPrompt(view: RegistryView, params: Record<string, unknown>, context: ToolContext): PromptResult {
  const { name, arguments: given = {} } = params
  if (typeof name !== 'string') throw invalid('"name" must be a string')
  const prompt = view.prompts.get(name)
  if (!prompt) throw invalid(`Unknown prompt: ${name}`)
  if (typeof given !== 'object' || given === null || Array.isArray(given)) throw invalid('"arguments" must be an object')
  const args: Record<string, string> = {}
  for (const [key, value] of Object.entries(given)) {
    if (!prompt.arguments.some((argument) => argument.name === key)) throw invalid(`prompt ${name} has no argument "${key}"`)
    if (typeof value !== 'string') throw invalid(`argument "${key}" must be a string`)
    // An empty field in a client's form means "not given", so a default can apply.
    if (value.trim() !== '') args[key] = value.trim()
  }
  const missing = prompt.arguments.filter((argument) => argument.required && args[argument.name] === undefined).map((argument) => argument.name)
  if (missing.length > 0) throw invalid(`prompt ${name} requires ${missing.map((key) => `"${key}"`).join(', ')}`)
  let text: string
  try {
    text = prompt.render(args, context)
  } catch (error) {
    if (error instanceof PromptArgumentError) throw invalid(error.message)
    throw error
  }
  return { description: prompt.description, messages: [{ role: 'user', content: { type: 'text', text } }] }
}

function invalid(detail: string): JsonRpcError {
  return new JsonRpcError(ErrorCode.InvalidParams, `Invalid params: ${detail}`, 200)
}
