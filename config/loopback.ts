const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '[::1]', '::1'])

/**
 * True for a loopback host name, with or without a port (`localhost:3000`, `[::1]:80`, `127.0.0.5`).
 * The config owns it: it decides which binds need `allowedHosts`; core's origin guard asks it too.
 *
 * @example
 * isLoopbackHost('127.0.0.5:3030') // true
 * isLoopbackHost('bruno.example') // false
 */
export function isLoopbackHost(host: string): boolean {
  const name = hostName(host)
  return LOOPBACK_NAMES.has(name) || /^127(\.\d{1,3}){3}$/.test(name)
}

/**
 * A `Host` header's name without its port, lower-cased (an IPv6 literal keeps its brackets).
 *
 * @example
 * hostName('[::1]:80') // '[::1]'
 */
export function hostName(host: string): string {
  const lower = host.toLowerCase()
  if (lower.startsWith('[')) return lower.slice(0, lower.indexOf(']') + 1)
  const colon = lower.lastIndexOf(':')
  return colon === -1 || lower.indexOf(':') !== colon ? lower : lower.slice(0, colon)
}
