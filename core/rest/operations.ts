import { Type } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { requireAddress } from '../chain/arguments.ts'
import type { Networks } from '../chain/networks.ts'
import { QuoteRequest, SubmitRequest, type AccountView, type Quote, type SubmissionView } from '../relay/schemas.ts'
import type { RelayService } from '../relayService.ts'
import { Address } from '../tool/schemas.ts'
import { BindingError, requireValid } from '../http/errors.ts'

/** `account`'s argument besides the chain (MCP's `account` tool takes the same). */
export const AccountRequest = Type.Object({ address: Address }, { additionalProperties: false })

/** `status`'s argument (MCP's `status` tool takes the same). */
export const StatusRequest = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) }, { additionalProperties: false })

const checks = {
  account: TypeCompiler.Compile(AccountRequest),
  quote: TypeCompiler.Compile(QuoteRequest),
  submit: TypeCompiler.Compile(SubmitRequest),
  status: TypeCompiler.Compile(StatusRequest),
}

/** The relay's operations as REST and JSON-RPC see them: untrusted input in, checked, then the relay. */
export interface BoundOperations {
  account(chain: unknown, request: unknown, where: string): Promise<AccountView>
  /** `client` (here and in submit): who asked (the request's address), for the relay's per-client bounds and admission. */
  quote(chain: unknown, request: unknown, where: string, client?: string): Promise<Quote>
  submit(chain: unknown, request: unknown, where: string, client?: string): Promise<SubmissionView>
  /** With `chain`, an id of another chain's submission is unknown too. */
  status(request: unknown, where: string, chain?: unknown): Promise<SubmissionView>
}

/**
 * The relay's operations for the REST and JSON-RPC bindings: each checks the chain (a configured
 * name, else `unknown_chain`) and its input against the relay's own TypeBox schemas (the ones the
 * MCP tools publish and check), then calls the very operation the MCP tools call. `where` names
 * the input in a refusal (`body`, `params`).
 *
 * @example
 * const ops = boundOperations(app.bruno)
 * await ops.quote('local', request.body, 'body') // Quote, or throws BindingError / ToolError
 */
export function boundOperations({ networks, relay }: { networks: Networks; relay: RelayService }): BoundOperations {
  const requireChain = (chain: unknown, where: string) => requireChainName(networks.names, chain, where)
  return {
    async account(chain, request, where) {
      const name = requireChain(chain, where)
      requireValid(checks.account, request, where)
      return relay.account(name, requireAddress((request as { address: string }).address, 'address'))
    },
    async quote(chain, request, where, client) {
      const name = requireChain(chain, where)
      requireValid(checks.quote, request, where)
      return relay.quote(name, request as QuoteRequest, client)
    },
    async submit(chain, request, where, client) {
      const name = requireChain(chain, where)
      requireValid(checks.submit, request, where)
      return relay.submit(name, request as SubmitRequest, client)
    },
    async status(request, where, chain) {
      const name = chain === undefined ? undefined : requireChain(chain, where)
      requireValid(checks.status, request, where)
      const { id } = request as { id: string }
      const found = await relay.status(id)
      if (!found || (name !== undefined && found.chain !== name)) {
        throw new BindingError('not_found', `unknown submission id "${id}"${name === undefined ? '' : ` on ${name}`}`)
      }
      return found
    },
  }
}

/**
 * A chain as a binding was given it (a path segment, a field): one of the configured names, else
 * `invalid_request` (missing) or `unknown_chain`, naming the ones served. `where` names the input.
 *
 * @example
 * requireChainName(networks.names, request.params.chain, 'path') // 'base', or throws BindingError
 */
export function requireChainName(names: readonly string[], chain: unknown, where: string): string {
  if (typeof chain !== 'string') throw new BindingError('invalid_request', `${where}.chain: Expected required property (one of ${names.join(', ')})`)
  if (!names.includes(chain)) throw new BindingError('unknown_chain', `unknown chain "${chain}": this deployment serves ${names.join(', ')}`)
  return chain
}
