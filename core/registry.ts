import type { TObject } from '@sinclair/typebox'
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler'
import { checkPromptsAndResources, composePromptsAndResources, type PromptsAndResources } from './promptsAndResources.ts'
import type { GroupDefinition, ToolDefinition } from './tool.ts'

const MAX_REMEMBERED_PATHS = 256

const TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/

/** A tool as the dispatcher uses it: its definition, a compiled argument check, its listing. */
export interface RegisteredTool {
  readonly group: string
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  readonly definition: ToolDefinition<any, any>
  readonly check: TypeCheck<TObject>
  /** The `Tool` object of `tools/list`, as published. */
  readonly listing: ToolListing
}

export interface ToolListing {
  readonly name: string
  readonly title?: string
  readonly description: string
  readonly inputSchema: unknown
  readonly outputSchema: unknown
  readonly annotations?: unknown
}

/** What one MCP path serves: its groups, in the fixed group order, and what they compose. */
export interface RegistryView extends PromptsAndResources {
  /** The canonical group list, e.g. `erc20,uniswap`. */
  readonly key: string
  readonly groups: readonly GroupDefinition[]
  readonly tools: ReadonlyMap<string, RegisteredTool>
  /** `tools/list`'s `tools` array, serialized once. */
  readonly toolsJson: string
  readonly instructions: string
}

const PREAMBLE =
  'Bruno relays an agent account\'s on-chain calls: the account pays for its own call in a token (USDC) inside the ' +
  'transaction Bruno sends, and Bruno never holds a key. A wallet signs what these tools prepare.'

/**
 * The groups a deployment serves and their tools. Groups register once at start; a path's view
 * (its tool map, its serialized `tools/list`, its instructions) is computed on first use and kept.
 */
export class ToolRegistry {
  readonly #groups = new Map<string, GroupDefinition>()
  readonly #tools = new Map<string, RegisteredTool>()
  readonly #views = new Map<string, RegistryView>()
  readonly #byPath = new Map<string, RegistryView>()

  /** Adds a group; refuses a duplicate group name or order, a clashing or malformed tool name, an open schema. */
  addGroup(group: GroupDefinition): void {
    if (this.#groups.has(group.name)) throw new Error(`group "${group.name}" is registered twice`)
    for (const other of this.#groups.values()) {
      if (other.order === group.order) throw new Error(`group "${group.name}" has the order of group "${other.name}" (${group.order})`)
    }
    const added = group.tools.map((tool) => registerTool(group.name, tool))
    for (const tool of added) {
      const clash = this.#tools.get(tool.definition.name)
      if (clash) throw new Error(`group "${group.name}": tool "${tool.definition.name}" is already registered by group "${clash.group}"`)
    }
    checkPromptsAndResources(group, this.#groups.values())
    this.#groups.set(group.name, group)
    for (const tool of added) this.#tools.set(tool.definition.name, tool)
    this.#views.clear()
    this.#byPath.clear()
  }

  /** The names of the registered groups, in their fixed order. */
  get groupNames(): string[] {
    return this.#ordered([...this.#groups.keys()]).map((group) => group.name)
  }

  /**
   * The view for a path's group list (`undefined` = every group). Unknown group: `undefined`.
   *
   * @example
   * registry.view(['uniswap', 'erc20'])?.key // 'erc20,uniswap'
   */
  view(names?: readonly string[]): RegistryView | undefined {
    const wanted = names ?? [...this.#groups.keys()]
    if (wanted.length === 0 || wanted.some((name) => !this.#groups.has(name))) return undefined
    const groups = this.#ordered(wanted)
    const key = groups.map((group) => group.name).join(',')
    let view = this.#views.get(key)
    if (!view) {
      view = composeView(key, groups, this.#tools)
      this.#views.set(key, view)
    }
    return view
  }

  /**
   * The view for an MCP path's group segment as it was written (`undefined` for `/mcp`): the
   * same as `view`, remembered by the raw text so a request costs one map lookup.
   */
  viewOfPath(segment?: string): RegistryView | undefined {
    const key = segment ?? ''
    const known = this.#byPath.get(key)
    if (known) return known
    const view = this.view(segment === undefined ? undefined : segment.split(','))
    // Only paths that name real groups are remembered, and only so many: spellings are endless.
    if (view && this.#byPath.size < MAX_REMEMBERED_PATHS) this.#byPath.set(key, view)
    return view
  }

  #ordered(names: readonly string[]): GroupDefinition[] {
    return [...new Set(names)].map((name) => this.#groups.get(name)!).sort((a, b) => a.order - b.order)
  }
}

function composeView(key: string, groups: readonly GroupDefinition[], all: ReadonlyMap<string, RegisteredTool>): RegistryView {
  const tools = new Map<string, RegisteredTool>()
  for (const group of groups) {
    for (const tool of group.tools) tools.set(tool.name, all.get(tool.name)!)
  }
  const instructions = [PREAMBLE, ...groups.map((group) => group.instructions.trim())].join('\n\n')
  return { key, groups, tools, toolsJson: JSON.stringify([...tools.values()].map((tool) => tool.listing)), instructions, ...composePromptsAndResources(groups) }
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function registerTool(group: string, definition: ToolDefinition<any, any>): RegisteredTool {
  if (!TOOL_NAME.test(definition.name)) throw new Error(`group "${group}": tool name "${definition.name}" must match ${TOOL_NAME}`)
  assertClosed(`${definition.name}.input`, definition.input)
  if (definition.output.type !== 'object') throw new Error(`group "${group}": tool "${definition.name}" output must be an object schema`)
  const listing: ToolListing = {
    name: definition.name,
    ...(definition.title ? { title: definition.title } : {}),
    description: definition.description,
    inputSchema: publishedSchema(definition.input),
    outputSchema: publishedSchema(definition.output),
    ...(definition.annotations ? { annotations: definition.annotations } : {}),
  }
  return { group, definition, check: TypeCompiler.Compile(definition.input), listing }
}

/** Every object in an input schema must refuse unknown properties, so a typo is an error, not a no-op. */
function assertClosed(path: string, schema: unknown): void {
  if (typeof schema !== 'object' || schema === null) return
  const node = schema as Record<string, unknown>
  if (node.type === 'object' && node.additionalProperties !== false) throw new Error(`${path}: object schema must set additionalProperties: false`)
  for (const [key, value] of Object.entries(node)) {
    if (Array.isArray(value)) value.forEach((item, index) => assertClosed(`${path}.${key}[${index}]`, item))
    else assertClosed(`${path}.${key}`, value)
  }
}

/** The JSON form of a TypeBox schema: its symbols (TypeBox's kind markers) dropped by the round trip. */
function publishedSchema(schema: TObject): unknown {
  return JSON.parse(JSON.stringify(schema))
}
