// The `dsh web` host row: node:http for unary JSON under /api, `ws` for the two downlink-only
// streams, the browser client's build as static files; every request passes the trust fence first.
import { randomBytes } from 'node:crypto'
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { createRequire } from 'node:module'
import type { Socket } from 'node:net'
import { dirname, extname, isAbsolute, join, normalize, resolve, sep } from 'node:path'
import { sniffType } from '@dsh/attachments'
import { type Context, HarnessError } from '@dsh/kernel'
import type {} from '@dsh/settings/credentials'
import { WebSocketServer } from 'ws'
import type { WireScope } from '../wire/operation.js'
import { runOperation } from '../wire/operations.js'
import type { WireFile } from '../wire/types.js'
import { CLIENT_MODULE_PATH, ClientModules } from './client-modules.js'
import { type ClientModuleSpec, WebHost, type WebHostHandle, type WebListenOptions } from './index.js'
import { matchRoute, routeParams } from './routes.js'
import { WebStreams } from './streams.js'
import {
  checkRequest,
  type FenceOptions,
  hostName,
  isLoopbackAddress,
  isLoopbackName,
  tokenCookieName,
  tokenMatches,
} from './trust.js'

export interface WebHostConfig {
  /** Directory of the built browser client (default: `@dsh/web`'s `dist`). */
  staticDir?: string
  /** Credential names the settings page offers besides the ones already stored. */
  credentialNames?: string[]
  /**
   * How often (ms) an open page's session list is re-read when other hosts share the session store
   * (PostgreSQL): their new sessions and leases show up within this. Default 2000; 0 turns it off.
   */
  listRefreshMs?: number
}

const MAX_BODY = 1024 * 1024
/** A prompt with attachments: 20 MiB of files are ~27 MiB of base64. */
const MAX_PROMPT_BODY = 32 * 1024 * 1024
const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
}

class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message)
  }
}

export class WebHostService extends WebHost {
  static readonly provide = 'webHost'
  static readonly inject = ['agents', 'sessions']
  readonly home: Context
  private readonly config: WebHostConfig
  private readonly running = new Set<WebHostHandle>()
  /** Browser-side plugins, shared by every listener of this row. */
  readonly clientModules = new ClientModules()

  constructor(ctx: Context, config: WebHostConfig = {}) {
    super(ctx, 'webHost')
    this.home = ctx
    this.config = config
    ctx.effect(
      () => () => Promise.all([...this.running].map((handle) => handle.close())).then(() => undefined),
      'webHost.servers',
    )
  }

  registerClientModule(spec: ClientModuleSpec): () => void {
    return this.clientModules.register(spec)
  }

  async listen(options: WebListenOptions = {}): Promise<WebHostHandle> {
    const bind = options.host ?? '127.0.0.1'
    const loopback = isLoopbackName(bind)
    // On loopback too it guards every state change. Kept in `$DSH_HOME/.web-token` (0600, masked in
    // the sandbox like the credential stores) so a page stays signed in across a host restart; never
    // in an environment variable a tool process could read.
    const token = webToken(this.home.get('launcher')?.config.home)
    const fence: FenceOptions = { trustedHosts: options.trustedHosts ?? [], token, tokenForReads: !loopback }
    const log = options.log ?? (() => {})
    const state = new WebStreams(this.home, options.cwd, log, this.clientModules, this.config.listRefreshMs)
    const staticDir = this.config.staticDir ?? defaultStaticDir()
    const scope = (loopback: boolean): WireScope => ({
      ctx: this.home,
      wire: 'web',
      cwd: (cwd, use) => webCwd(cwd, use, state.host.cwd, loopback),
      model: (route) => route,
      remote: true,
      loopback,
      cancelReason: 'cancelled from the browser',
      page: { clientModules: () => this.clientModules.manifest(), credentialNames: this.config.credentialNames ?? [] },
    })
    const wss = new WebSocketServer({ noServer: true, maxPayload: 1024 })
    const sockets = new Set<Socket>()

    const server: Server = createServer((req, res) => {
      void handle(req, res).catch((error) => {
        log(`request failed: ${String(error)}`)
        if (!res.headersSent) sendJson(res, 500, { error: { code: 'INTERNAL', message: 'internal error' } })
        else res.end()
      })
    })
    server.on('connection', (socket) => {
      sockets.add(socket)
      socket.on('close', () => sockets.delete(socket))
    })

    const handle = async (req: IncomingMessage, res: ServerResponse) => {
      const url = requestUrl(req.url)
      if (!url) return sendJson(res, 400, { error: { code: 'BAD_REQUEST_TARGET', message: badTarget(req.url) } })
      const queryToken = url.searchParams.get('token') ?? undefined
      const verdict = checkRequest({ method: req.method ?? 'GET', headers: req.headers, queryToken }, fence)
      if (!verdict.ok) return sendJson(res, verdict.status, { error: { code: verdict.code, message: verdict.message } })
      const entry = !url.pathname.startsWith('/api') && (req.method === 'GET' || req.method === 'HEAD')
      if (entry && queryToken !== undefined && tokenMatches(token, queryToken) && fence.cookieName) {
        // The printed URL signs the page in: an HttpOnly cookie named for this port carries read access
        // (images, streams); the page's script keeps the token itself in this tab's sessionStorage,
        // strips it from the address bar and sends it as x-dsh-token on every change.
        res.setHeader(
          'Set-Cookie',
          `${fence.cookieName}=${encodeURIComponent(token)}; HttpOnly; SameSite=Strict; Path=/`,
        )
      }
      const clientModule = CLIENT_MODULE_PATH.exec(url.pathname)
      if (clientModule && (req.method === 'GET' || req.method === 'HEAD')) {
        return serveClientModule(res, this.clientModules.file(clientModule[1] as string, clientModule[2] as string))
      }
      if (url.pathname.startsWith('/api/blobs/') && (req.method === 'GET' || req.method === 'HEAD')) {
        return serveBlob(this.home, res, decodeURIComponent(url.pathname.slice('/api/blobs/'.length)))
      }
      if (url.pathname === '/api' || url.pathname.startsWith('/api/')) {
        const loopback = isLoopbackAddress(req.socket.remoteAddress) && isLoopbackName(hostName(req.headers.host) ?? '')
        if (url.pathname.startsWith('/api/settings') && !loopback) {
          return sendJson(res, 403, { error: { code: 'LOOPBACK_ONLY', message: 'settings are loopback-only' } })
        }
        try {
          const method = req.method ?? 'GET'
          const match = matchRoute(method, url.pathname)
          if (!match) throw new ApiError(404, 'NOT_FOUND', `no route ${method} ${url.pathname}`)
          // Prompts may carry attachments (base64): their limit is the attachment limit, not 1 MB.
          const body = await readBody(req, match.route.largeBody ? MAX_PROMPT_BODY : MAX_BODY)
          const params = routeParams(match, url, body)
          const result = await runOperation(match.route.name, state.host, params, scope(loopback))
          if (match.route.file) return sendFile(req, res, result as WireFile)
          return sendJson(res, 200, result ?? {})
        } catch (error) {
          const [status, code, message] = describe(error)
          return sendJson(res, status, { error: { code, message } })
        }
      }
      return serveStatic(req, res, staticDir, url.pathname)
    }

    server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
      const url = requestUrl(req.url)
      const verdict = checkRequest({ method: 'GET', headers: req.headers, upgrade: true }, fence)
      const refuse = (status: number, text: string) => {
        socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`)
      }
      if (!verdict.ok) return refuse(verdict.status, verdict.code)
      if (!url) return refuse(400, 'Bad Request')
      const sessionMatch = /^\/api\/streams\/session\/([A-Za-z0-9_.-]+)$/.exec(url.pathname)
      if (url.pathname !== '/api/streams/host' && !sessionMatch) return refuse(404, 'Not Found')
      wss.handleUpgrade(req, socket, head, (ws) => {
        let unsubscribe: (() => void) | undefined
        let closed = false
        const link = {
          send: (frame: string) => ws.readyState === ws.OPEN && ws.send(frame),
          drop: (reason: string) => ws.close(1013, reason),
          get buffered() {
            return ws.bufferedAmount
          },
        }
        ws.on('message', () => ws.close(1008, 'this stream is downlink-only'))
        ws.on('close', () => {
          closed = true
          unsubscribe?.()
        })
        const subscribing = sessionMatch
          ? state.subscribeSession(sessionMatch[1] as string, sinceOf(url), link)
          : state.subscribeHost(link)
        subscribing.then(
          (dispose) => {
            if (closed) dispose()
            else unsubscribe = dispose
          },
          (error) => {
            const [, code, message] = describe(error)
            link.send(JSON.stringify({ type: 'session/error', code, message }))
            ws.close(1011, code)
          },
        )
      })
    })

    await new Promise<void>((resolveListen, reject) => {
      server.once('error', (error) =>
        reject(
          new HarnessError('WEB_LISTEN_FAILED', `cannot listen on ${bind}:${options.port ?? 3080}: ${error.message}`, {
            host: bind,
          }),
        ),
      )
      server.listen(options.port ?? 3080, bind, () => resolveListen())
    })
    const address = server.address()
    const port = typeof address === 'object' && address ? address.port : (options.port ?? 3080)
    fence.cookieName = tokenCookieName(port)
    const shown = bind.includes(':') ? `[${bind}]` : bind === '0.0.0.0' ? '127.0.0.1' : bind
    let closing: Promise<void> | undefined
    const handleObject: WebHostHandle = {
      url: `http://${shown}:${port}/?token=${token}`,
      port,
      token,
      tokenForReads: !loopback,
      close: () => {
        closing ??= (async () => {
          this.running.delete(handleObject)
          for (const client of wss.clients) client.terminate()
          wss.close()
          const stopped = new Promise<void>((done) => server.close(() => done()))
          for (const socket of sockets) socket.destroy()
          await state.close()
          await stopped
        })()
        return closing
      },
    }
    this.running.add(handleObject)
    return handleObject
  }
}

/**
 * The request target as a URL on a fixed base, or undefined when it is not a plain path: `//x` would
 * otherwise parse as a host named `x`, and `//` alone does not parse at all.
 */
function requestUrl(target: string | undefined): URL | undefined {
  if (target === undefined) return new URL('http://host.invalid/')
  if (!target.startsWith('/') || target.startsWith('//')) return undefined
  try {
    return new URL(`http://host.invalid${target}`)
  } catch {
    return undefined
  }
}

function badTarget(target: string | undefined): string {
  return `bad request path ${JSON.stringify(target)}: a path starts with a single "/" (e.g. / or /api/sessions)`
}

/**
 * A directory a browser names, checked when the session is created rather than at its first tool call:
 * required to create in (the host's own is in the host baseline as `defaultCwd`), absolute, an existing
 * directory, and the host's own unless the client is on this machine (choosing one is management).
 */
function webCwd(cwd: string | undefined, use: 'create' | 'read', defaultCwd: string, loopback: boolean): string {
  if (cwd === undefined && use === 'read') return defaultCwd
  const checked = checkCwd(cwd, defaultCwd)
  if (checked !== defaultCwd && !loopback)
    throw new ApiError(
      403,
      'LOOPBACK_ONLY',
      `choosing a directory is loopback-only; from here send the host's directory ${JSON.stringify(defaultCwd)}`,
    )
  return checked
}

function checkCwd(cwd: string | undefined, defaultCwd: string): string {
  const hint = `e.g. the host's directory ${JSON.stringify(defaultCwd)}`
  if (cwd === undefined) throw badParams(`"cwd" is missing: send the absolute directory to work in, ${hint}`)
  if (!cwd.trim()) throw badParams(`"cwd" is empty: send the absolute directory to work in, ${hint}`)
  if (!isAbsolute(cwd)) throw badParams(`"cwd" must be an absolute path, got ${JSON.stringify(cwd)} (${hint})`)
  if (!existsSync(cwd) || !statSync(cwd).isDirectory())
    throw badParams(
      `"cwd" ${JSON.stringify(cwd)} is not an existing directory; create it first or send another (${hint})`,
    )
  return cwd
}

function sinceOf(url: URL): number {
  const since = Number(url.searchParams.get('since') ?? 0)
  return Number.isInteger(since) && since >= 0 ? since : 0
}

function badParams(message: string): ApiError {
  return new ApiError(400, 'INVALID_PARAMS', message)
}

const NOT_FOUND_CODES = new Set([
  'SESSION_NOT_FOUND',
  'APPROVAL_NOT_FOUND',
  'QUESTION_NOT_FOUND',
  'JOB_NOT_FOUND',
  'NO_CREDENTIALS',
  'NO_SETTINGS',
  'CONFIG_NO_LLM',
])
const CONFLICT_CODES = new Set([
  'SESSION_BUSY',
  'SESSION_NOT_ATTACHED',
  'SESSION_LEASED',
  'SESSION_HOST_CLOSING',
  'PRESET_LOCKED',
])

function describe(error: unknown): [number, string, string] {
  if (error instanceof ApiError) return [error.status, error.code, error.message]
  if (HarnessError.is(error)) {
    // 428 Precondition Required: the page asks the person, then repeats the call with `confirm`.
    if (error.code === 'SANDBOX_MODE_UNCONFIRMED') return [428, error.code, error.message]
    const status = NOT_FOUND_CODES.has(error.code) ? 404 : CONFLICT_CODES.has(error.code) ? 409 : 400
    return [status, error.code, error.message]
  }
  return [500, 'INTERNAL', error instanceof Error ? error.message : String(error)]
}

/** A file answer (`session/export`) as a download. */
function sendFile(req: IncomingMessage, res: ServerResponse, file: WireFile): void {
  const body = Buffer.from(file.text)
  res.writeHead(200, {
    'Content-Type': file.type,
    'Content-Length': body.byteLength,
    'Content-Disposition': `attachment; filename="${file.name}"`,
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
  })
  res.end(req.method === 'HEAD' ? undefined : body)
}

/** A client module's bytes under its content hash: immutable; a stale hash is 404 (that version is gone). */
function serveClientModule(res: ServerResponse, bytes: Buffer | undefined): void {
  if (!bytes) {
    sendJson(res, 404, {
      error: { code: 'CLIENT_MODULE_NOT_FOUND', message: 'no such client module version; reload the manifest' },
    })
    return
  }
  res.writeHead(200, {
    'Content-Type': 'text/javascript; charset=utf-8',
    'Content-Length': bytes.byteLength,
    'Cache-Control': 'public, max-age=31536000, immutable',
    'X-Content-Type-Options': 'nosniff',
  })
  res.end(bytes)
}

/** An attachment's bytes for the transcript's thumbnails: immutable, since the name is the hash. */
async function serveBlob(ctx: Context, res: ServerResponse, ref: string): Promise<void> {
  const attachments = ctx.get('attachments')
  if (!attachments)
    return sendJson(res, 404, { error: { code: 'NO_ATTACHMENTS', message: 'the attachments row is disabled' } })
  try {
    const bytes = await attachments.get(ref)
    res.writeHead(200, {
      'Content-Type': sniffType(bytes) ?? 'application/octet-stream',
      'Content-Length': bytes.byteLength,
      'Cache-Control': 'private, max-age=31536000, immutable',
      'X-Content-Type-Options': 'nosniff',
    })
    res.end(bytes)
  } catch (error) {
    const [status, code, message] = describe(error)
    sendJson(res, code === 'ATTACHMENT_NOT_FOUND' ? 404 : status, { error: { code, message } })
  }
}

async function readBody(req: IncomingMessage, limit: number): Promise<Record<string, unknown>> {
  if (req.method === 'GET' || req.method === 'HEAD') return {}
  // JSON only: a form post from another site cannot produce this content type without a preflight.
  const type = req.headers['content-type'] ?? ''
  let size = 0
  const chunks: Buffer[] = []
  for await (const chunk of req) {
    size += (chunk as Buffer).length
    if (size > limit) {
      throw new ApiError(
        413,
        'BODY_TOO_LARGE',
        `the request body is over ${limit / 1024 / 1024} MiB; attach smaller files`,
      )
    }
    chunks.push(chunk as Buffer)
  }
  if (size === 0) return {}
  if (!type.startsWith('application/json')) throw new ApiError(415, 'JSON_ONLY', 'send application/json')
  let parsed: unknown
  try {
    parsed = JSON.parse(Buffer.concat(chunks).toString('utf8'))
  } catch {
    throw badParams('the body is not JSON')
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw badParams('the body must be a JSON object')
  return parsed as Record<string, unknown>
}

function securityHeaders(res: ServerResponse, host: string | undefined): void {
  res.setHeader('X-Content-Type-Options', 'nosniff')
  res.setHeader('Referrer-Policy', 'no-referrer')
  res.setHeader('X-Frame-Options', 'DENY')
  res.setHeader(
    'Content-Security-Policy',
    `default-src 'self'; connect-src 'self' ws://${host ?? 'localhost'}; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'`,
  )
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body)
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
  })
  res.end(text)
}

function serveStatic(req: IncomingMessage, res: ServerResponse, root: string, pathname: string): void {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    sendJson(res, 405, { error: { code: 'METHOD', message: 'GET only' } })
    return
  }
  securityHeaders(res, req.headers.host)
  let file = normalize(join(root, decodeURIComponent(pathname)))
  if (!file.startsWith(resolve(root) + sep) && file !== resolve(root)) {
    sendJson(res, 404, { error: { code: 'NOT_FOUND', message: 'not found' } })
    return
  }
  if (!existsSync(file) || statSync(file).isDirectory()) file = join(root, 'index.html')
  if (!existsSync(file)) {
    res.writeHead(503, { 'Content-Type': 'text/plain; charset=utf-8' })
    res.end(`The browser client is not built (no ${file}); run \`npm run build -w @dsh/web\`.\n`)
    return
  }
  const assets = pathname.startsWith('/assets/')
  res.writeHead(200, {
    'Content-Type': TYPES[extname(file)] ?? 'application/octet-stream',
    'Cache-Control': assets ? 'public, max-age=31536000, immutable' : 'no-cache',
  })
  res.end(req.method === 'HEAD' ? undefined : readFileSync(file))
}

/** `@dsh/web`'s build output, found through module resolution (undefined layout: a path that 503s). */
function defaultStaticDir(): string {
  try {
    return join(dirname(createRequire(import.meta.url).resolve('@dsh/web/package.json')), 'dist')
  } catch {
    return resolve('web-client-not-installed')
  }
}

export default WebHostService

/** The page token of a dsh home, made once (0600); without a home, one for this process only. */
function webToken(home: string | undefined): string {
  const fresh = () => randomBytes(24).toString('base64url')
  if (home === undefined) return fresh()
  const file = join(home, '.web-token')
  try {
    const kept = readFileSync(file, 'utf8').trim()
    if (/^[A-Za-z0-9_-]{32,}$/.test(kept)) return kept
  } catch {}
  const token = fresh()
  mkdirSync(home, { recursive: true, mode: 0o700 })
  writeFileSync(file, `${token}\n`, { mode: 0o600 })
  chmodSync(file, 0o600)
  return token
}
