// The trust fence of `dsh web`: which requests reach the host at all. It is a reachability policy
// against DNS rebinding and cross-site requests, plus the page's access token; it is not a
// user-account system. Loopback is not a person: a tool process of this machine (the model's bash
// running `curl`) is on loopback too, so on loopback the token is still required for every request
// that changes state (decision 445); only reads stay open there. A cookie never authorizes a change:
// browsers send a localhost cookie to every port of the host, so a server the model starts on another
// port would receive it; writes need the token in a header, which only the page's own script sends.
import { timingSafeEqual } from 'node:crypto'
import type { IncomingHttpHeaders } from 'node:http'

export interface FenceOptions {
  /** Extra Host names (without port) accepted besides loopback names. */
  trustedHosts: readonly string[]
  /** The page's access token: required on every state-changing request... */
  token: string
  /** ...and on reads too (the host is bound beyond loopback, where anyone on the network may ask). */
  tokenForReads: boolean
  /** The cookie that carries read access for this listener (named per port). */
  cookieName?: string
}

export type FenceVerdict = { ok: true } | { ok: false; status: number; code: string; message: string }

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '::1', '[::1]'])

/** Whether a host name (no port) names this machine's loopback interface. */
export function isLoopbackName(name: string): boolean {
  const host = name.toLowerCase()
  return LOOPBACK_NAMES.has(host) || host.endsWith('.localhost') || /^127\.\d+\.\d+\.\d+$/.test(host)
}

/** Whether a socket address is loopback (IPv4, IPv6 or IPv4-mapped IPv6). */
export function isLoopbackAddress(address: string | undefined): boolean {
  if (!address) return false
  const plain = address.startsWith('::ffff:') ? address.slice(7) : address
  return plain === '::1' || /^127\.\d+\.\d+\.\d+$/.test(plain)
}

/** Splits a Host header (`name`, `name:port`, `[v6]:port`) into its lowercase name; undefined if malformed. */
export function hostName(header: string | undefined): string | undefined {
  if (!header) return undefined
  const value = header.trim().toLowerCase()
  const match = /^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::(\d{1,5}))?$/.exec(value)
  return match ? (match[1] as string) : undefined
}

/** Whether the Host header names loopback or a trusted host. A rebinding name (`evil.example`) does not. */
export function hostAllowed(header: string | undefined, trustedHosts: readonly string[]): boolean {
  const name = hostName(header)
  if (!name) return false
  if (isLoopbackName(name)) return true
  return trustedHosts.some((trusted) => trusted.toLowerCase() === name)
}

/**
 * Same-origin check for state-changing requests and stream upgrades: an explicit cross-site
 * Fetch-Metadata is refused; an Origin must be `http(s)://<the Host header>`. A request with neither
 * (a non-browser client) passes this check; the Host check and the token still apply.
 */
export function sameOrigin(headers: IncomingHttpHeaders): boolean {
  const site = headers['sec-fetch-site']
  if (typeof site === 'string' && site !== 'same-origin' && site !== 'none') return false
  const origin = headers.origin
  if (origin === undefined) return true
  if (origin === 'null') return false
  const host = headers.host?.toLowerCase()
  return origin.toLowerCase() === `http://${host}` || origin.toLowerCase() === `https://${host}`
}

/** The token a request presents in a header: `Authorization: Bearer` or `x-dsh-token`. */
export function headerToken(headers: IncomingHttpHeaders): string | undefined {
  const auth = headers.authorization
  if (typeof auth === 'string' && auth.startsWith('Bearer ')) return auth.slice(7).trim()
  const header = headers['x-dsh-token']
  return typeof header === 'string' ? header : undefined
}

/** The value of one cookie, if the request carries it. */
export function cookieToken(headers: IncomingHttpHeaders, name: string | undefined): string | undefined {
  const cookie = headers.cookie
  if (!name || typeof cookie !== 'string') return undefined
  for (const part of cookie.split(';')) {
    const [key, ...rest] = part.trim().split('=')
    if (key === name) {
      try {
        return decodeURIComponent(rest.join('='))
      } catch {
        return undefined
      }
    }
  }
  return undefined
}

/** The cookie name a listener on this port uses (a cookie named for another port is not read). */
export function tokenCookieName(port: number): string {
  return `dsh_token_${port}`
}

export function tokenMatches(expected: string, presented: string | undefined): boolean {
  if (presented === undefined) return false
  const a = Buffer.from(expected)
  const b = Buffer.from(presented)
  return a.length === b.length && timingSafeEqual(a, b)
}

export interface FenceRequest {
  method: string
  headers: IncomingHttpHeaders
  /** Stream upgrades are checked like state-changing requests. */
  upgrade?: boolean
  /** A token that arrived in the query of the entry page (exchanged for the cookie). */
  queryToken?: string
}

/** Decides whether one request may reach the host. Never throws. */
export function checkRequest(request: FenceRequest, options: FenceOptions): FenceVerdict {
  if (!hostAllowed(request.headers.host, options.trustedHosts)) {
    return refuse(403, 'HOST_NOT_ALLOWED', 'the Host header is not loopback or a --trusted-host')
  }
  const changing = request.upgrade || !['GET', 'HEAD', 'OPTIONS'].includes(request.method)
  if (changing && !sameOrigin(request.headers)) {
    return refuse(403, 'CROSS_ORIGIN', 'cross-site requests are refused')
  }
  // A stream upgrade is a read (the streams are downlink-only): the token follows the method.
  const writes = !['GET', 'HEAD', 'OPTIONS'].includes(request.method)
  if (writes) {
    if (!tokenMatches(options.token, headerToken(request.headers) ?? request.queryToken)) {
      const cookie = cookieToken(request.headers, options.cookieName) !== undefined
      return refuse(
        401,
        'TOKEN_REQUIRED',
        cookie
          ? 'this request changes state: the sign-in cookie only allows reading; send the access token as x-dsh-token (reload the page from the URL `dsh web` printed, with ?token=)'
          : 'this request changes state: present the access token (open the URL `dsh web` printed, with ?token=, or send it as x-dsh-token)',
      )
    }
  } else if (options.tokenForReads) {
    const presented =
      headerToken(request.headers) ?? cookieToken(request.headers, options.cookieName) ?? request.queryToken
    if (!tokenMatches(options.token, presented)) {
      return refuse(
        401,
        'TOKEN_REQUIRED',
        'this host is bound beyond loopback: present the access token (open the URL `dsh web` printed, with ?token=, or send it as x-dsh-token)',
      )
    }
  }
  return { ok: true }
}

function refuse(status: number, code: string, message: string): FenceVerdict {
  return { ok: false, status, code, message }
}
