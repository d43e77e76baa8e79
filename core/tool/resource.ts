import type { Completer } from './prompt.ts'
import type { ToolContext } from './tool.ts'

/**
 * How long a client may keep what it read, and who may share it (MCP caching: `ttlMs`,
 * `cacheScope`). `public`: the same for every caller; `private`: one caller's.
 */
export interface CacheHint {
  readonly ttlMs: number
  readonly scope: 'public' | 'private'
}

/**
 * A resource at a fixed URI (`resources/list`, `resources/read`). Its text is read on each request.
 *
 * @example
 * const spec: ResourceDefinition = {
 *   uri: 'bruno://spec', name: 'spec', description: 'The contract', mimeType: 'text/markdown',
 *   cache: { ttlMs: 86_400_000, scope: 'public' }, read: async () => specText,
 * }
 */
export interface ResourceDefinition {
  readonly uri: string
  readonly name: string
  readonly title?: string
  readonly description: string
  readonly mimeType: string
  readonly cache: CacheHint
  readonly read: (context: ToolContext) => Promise<string>
}

/**
 * Resources named by an RFC 6570 level-1 URI template (`resources/templates/list`), e.g.
 * `bruno://{chain}/submissions/{id}`: each variable matches one path segment. `read` gets the
 * variables and answers `undefined` for a resource that does not exist.
 *
 * @example
 * const submission: ResourceTemplateDefinition = {
 *   uriTemplate: 'bruno://{chain}/submissions/{id}', name: 'submission', description: '…',
 *   mimeType: 'application/json', cache: { ttlMs: 0, scope: 'private' },
 *   complete: { chain: completeChain },
 *   read: async ({ id }, { relay }) => JSON.stringify(await relay.status(id)),
 * }
 */
export interface ResourceTemplateDefinition {
  readonly uriTemplate: string
  readonly name: string
  readonly title?: string
  readonly description: string
  readonly mimeType: string
  readonly cache: CacheHint
  /** Completers for the template's variables, by variable name. */
  readonly complete?: Readonly<Record<string, Completer>>
  readonly read: (variables: Readonly<Record<string, string>>, context: ToolContext) => Promise<string | undefined>
}
