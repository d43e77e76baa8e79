import { listenOnLoopback } from '../fixtures/loopbackServer.ts'

// Issue 13's node that misbehaves for one call: a loopback JSON-RPC proxy whose rules answer chosen
// requests themselves (an error, or a malformed result) and pass everything else on. Batches are
// handled element by element, so a rule hits one element of a batch and leaves the others alone,
// as a node that fails one call of a batch does.

/** One JSON-RPC request element as the proxy sees it. */
export interface RpcElement {
  readonly jsonrpc?: unknown
  readonly id?: unknown
  readonly method?: string
  readonly params?: unknown
}

/** What a rule answers in the request's place: a JSON-RPC error, or a result (possibly malformed). */
export type RuleAnswer = { readonly error: { readonly code: number; readonly message: string; readonly data?: unknown } } | { readonly result: unknown }

export interface ChaosRule {
  readonly name: string
  /** How many requests it answered so far. */
  readonly hits: number
}

/** One request element that reached the proxy, in arrival order. */
export interface Seen {
  /** unix ms of arrival */
  readonly at: number
  readonly method: string
  readonly params: unknown
  /** The rule that answered it, if one did. */
  readonly rule?: string
  /** unix ms at which its answer was written back (absent until then, or if the exchange failed) */
  readonly answeredAt?: number
}

export interface ChaosProxy {
  /** Configure Bruno with this URL instead of the node's. */
  readonly url: string
  /**
   * Answers every request `match` accepts with `answer`, `times` times (default: until `remove`),
   * newest rule first, after `delayMs` (a node slow to fail: the whole HTTP exchange waits, as a
   * batch's answer does). Returns the rule, whose `hits` count the requests it took (on arrival).
   */
  rule(name: string, match: (element: RpcElement) => boolean, answer: RuleAnswer, times?: number, delayMs?: number): ChaosRule
  remove(rule: ChaosRule): void
  /** Every request element that arrived, answered by a rule or passed on. */
  readonly seen: Seen[]
  close(): Promise<void>
}

/** Requests that simulate or estimate a transaction (`eth_call`, `eth_estimateGas`) whose data holds `marker` (hex, no 0x). */
export function simulating(marker: string, methods: readonly string[] = ['eth_call', 'eth_estimateGas']): (element: RpcElement) => boolean {
  const needle = marker.toLowerCase().replace(/^0x/, '')
  return (element) => {
    if (!element.method || !methods.includes(element.method) || !Array.isArray(element.params)) return false
    const transaction = element.params[0] as { data?: unknown; input?: unknown } | undefined
    const data = transaction?.data ?? transaction?.input
    return typeof data === 'string' && data.toLowerCase().includes(needle)
  }
}

/** `eth_sendRawTransaction` (any raw transaction). */
export const broadcasting = (element: RpcElement): boolean => element.method === 'eth_sendRawTransaction'

/** The raw transactions broadcast through the proxy (passed on or refused), in order. */
export function broadcasts(proxy: ChaosProxy): { raw: string; refusedBy?: string }[] {
  return proxy.seen
    .filter((seen) => seen.method === 'eth_sendRawTransaction' && Array.isArray(seen.params))
    .map((seen) => ({ raw: (seen.params as string[])[0]!, ...(seen.rule ? { refusedBy: seen.rule } : {}) }))
}

interface LiveRule {
  readonly name: string
  readonly match: (element: RpcElement) => boolean
  readonly answer: RuleAnswer
  readonly delayMs: number
  remaining: number
  hits: number
}

/**
 * Starts the proxy in front of `target` (a JSON-RPC URL: the parity proxy, or anvil).
 *
 * @example
 * const chaos = await startChaosProxy(parity.url)
 * chaos.rule('refuse one broadcast', broadcasting, { error: { code: -32000, message: 'exceeds block gas limit' } }, 1)
 */
export async function startChaosProxy(target: string): Promise<ChaosProxy> {
  const rules: LiveRule[] = []
  const seen: Seen[] = []

  const ruleFor = (element: RpcElement): LiveRule | undefined => {
    for (let index = rules.length - 1; index >= 0; index--) {
      const rule = rules[index]!
      if (rule.remaining > 0 && rule.match(element)) {
        rule.remaining--
        rule.hits++
        return rule
      }
    }
    return undefined
  }

  const loopback = await listenOnLoopback((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', async () => {
      const body = Buffer.concat(chunks)
      let parsed: unknown
      try {
        parsed = JSON.parse(body.toString('utf8'))
      } catch {
        parsed = undefined
      }
      const batch = Array.isArray(parsed)
      const elements = (batch ? parsed : [parsed]) as RpcElement[]
      if (parsed === undefined || (batch && elements.length === 0) || elements.some((element) => typeof element !== 'object' || element === null)) {
        // Not something a rule reads: the node answers it as it is.
        return pass(body, res)
      }
      const answers = new Map<number, unknown>()
      const onward: number[] = []
      const arrived: { answeredAt?: number }[] = []
      let delayMs = 0
      elements.forEach((element, index) => {
        const rule = ruleFor(element)
        const entry: Seen & { answeredAt?: number } = { at: Date.now(), method: element.method ?? '(invalid)', params: element.params, ...(rule ? { rule: rule.name } : {}) }
        seen.push(entry)
        arrived.push(entry)
        if (rule) {
          answers.set(index, { jsonrpc: '2.0', id: element.id ?? null, ...rule.answer })
          delayMs = Math.max(delayMs, rule.delayMs)
        } else onward.push(index)
      })
      try {
        // Not a wait: a rule's deliberate delay (a slow node) is the chaos being injected.
        if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs))
        if (onward.length > 0) {
          const forwarded = batch ? onward.map((index) => elements[index]) : elements[0]
          const response = await fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(forwarded) })
          const reply = (await response.json()) as unknown
          if (!batch) answers.set(0, reply)
          else {
            const byId = new Map((reply as { id: unknown }[]).map((answer) => [JSON.stringify(answer.id), answer]))
            for (const index of onward) answers.set(index, byId.get(JSON.stringify(elements[index]!.id)))
          }
        }
        const out = JSON.stringify(batch ? elements.map((_, index) => answers.get(index)) : answers.get(0))
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(out)
        const answeredAt = Date.now()
        for (const entry of arrived) entry.answeredAt = answeredAt
      } catch {
        res.destroy()
      }
    })
  })

  const pass = async (body: Buffer, res: import('node:http').ServerResponse) => {
    try {
      const response = await fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body: body.toString('utf8') })
      const text = await response.text()
      res.writeHead(response.status, { 'content-type': 'application/json' })
      res.end(text)
    } catch {
      res.destroy()
    }
  }

  return {
    url: loopback.url,
    seen,
    rule(name, match, answer, times = Number.POSITIVE_INFINITY, delayMs = 0) {
      const rule: LiveRule = { name, match, answer, delayMs, remaining: times, hits: 0 }
      rules.push(rule)
      return {
        name,
        get hits() {
          return rule.hits
        },
        // The handle `remove` looks for.
        [RULE]: rule,
      } as ChaosRule
    },
    remove(handle) {
      const rule = (handle as unknown as Record<symbol, LiveRule>)[RULE]
      const index = rules.indexOf(rule!)
      if (index >= 0) rules.splice(index, 1)
    },
    close: () => loopback.close(),
  }
}

const RULE = Symbol('rule')
