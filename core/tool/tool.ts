import type { Static, TObject } from '@sinclair/typebox'
import type { PromptDefinition } from './prompt.ts'
import type { Delegate } from '../relay/delegate.ts'
import type { ResourceDefinition, ResourceTemplateDefinition } from './resource.ts'
import type { BrunoServices } from '../services.ts'
import type { ToolTaskSupport } from './task.ts'

/**
 * What a tool handler may use of core: the services a group's `setup` receives (core/plugin.ts),
 * and who asked (`client`: the caller's address as the transport sees it). Handlers stay thin:
 * parse, call core, shape the result.
 */
export type ToolContext = BrunoServices & {
  readonly client?: string
  /** The origin the request reached Bruno at (`http://127.0.0.1:3000`): where a view sends the user's browser. */
  readonly origin?: string
}

/**
 * An MCP Apps view (`io.modelcontextprotocol/ui`) a host shows the tool's result in, and who may
 * call the tool: `['app']` for a tool only a view calls, kept out of the model's context and out
 * of `tools/list` for a client that does not declare the extension.
 */
export interface ToolUi {
  /** A view of core/ui/views.ts (`ui://bruno/…`). */
  readonly resourceUri: string
  readonly visibility?: readonly ['app']
}

/** Behaviour hints published with a tool (MCP `ToolAnnotations`). */
export interface ToolAnnotations {
  readonly readOnlyHint?: boolean
  readonly destructiveHint?: boolean
  readonly idempotentHint?: boolean
  readonly openWorldHint?: boolean
}

/**
 * One tool: a TypeBox input schema (which validates the arguments and is the published
 * `inputSchema`), a TypeBox output schema (the published `outputSchema`) and a handler.
 *
 * @example
 * const ping = defineTool({
 *   name: 'ping', description: 'Answers pong.',
 *   input: Type.Object({}, { additionalProperties: false }),
 *   output: Type.Object({ pong: Type.Boolean() }, { additionalProperties: false }),
 *   handler: async () => ({ pong: true }),
 * })
 */
export interface ToolDefinition<I extends TObject = TObject, O extends TObject = TObject> {
  readonly name: string
  readonly title?: string
  readonly description: string
  readonly input: I
  readonly output: O
  readonly annotations?: ToolAnnotations
  readonly handler: (args: Static<I>, context: ToolContext) => Promise<Static<O>>
  /** The view a host that declares MCP Apps shows the result in; published as `_meta.ui`. */
  readonly ui?: ToolUi
  /** Work that goes on after the answer: a caller declaring the Tasks extension gets a task to poll. */
  readonly task?: ToolTaskSupport<Static<O>>
}

/** Identity with inference: lets a tool's handler see its own argument and result types. */
export function defineTool<I extends TObject, O extends TObject>(tool: ToolDefinition<I, O>): ToolDefinition<I, O> {
  return tool
}

/**
 * A group of tools, contributed by one plugin. `order` fixes where the group's tools stand in
 * every `tools/list`, whatever order a path names the groups in.
 */
export interface GroupDefinition {
  readonly name: string
  readonly order: number
  readonly instructions: string
  // Tools differ in their schemas; the registry only needs their common shape.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  readonly tools: readonly ToolDefinition<any, any>[]
  /** Workflows a user picks (MCP prompts), listed where the group and the prompt's `requires` are served. */
  readonly prompts?: readonly PromptDefinition[]
  readonly resources?: readonly ResourceDefinition[]
  readonly resourceTemplates?: readonly ResourceTemplateDefinition[]
  /** A delegate group's delegate: with it, the relay accepts its signed batches as payment, `account` names it, and the relay's texts name its tools. */
  readonly delegate?: Delegate
}

/**
 * A refusal the caller can act on (bad amount, unknown token, short payment): it becomes a tool
 * result with `isError: true` and this message, never a JSON-RPC error.
 */
export class ToolError extends Error {
  override readonly name = 'ToolError'
}
