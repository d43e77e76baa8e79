import { hostName, isLoopbackHost } from '../config/loopback.ts'
import type { ServerConfig } from '../config/schema.ts'

/**
 * Decides which `Host` and `Origin` headers a deployment answers, against DNS rebinding.
 * On a loopback bind with no allowed hosts: loopback `Host` only, and an `Origin`, when sent,
 * must be loopback or listed. Off loopback: `Host` must be listed (`*` for any), and an `Origin`
 * must be listed or be the `Host` itself where the config names that host (not by `*`): Bruno's own
 * pages (the signing page) call it from its own origin, which a rebound name cannot present.
 *
 * @example
 * const guard = originGuard({ host: '127.0.0.1', allowedHosts: [], allowedOrigins: [], … })
 * guard.allows('127.0.0.1:3000', 'http://evil.example') // false
 */
export function originGuard(server: Pick<ServerConfig, 'host' | 'allowedHosts' | 'allowedOrigins'>) {
  const loopbackOnly = isLoopbackHost(server.host) && server.allowedHosts.length === 0
  const hosts = new Set(server.allowedHosts.map((host) => host.toLowerCase()))
  const origins = new Set(server.allowedOrigins.map((origin) => origin.toLowerCase().replace(/\/$/, '')))

  const hostAllowed = (host: string | undefined): boolean => {
    if (host === undefined) return false
    if (loopbackOnly) return isLoopbackHost(host)
    return hosts.has('*') || hosts.has(host.toLowerCase()) || hosts.has(hostName(host))
  }

  // A Host the config names (not `*`, which any rebound name matches): its own origin is Bruno's pages'.
  const namedHost = (host: string): boolean => !loopbackOnly && (hosts.has(host.toLowerCase()) || hosts.has(hostName(host)))

  const originAllowed = (origin: string | undefined, host: string): boolean => {
    if (origin === undefined) return true
    const normalized = origin.toLowerCase()
    if (origins.has('*') || origins.has(normalized) || (namedHost(host) && sameOrigin(normalized, host))) return true
    if (!loopbackOnly) return false
    try {
      const url = new URL(normalized)
      return (url.protocol === 'http:' || url.protocol === 'https:') && isLoopbackHost(url.host)
    } catch {
      return false
    }
  }

  return {
    /** Whether a request with these headers is answered at all. */
    allows(host: string | undefined, origin: string | undefined): boolean {
      return hostAllowed(host) && originAllowed(origin, host!)
    },
  }
}

/** Whether `origin` (lowercased) names the very host and port the request was sent to (`Host`). */
function sameOrigin(origin: string, host: string): boolean {
  try {
    const url = new URL(origin)
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.host === host.toLowerCase()
  } catch {
    return false
  }
}
