// The HTTP fetch provider (`ctx.webFetch` provider "http"). http(s) only, no URL credentials, no cookies or
// ambient credentials, same-origin redirects only, time/byte/char bounds, text content types only.
// Every hop resolves the host, checks every address against the address policy, and connects to the
// address it checked (a pinned lookup), so DNS rebinding cannot swap the destination after the check.
import { lookup as dnsLookup } from 'node:dns/promises'
import { request as httpRequest, type IncomingMessage } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { isIP, type LookupFunction } from 'node:net'
import { TextDecoder } from 'node:util'
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib'
import { type Context, HarnessError } from '@dsh/kernel'
import type { NodeHtmlMarkdown } from 'node-html-markdown'
import { createAddressPolicy, type WebFetcher, type WebFetchRequest, type WebFetchResult } from './index.js'

export interface HttpFetchConfig {
  /** Non-public destinations allowed anyway: host names (`*.corp.example`), IPs or CIDRs. Default none. */
  allow?: string[]
  /** Whole-fetch bound, redirects included. Default 30 s. */
  timeoutMs?: number
  /** Body bound after decompression; the rest is cut (`truncated`). Default 5 MiB. */
  maxBytes?: number
  /** Default bound of the returned text. Default 100,000 characters. */
  maxChars?: number
  /** Same-origin redirects followed. Default 5. */
  maxRedirects?: number
  userAgent?: string
}

/** Resolves a host name to addresses (injectable for tests; the default is the system resolver). */
export type Resolver = (hostname: string) => Promise<{ address: string; family: number }[]>

const systemResolver: Resolver = (hostname) => dnsLookup(hostname, { all: true, verbatim: true })

const TEXT_TYPES =
  /^(text\/[a-z0-9.+-]+|application\/(json|xml|xhtml\+xml|javascript|ecmascript|x-javascript|ld\+json|rss\+xml|atom\+xml|[a-z0-9.-]+\+(json|xml)))$/

const fail = (code: string, message: string, facts: Record<string, unknown> = {}): never => {
  throw new HarnessError(code, message, facts)
}

function number(value: unknown, fallback: number, key: string): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    return fail('WEB_CONFIG_INVALID', `web fetch config: ${key} must be a number >= 0`, { key })
  }
  return value
}

/** Checks a URL the way every hop needs it: http(s), no credentials. */
function checkUrl(raw: string): URL {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return fail('WEB_INVALID_URL', `not a URL: ${raw}`, { url: raw })
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    fail('WEB_UNSUPPORTED_SCHEME', `only http and https URLs can be fetched, not ${url.protocol}`, { url: raw })
  }
  if (url.username !== '' || url.password !== '') {
    fail('WEB_URL_CREDENTIALS', 'URLs with credentials (user:password@) are refused', { url: url.origin })
  }
  url.hash = ''
  return url
}

/** `charset=` of a Content-Type, or a `<meta charset>` / http-equiv in the first KiB of HTML. */
function sniffCharset(header: string, body: Buffer, html: boolean): string | undefined {
  const fromHeader = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(header)?.[1]
  if (fromHeader) return fromHeader
  if (body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf) return 'utf-8'
  if (!html) return undefined
  const head = body.subarray(0, 1024).toString('latin1')
  return /<meta[^>]+charset\s*=\s*["']?([A-Za-z0-9_.:-]+)/i.exec(head)?.[1]
}

function decode(body: Buffer, charset: string, url: string): string {
  let decoder: TextDecoder
  try {
    decoder = new TextDecoder(charset)
  } catch {
    return fail('WEB_UNSUPPORTED_CHARSET', `cannot decode ${url}: unsupported charset "${charset}"`, { url, charset })
  }
  return decoder.decode(body)
}

// Loaded on the first HTML page: the converter costs a noticeable part of every start-up otherwise.
let markdown: Promise<NodeHtmlMarkdown> | undefined
function htmlToMarkdown(): Promise<NodeHtmlMarkdown> {
  markdown ??= import('node-html-markdown').then(
    ({ NodeHtmlMarkdown }) =>
      new NodeHtmlMarkdown({ ignore: ['script', 'style', 'noscript', 'template', 'svg', 'iframe'] }),
  )
  return markdown
}

interface Hop {
  response: IncomingMessage
  url: URL
}

/**
 * The fetcher with its policy and bounds. `resolver` replaces DNS (tests); the connection always goes
 * to the checked address.
 */
export function createHttpFetcher(config: HttpFetchConfig = {}, resolver: Resolver = systemResolver): WebFetcher {
  const policy = createAddressPolicy(config.allow ?? [])
  const timeoutMs = number(config.timeoutMs, 30_000, 'timeoutMs')
  const maxBytes = number(config.maxBytes, 5 * 1024 * 1024, 'maxBytes')
  const defaultChars = number(config.maxChars, 100_000, 'maxChars')
  const maxRedirects = number(config.maxRedirects, 5, 'maxRedirects')
  const userAgent = config.userAgent ?? 'dsh-web-fetch/0.1'

  /** Resolves and checks every address of the hop's host; returns the one to connect to. */
  async function destination(url: URL): Promise<{ address: string; family: number }> {
    const hostname = url.hostname.replace(/^\[|\]$/g, '')
    const literal = isIP(hostname)
    let addresses: { address: string; family: number }[]
    if (literal !== 0) addresses = [{ address: hostname, family: literal }]
    else {
      try {
        addresses = await resolver(hostname)
      } catch (error) {
        return fail('WEB_DNS_FAILED', `cannot resolve ${hostname}: ${(error as Error).message}`, { hostname })
      }
      if (addresses.length === 0) fail('WEB_DNS_FAILED', `${hostname} has no addresses`, { hostname })
    }
    for (const { address } of addresses) policy.check(url.href, hostname, address)
    return addresses[0] as { address: string; family: number }
  }

  async function hop(url: URL, signal: AbortSignal): Promise<Hop> {
    const pinned = await destination(url)
    // Node calls `lookup` for host names only; literals connect to themselves (already checked).
    const lookup: LookupFunction = (_hostname, options, callback) => {
      if ((options as { all?: boolean }).all) (callback as (e: null, a: unknown[]) => void)(null, [pinned])
      else callback(null, pinned.address, pinned.family)
    }
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest
    return new Promise<Hop>((resolve, reject) => {
      const request = send(
        url,
        {
          method: 'GET',
          agent: false,
          lookup,
          signal,
          headers: {
            'user-agent': userAgent,
            accept: 'text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.8,*/*;q=0.1',
            'accept-encoding': 'gzip, deflate, br',
          },
        },
        (response) => resolve({ response, url }),
      )
      request.on('error', reject)
      request.end()
    })
  }

  async function readBody(
    response: IncomingMessage,
    signal: AbortSignal,
  ): Promise<{ body: Buffer; truncated: boolean }> {
    const encoding = String(response.headers['content-encoding'] ?? 'identity').toLowerCase()
    let stream: NodeJS.ReadableStream = response
    if (encoding === 'gzip' || encoding === 'x-gzip') stream = response.pipe(createGunzip())
    else if (encoding === 'deflate') stream = response.pipe(createInflate())
    else if (encoding === 'br') stream = response.pipe(createBrotliDecompress())
    const chunks: Buffer[] = []
    let size = 0
    let truncated = false
    try {
      for await (const chunk of stream as AsyncIterable<Buffer>) {
        if (signal.aborted) break
        const room = maxBytes - size
        if (chunk.length > room) {
          chunks.push(chunk.subarray(0, room))
          size += room
          truncated = true
          break
        }
        chunks.push(chunk)
        size += chunk.length
      }
    } finally {
      response.destroy()
    }
    if (signal.aborted) throw signal.reason
    return { body: Buffer.concat(chunks), truncated }
  }

  async function run(request: WebFetchRequest, signal: AbortSignal): Promise<WebFetchResult> {
    let url = checkUrl(request.url)
    const origin = url.origin
    const redirects: string[] = []
    let response: IncomingMessage
    for (;;) {
      ;({ response } = await hop(url, signal))
      const status = response.statusCode ?? 0
      const location = response.headers.location
      if (status < 300 || status >= 400 || location === undefined) break
      response.destroy()
      const next = checkUrl(new URL(location, url).href)
      if (next.origin !== origin) {
        fail(
          'WEB_REDIRECT_CROSS_ORIGIN',
          `${url.href} redirects to ${next.href}, another origin; fetch that URL explicitly if it is wanted`,
          { url: url.href, location: next.href },
        )
      }
      if (redirects.length >= maxRedirects) {
        fail('WEB_TOO_MANY_REDIRECTS', `more than ${maxRedirects} redirects from ${request.url}`, { url: request.url })
      }
      redirects.push(next.href)
      url = next
    }
    const header = String(response.headers['content-type'] ?? '')
    const mediaType = header.split(';')[0]?.trim().toLowerCase() ?? ''
    if (!TEXT_TYPES.test(mediaType)) {
      response.destroy()
      fail(
        'WEB_UNSUPPORTED_CONTENT_TYPE',
        `${url.href} is ${mediaType === '' ? 'missing a Content-Type' : `"${mediaType}"`}; only text content can be fetched`,
        { url: url.href, contentType: mediaType },
      )
    }
    const html = mediaType === 'text/html' || mediaType === 'application/xhtml+xml'
    const { body, truncated: cut } = await readBody(response, signal)
    const charset = (sniffCharset(header, body, html) ?? 'utf-8').toLowerCase()
    const decoded = decode(body, charset, url.href)
    let title: string | undefined
    let text = decoded
    if (html) {
      title = /<title[^>]*>([\s\S]*?)<\/title>/i.exec(decoded)?.[1]?.replace(/\s+/g, ' ').trim() || undefined
      if (!request.raw) text = (await htmlToMarkdown()).translate(decoded).trim()
    }
    const maxChars = request.maxChars ?? defaultChars
    let truncated = cut
    if (text.length > maxChars) {
      text = text.slice(0, maxChars)
      truncated = true
    }
    return {
      url: url.href,
      status: response.statusCode ?? 0,
      contentType: mediaType,
      charset,
      ...(title ? { title } : {}),
      text,
      truncated,
      bytes: body.length,
      redirects,
    }
  }

  return {
    name: 'http',
    async fetch(request) {
      const timeout = AbortSignal.timeout(timeoutMs)
      const signal = request.signal ? AbortSignal.any([request.signal, timeout]) : timeout
      try {
        return await run(request, signal)
      } catch (error) {
        if (error instanceof HarnessError) throw error
        if (timeout.aborted && !request.signal?.aborted) {
          fail('WEB_TIMEOUT', `fetching ${request.url} took longer than ${timeoutMs} ms`, {
            url: request.url,
            timeoutMs,
          })
        }
        if (request.signal?.aborted) throw error
        return fail('WEB_REQUEST_FAILED', `fetching ${request.url} failed: ${(error as Error).message}`, {
          url: request.url,
        })
      }
    },
  }
}

/** The provider row: registers the "http" fetcher on `ctx.webFetch` for its lifetime. */
export const HttpFetchProvider = {
  name: 'web-fetch-http',
  inject: ['webFetch'],
  apply(ctx: Context, config: HttpFetchConfig = {}) {
    ctx.webFetch.registerFetcher(createHttpFetcher(config ?? {}))
  },
}

export default HttpFetchProvider
