import { Kind, type TSchema } from '@sinclair/typebox'
import type { TypeCheck } from '@sinclair/typebox/compiler'
import { ValueErrorType, type ValueError } from '@sinclair/typebox/errors'

/** One problem with a value: where (a JSON pointer, `''` for the value itself) and what, in words. */
export interface SchemaProblem {
  readonly path: string
  readonly message: string
}

/**
 * The problems a value has against a compiled TypeBox schema, at most `max`, in words a caller can
 * act on. Every transport says them the same way (MCP's `Invalid arguments for <tool>: …`, REST's
 * `body.<field>: …`, JSON-RPC's `params.<field>: …`). TypeBox says only "Expected union value" when
 * a value matches no branch of a union (submit's `payment`); here the union names the branch the
 * value came closest to — the one sharing the most of its keys, then the one with the fewest
 * errors — and that branch's first problem:
 * `looks like a signed transfer ({token, authorization, signature}) but \`signature\` is missing`.
 *
 * @example
 * schemaProblems(submitCheck, { call, payment: { token, authorization } }, 5)
 * // [{ path: '/payment', message: 'looks like a signed transfer ({token, authorization, signature}) but `signature` is missing' }]
 */
export function schemaProblems<T extends TSchema>(check: TypeCheck<T>, value: unknown, max: number): SchemaProblem[] {
  const found: SchemaProblem[] = []
  for (const error of check.Errors(value)) {
    found.push(describeError(error))
    if (found.length === max) break
  }
  return found
}

function describeError(error: ValueError): SchemaProblem {
  if (error.type === ValueErrorType.Union) return describeUnion(error)
  return { path: error.path, message: error.message }
}

function describeUnion(error: ValueError): SchemaProblem {
  const branches = ((error.schema as { anyOf?: TSchema[] }).anyOf ?? []).map((schema, index) => ({ schema, errors: [...(error.errors?.[index] ?? [])] }))
  const { path, value } = error
  const constants = branches.map(({ schema }) => (schema as { const?: unknown }).const)
  if (branches.length > 0 && constants.every((constant) => constant !== undefined)) {
    return { path, message: `Expected one of ${constants.map((constant) => JSON.stringify(constant)).join(', ')}` }
  }
  const objects = branches.filter(({ schema }) => schema[Kind] === 'Object')
  if (isPlainObject(value) && objects.length > 0) {
    const keys = Object.keys(value)
    const scored = objects.map((branch) => ({ ...branch, shared: keys.filter((key) => key in propertiesOf(branch.schema)).length }))
    scored.sort((a, b) => b.shared - a.shared || a.errors.length - b.errors.length)
    const best = scored[0]!
    if (best.shared === 0) return { path, message: `expected ${objects.map(({ schema }) => branchName(schema)).join(' or ')}` }
    const first = best.errors[0]
    if (!first) return { path, message: `looks like ${branchName(best.schema)} but does not match it` }
    return { path, message: `looks like ${branchName(best.schema)} but ${describeInside(first, path)}` }
  }
  // Not an object (or no object branch): the branch with the fewest errors, its first one.
  const closest = branches.filter(({ errors }) => errors.length > 0).sort((a, b) => a.errors.length - b.errors.length)[0]
  return closest ? describeError(closest.errors[0]!) : { path, message: error.message }
}

/** A branch's first problem, its field named relative to the union's value. */
function describeInside(error: ValueError, unionPath: string): string {
  const field = error.path.slice(unionPath.length).replace(/^\//, '').replaceAll('/', '.')
  if (error.type === ValueErrorType.ObjectRequiredProperty) return `\`${field}\` is missing`
  if (error.type === ValueErrorType.ObjectAdditionalProperties) return `\`${field}\` is not one of its fields`
  const inner = describeError(error)
  return field ? `\`${field}\`: ${inner.message}` : inner.message
}

/** A branch by its `title` and its fields: `a signed transfer ({token, authorization, signature})`. */
function branchName(schema: TSchema): string {
  const fields = `{${Object.keys(propertiesOf(schema)).join(', ')}}`
  return typeof schema.title === 'string' ? `${schema.title} (${fields})` : fields
}

function propertiesOf(schema: TSchema): Record<string, unknown> {
  return ((schema as { properties?: Record<string, unknown> }).properties ?? {}) as Record<string, unknown>
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
