import type { TObject } from '@sinclair/typebox'
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler'
import { checkPromptsAndResources, composePromptsAndResources, type PromptsAndResources } from './promptsAndResources.ts'
import { PUBLISHED_AS, PUBLISHED_AS_OUTPUT } from './tool/schemas.ts'
import type { GroupDefinition, ToolDefinition } from './tool/tool.ts'
import { viewResource, type ViewResource } from './ui/views.ts'

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
  readonly _meta?: { readonly ui: { readonly resourceUri: string; readonly visibility?: readonly string[] } }
}

/** What one MCP path serves: its groups, in the fixed group order, and what they compose. */
export interface RegistryView extends PromptsAndResources {
  /** The canonical group list, e.g. `erc20,uniswap`. */
  readonly key: string
  readonly groups: readonly GroupDefinition[]
  readonly tools: ReadonlyMap<string, RegisteredTool>
  /** `tools/list`'s `tools` array, serialized once: the tools a model may call. */
  readonly toolsJson: string
  /** The same with the app-only tools (`ui.visibility` `['app']`), for a client that declares MCP Apps. */
  readonly toolsJsonForApps: string
  /** The `ui://` views the path's tools name, by URI: readable, never in `resources/list`. */
  readonly views: ReadonlyMap<string, ViewResource>
  readonly instructions: string
}

const PREAMBLE =
  'Bruno relays an agent account\'s on-chain calls: the account pays for its own call in a token (USDC) inside the ' +
  'transaction Bruno sends, and Bruno never holds a key. A wallet signs what these tools prepare. Formats in every ' +
  'schema: addresses, calldata, hashes and signatures are 0x-hex strings; `chain` is a configured network name; a ' +
  '`token` is a configured symbol (any case, e.g. "USDC") or an address. Units: `amount` is always whole token units ' +
  'as a decimal string ("12.5"); a value in base units (a token\'s smallest unit, or wei) is named for its unit ' +
  '(`…BaseUnits`, `…Wei`), an integer as a decimal string, as are gas, block numbers and the nonces and deadlines ' +
  'of typed data; times are unix seconds (`createdAt`, `updatedAt`: unix ms). A call is {to, value, data}, value in ' +
  'wei; an approval {token, spender, amountBaseUnits} lets spender move that much of the account\'s token. An ' +
  'argument described as another tool\'s result "unchanged" takes that result exactly as it came.'

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
  const listed = [...tools.values()]
  const views = new Map<string, ViewResource>()
  for (const tool of listed) {
    const uri = tool.definition.ui?.resourceUri
    if (uri && !views.has(uri)) views.set(uri, viewResource(uri)!)
  }
  return {
    key,
    groups,
    tools,
    toolsJson: JSON.stringify(listed.filter((tool) => !appOnly(tool)).map((tool) => tool.listing)),
    toolsJsonForApps: JSON.stringify(listed.map((tool) => tool.listing)),
    views,
    instructions,
    ...composePromptsAndResources(groups),
  }
}

/** A tool only a view calls: MCP Apps' `visibility: ["app"]`. */
export function appOnly(tool: RegisteredTool): boolean {
  return tool.definition.ui?.visibility?.length === 1 && tool.definition.ui.visibility[0] === 'app'
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function registerTool(group: string, definition: ToolDefinition<any, any>): RegisteredTool {
  if (!TOOL_NAME.test(definition.name)) throw new Error(`group "${group}": tool name "${definition.name}" must match ${TOOL_NAME}`)
  assertClosed(`${definition.name}.input`, definition.input)
  if (definition.output.type !== 'object') throw new Error(`group "${group}": tool "${definition.name}" output must be an object schema`)
  const ui = definition.ui
  if (ui && !viewResource(ui.resourceUri)) throw new Error(`group "${group}": tool "${definition.name}" names the view "${ui.resourceUri}", which is none of core/ui/views.ts`)
  const listing: ToolListing = {
    name: definition.name,
    ...(definition.title ? { title: definition.title } : {}),
    description: definition.description,
    inputSchema: publishedSchema(definition.input, 'input'),
    outputSchema: publishedSchema(definition.output, 'output'),
    ...(definition.annotations ? { annotations: definition.annotations } : {}),
    ...(ui ? { _meta: { ui: { resourceUri: ui.resourceUri, ...(ui.visibility ? { visibility: ui.visibility } : {}) } } } : {}),
  }
  return { group, definition, check: TypeCompiler.Compile(definition.input), listing }
}

/** Every object in an input schema must refuse unknown properties, so a typo is an error, not a no-op. */
function assertClosed(path: string, schema: unknown): void {
  if (typeof schema !== 'object' || schema === null) return
  const node = schema as Record<string, unknown>
  if (node.type === 'object' && node.additionalProperties !== false) throw new Error(`${path}: object schema must set additionalProperties: false`)
  for (const [key, value] of Object.entries(node)) {
    // The published stand-in of a passed-back argument is no schema Bruno validates with.
    if (key === PUBLISHED_AS || key === PUBLISHED_AS_OUTPUT) continue
    if (Array.isArray(value)) value.forEach((item, index) => assertClosed(`${path}.${key}[${index}]`, item))
    else assertClosed(`${path}.${key}`, value)
  }
}

/**
 * The JSON form of a TypeBox schema as `tools/list` serves it: its symbols (TypeBox's kind
 * markers) dropped by the round trip, and compacted so the list stays light (issue 15). Bruno
 * validates every input with the TypeBox schema itself, so the served form may only be as strict
 * or looser, never stricter:
 * - a union of literals is served as an `enum`; a union of primitive types as one `type` list
 *   when no keyword could then apply to another branch;
 * - variants of one shape (object branches with the same description, e.g. an authorization's
 *   `yParity` and/or `v` forms) are served as one object: every field, the fields all require;
 * - the other branches of a union of primitives are joined: constants of one type as one `enum`,
 *   strings bounded by a pattern alone as one string whose pattern is their patterns' union;
 * - an output schema keeps its shape (types, properties, required, enums, descriptions) but not
 *   the bounds only an input check needs (patterns, lengths, counts, numeric bounds,
 *   closedness): the instructions' preamble names the formats once;
 * - an argument taken back unchanged from another tool's result (`passedBack`) is published as
 *   the open object it names, not a second copy of that result's shape; so is a result's field
 *   of the same shape as another of its fields, or a whole result of another tool's shape (`sameShapeAs`).
 */
function publishedSchema(schema: TObject, kind: 'input' | 'output'): unknown {
  return compact(JSON.parse(JSON.stringify(schema)), kind)
}

type Node = Record<string, unknown>

const OUTPUT_ONLY_BOUNDS = new Set(['pattern', 'minLength', 'maxLength', 'minItems', 'maxItems', 'minProperties', 'maxProperties', 'minimum', 'maximum', 'additionalProperties'])
const STRING_BOUNDS = new Set(['pattern', 'minLength', 'maxLength'])
const NUMBER_BOUNDS = new Set(['minimum', 'maximum'])

function compact(node: unknown, kind: 'input' | 'output'): unknown {
  if (Array.isArray(node)) return node.map((item) => compact(item, kind))
  if (typeof node !== 'object' || node === null) return node
  const publishedAs = (node as Node)[kind === 'input' ? PUBLISHED_AS : PUBLISHED_AS_OUTPUT]
  if (publishedAs) return publishedAs
  const out: Node = {}
  for (const [key, value] of Object.entries(node)) {
    if (key === PUBLISHED_AS || key === PUBLISHED_AS_OUTPUT) continue
    if (kind === 'output' && OUTPUT_ONLY_BOUNDS.has(key) && typeof value !== 'object') continue
    // `properties` maps field names: a field may be called `pattern` or `minimum`.
    out[key] = key === 'properties' ? Object.fromEntries(Object.entries(value as object).map(([name, field]) => [name, compact(field, kind)])) : compact(value, kind)
  }
  const patterns = joinedPatterns.get(node as Node)
  if (patterns) joinedPatterns.set(out, patterns)
  if (!Array.isArray(out.anyOf)) return out
  const { anyOf, ...rest } = out as Node & { anyOf: Node[] }
  const merged = mergeBranches(flatten(anyOf), kind)
  return merged.length === 1 ? { ...merged[0], ...rest } : { ...rest, ...collapse(merged, kind) }
}

/** Nested unions without a keyword of their own are one union; identical branches are served once. */
function flatten(branches: Node[]): Node[] {
  const flat = branches.flatMap((branch) => (Array.isArray(branch.anyOf) && Object.keys(branch).length === 1 ? flatten(branch.anyOf as Node[]) : [branch]))
  return [...new Map(flat.map((branch) => [JSON.stringify(branch), branch])).values()]
}

/** Object branches that share a description are variants of one shape: one object with every field, requiring what all require. */
function mergeBranches(branches: Node[], kind: 'input' | 'output'): Node[] {
  const objects = branches.filter((branch) => branch.type === 'object' && typeof branch.properties === 'object')
  if (objects.length < 2 || objects.length !== branches.length || new Set(objects.map((branch) => branch.description)).size !== 1) return branches
  const properties: Record<string, Node[]> = {}
  for (const branch of objects) {
    for (const [name, field] of Object.entries(branch.properties as Record<string, Node>)) (properties[name] ??= []).push(field)
  }
  const required = (objects[0]!.required as string[] | undefined ?? []).filter((name) => objects.every((branch) => (branch.required as string[] | undefined ?? []).includes(name)))
  const fields = Object.fromEntries(Object.entries(properties).map(([name, variants]) => [name, compact({ anyOf: variants }, kind)]))
  return [{ ...objects[0], required, properties: fields }]
}

/** Literals as an `enum`; primitive branches as one `type` list when their bounds cannot reach another branch. */
function collapse(branches: Node[], kind: 'input' | 'output'): Node {
  const type = branches[0]?.type
  if (typeof type === 'string' && branches.every((branch) => 'const' in branch && Object.keys(branch).length === 2 && branch.type === type)) {
    return { type, enum: branches.map((branch) => branch.const) }
  }
  const plain = branches.every((branch) => typeof branch.type === 'string' && Object.keys(branch).every((key) => key === 'type' || STRING_BOUNDS.has(key) || NUMBER_BOUNDS.has(key)))
  const types = branches.map((branch) => branch.type as string)
  if (plain && new Set(types).size === types.length) {
    const numeric = types.filter((name) => name === 'integer' || name === 'number').length
    const keywords = Object.assign({}, ...branches.map(({ type: _type, ...bounds }) => bounds)) as Node
    const stringBounded = Object.keys(keywords).some((key) => STRING_BOUNDS.has(key))
    const numberBounded = Object.keys(keywords).some((key) => NUMBER_BOUNDS.has(key))
    if ((!numberBounded || numeric === 1) && (!stringBounded || types.includes('string'))) return { type: types, ...keywords }
  }
  // An output says what comes back, not what a check refuses: primitive branches are their types.
  const primitive = branches.every((branch) => typeof branch.type === 'string' && branch.type !== 'object' && branch.type !== 'array')
  if (kind === 'output' && primitive) {
    const names = [...new Set(types)]
    return names.length === 1 ? { type: names[0] } : { type: names }
  }
  return { anyOf: joinPrimitives(branches) }
}

// The patterns a joined string branch was made of, so that joining it again does not repeat them.
const joinedPatterns = new WeakMap<Node, readonly string[]>()

/** Constants of one type as one `enum` branch; strings bounded by a pattern alone as one string, its pattern their union. */
function joinPrimitives(branches: Node[]): Node[] {
  const joined: Node[] = []
  let string: { node: Node; patterns: string[] } | undefined
  for (const branch of branches) {
    const keys = Object.keys(branch).sort().join(',')
    const constants = keys === 'const,type' ? [branch.const] : keys === 'enum,type' ? (branch.enum as unknown[]) : undefined
    if (constants && typeof branch.type === 'string') {
      const same = joined.find((other) => Array.isArray(other.enum) && other.type === branch.type)
      if (same) same.enum = [...new Set([...(same.enum as unknown[]), ...constants])]
      else joined.push({ type: branch.type, enum: [...constants] })
    } else if (keys === 'pattern,type' && branch.type === 'string') {
      const patterns = joinedPatterns.get(branch) ?? [branch.pattern as string]
      if (string) string.patterns.push(...patterns)
      else {
        string = { node: { type: 'string' }, patterns: [...patterns] }
        joined.push(string.node)
      }
    } else joined.push(branch)
  }
  if (string) {
    const patterns = [...new Set(string.patterns)]
    string.node.pattern = patterns.join('|')
    joinedPatterns.set(string.node, patterns)
  }
  return joined
}
