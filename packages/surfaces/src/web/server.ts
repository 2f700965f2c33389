// The `dsh web` host row: node:http for unary JSON under /api, `ws` for the two downlink-only
// streams, the browser client's build as static files; every request passes the trust fence first.
import { randomBytes } from 'node:crypto'
import { existsSync, readFileSync, statSync } from 'node:fs'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { createRequire } from 'node:module'
import type { Socket } from 'node:net'
import { dirname, extname, isAbsolute, join, normalize, resolve, sep } from 'node:path'
import { sniffType } from '@dsh/attachments'
import { type Context, HarnessError, toJsonSafe } from '@dsh/kernel'
import type {} from '@dsh/settings/credentials'
import { WebSocketServer } from 'ws'
import { parseAttachments } from '../host/index.js'
import { CLIENT_MODULE_PATH, ClientModules } from './client-modules.js'
import { type ClientModuleSpec, WebHost, type WebHostHandle, type WebListenOptions } from './index.js'
import type { JobOutputView } from './protocol.js'
import { EXPORT_PATH, NOT_SESSIONS, SessionApi, serveExport } from './session-api.js'
import { NOT_SETTINGS, SettingsApi } from './settings-api.js'
import { HostState } from './state.js'
import { checkRequest, type FenceOptions, hostName, isLoopbackAddress, isLoopbackName } from './trust.js'

export interface WebHostConfig {
  /** Directory of the built browser client (default: `@dsh/web-client`'s `dist`). */
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
    const token = loopback ? undefined : randomBytes(24).toString('base64url')
    const fence: FenceOptions = { trustedHosts: options.trustedHosts ?? [], ...(token ? { token } : {}) }
    const log = options.log ?? (() => {})
    const state = new HostState(this.home, options.cwd, log, this.clientModules, this.config.listRefreshMs)
    const staticDir = this.config.staticDir ?? defaultStaticDir()
    const api = new Api(this.home, state, this.config)
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
      if (token && queryToken) {
        // Exchange the printed token for an HttpOnly cookie, then drop it from the address bar.
        res.setHeader('Set-Cookie', `dsh_token=${encodeURIComponent(token)}; HttpOnly; SameSite=Strict; Path=/`)
        url.searchParams.delete('token')
        res.writeHead(303, { Location: url.pathname + url.search })
        return res.end()
      }
      const clientModule = CLIENT_MODULE_PATH.exec(url.pathname)
      if (clientModule && (req.method === 'GET' || req.method === 'HEAD')) {
        return serveClientModule(res, this.clientModules.file(clientModule[1] as string, clientModule[2] as string))
      }
      if (url.pathname.startsWith('/api/blobs/') && (req.method === 'GET' || req.method === 'HEAD')) {
        return serveBlob(this.home, res, decodeURIComponent(url.pathname.slice('/api/blobs/'.length)))
      }
      const exported = EXPORT_PATH.exec(url.pathname)
      if (exported && (req.method === 'GET' || req.method === 'HEAD')) {
        return serveExport(state, req, res, exported[1] as string, url).catch((error) => {
          const [status, code, message] = describe(error)
          sendJson(res, status, { error: { code, message } })
        })
      }
      if (url.pathname === '/api' || url.pathname.startsWith('/api/')) {
        const loopback = isLoopbackAddress(req.socket.remoteAddress) && isLoopbackName(hostName(req.headers.host) ?? '')
        if (url.pathname.startsWith('/api/settings') && !loopback) {
          return sendJson(res, 403, { error: { code: 'LOOPBACK_ONLY', message: 'settings are loopback-only' } })
        }
        try {
          // Prompts may carry attachments (base64): their limit is the attachment limit, not 1 MB.
          const prompt = /\/(prompt|steer)$/.test(url.pathname)
          const body = await readBody(req, prompt ? MAX_PROMPT_BODY : MAX_BODY)
          const result = await api.route(req.method ?? 'GET', url, body, loopback)
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
    const shown = bind.includes(':') ? `[${bind}]` : bind === '0.0.0.0' ? '127.0.0.1' : bind
    let closing: Promise<void> | undefined
    const handleObject: WebHostHandle = {
      url: `http://${shown}:${port}/${token ? `?token=${token}` : ''}`,
      port,
      ...(token ? { token } : {}),
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

/** The unary API: method + path to a host operation. */
class Api {
  private readonly settings: SettingsApi
  private readonly sessions: SessionApi

  constructor(
    ctx: Context,
    private readonly state: HostState,
    config: WebHostConfig,
  ) {
    this.settings = new SettingsApi(ctx, config.credentialNames)
    this.sessions = new SessionApi(ctx, state)
  }

  async route(method: string, url: URL, body: Record<string, unknown>, loopback: boolean): Promise<unknown> {
    const path = url.pathname
    const state = this.state
    if (method === 'GET' && path === '/api/sessions') return { sessions: await state.list() }
    if (method === 'GET' && path === '/api/client-modules') return { modules: state.clientModules.manifest() }
    if (method === 'POST' && path === '/api/sessions') {
      const cwd = checkCwd(optionalString(body, 'cwd'), state.host.cwd)
      // Choosing a directory is management: only from this machine.
      if (cwd !== state.host.cwd && !loopback)
        throw new ApiError(
          403,
          'LOOPBACK_ONLY',
          `choosing a directory is loopback-only; from here send the host's directory ${JSON.stringify(state.host.cwd)}`,
        )
      const preset = optionalString(body, 'preset')
      const agent = await state.host.create({ cwd, ...(preset ? { preset } : {}) })
      return {
        sessionId: agent.session.id,
        cwd: agent.session.header.cwd,
        ...(agent.preset === undefined ? {} : { preset: agent.preset }),
      }
    }
    const session = /^\/api\/sessions\/([A-Za-z0-9_.-]+)\/([a-z-]+)$/.exec(path)
    if (method === 'POST' && session) {
      const id = session[1] as string
      switch (session[2]) {
        case 'resume': {
          const agent = await state.host.resume(id)
          return { sessionId: id, eventCount: agent.session.length }
        }
        case 'fork': {
          const at = body.at
          if (at !== undefined && !(Number.isInteger(at) && (at as number) >= 0)) throw badParams('"at" must be a seq')
          const agent = await state.host.fork(id, at as number | undefined)
          return { sessionId: agent.session.id, parentSessionId: id }
        }
        case 'prompt':
        case 'steer': {
          const text = body.text
          const attachments = parseAttachments(body.attachments)
          if (typeof text !== 'string' || (!text.trim() && attachments.length === 0))
            throw badParams('"text" must be a non-empty string')
          await state.host.resume(id)
          if (session[2] === 'prompt' && state.host.isCommand(text)) {
            // A registered /command runs outside any turn; its outcome is the answer, not a log entry.
            const outcome = await state.host.command(id, text)
            return { sessionId: id, command: toJsonSafe(outcome) }
          }
          // A browser may be on another machine: it sends bytes, never paths of the host's disk.
          const kind = session[2] === 'prompt' ? 'followup' : 'steer'
          const receipt = await state.host.prompt(id, { text, attachments }, { kind, allowPaths: false })
          return { sessionId: id, itemId: receipt.id, target: receipt.target }
        }
        case 'cancel': {
          await state.host.agent(id).cancel('cancelled from the browser')
          return { sessionId: id }
        }
        case 'preset': {
          const preset = body.preset
          if (typeof preset !== 'string' || !preset) throw badParams('"preset" must be an agent preset name')
          return { sessionId: id, preset: await state.host.setPreset(id, preset) }
        }
        case 'mode': {
          const mode = body.mode
          if (typeof mode !== 'string' || !mode) throw badParams('"mode" must be a permission preset name')
          return { sessionId: id, mode: state.host.setMode(id, mode) }
        }
        case 'inbox': {
          const target = body.target
          if (target !== 'next-step' && target !== 'next-turn')
            throw badParams('"target" must be next-step or next-turn')
          const texts = Array.isArray(body.texts) ? body.texts : []
          if (!texts.every((text) => typeof text === 'string')) throw badParams('"texts" must be strings')
          const removed = state.host
            .agent(id)
            .spliceInbox(target, Number(body.start), Number(body.deleteCount), ...(texts as string[]))
          return { removed: removed.map((item) => item.id) }
        }
      }
    }
    const job = /^\/api\/sessions\/([A-Za-z0-9_.-]+)\/jobs\/([A-Za-z0-9_-]+)\/kill$/.exec(path)
    if (method === 'POST' && job) {
      await state.host.killJob(job[1] as string, job[2] as string)
      return {}
    }
    const output = /^\/api\/sessions\/([A-Za-z0-9_.-]+)\/jobs\/([A-Za-z0-9_-]+)\/output$/.exec(path)
    if (method === 'GET' && output) return jobOutput(state, output[1] as string, output[2] as string, url)
    const approval = /^\/api\/approvals\/([A-Za-z0-9_.:-]+)$/.exec(path)
    if (method === 'POST' && approval) {
      const decision = body.decision
      if (decision !== 'allowed-once' && decision !== 'rejected') {
        throw badParams('"decision" must be "allowed-once" or "rejected"')
      }
      const reason = optionalString(body, 'reason')
      // "Allow for this chat": a logged session grant of the approval service (decision 290).
      const grant = body.grant
      if (grant !== undefined && (grant !== 'session' || decision !== 'allowed-once'))
        throw badParams('"grant" can only be "session", with "decision": "allowed-once"')
      state.host.respond(approval[1] as string, {
        decision,
        ...(reason === undefined ? {} : { reason }),
        ...(grant === 'session' ? { grant } : {}),
      })
      return {}
    }
    const question = /^\/api\/questions\/([A-Za-z0-9_.:-]+)$/.exec(path)
    if (method === 'POST' && question) {
      const answer = body.answer
      if (typeof answer !== 'string') throw badParams('"answer" must be a string')
      state.host.answerQuestion(question[1] as string, answer)
      return {}
    }
    const managed = await this.sessions.route(method, url, body, loopback)
    if (managed !== NOT_SESSIONS) return managed
    const settings = await this.settings.route(method, path, body)
    if (settings !== NOT_SETTINGS) return settings
    throw new ApiError(404, 'NOT_FOUND', `no route ${method} ${path}`)
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
 * A session's directory, checked when the session is created rather than at its first tool call: required
 * (the host's own is in the host baseline as `defaultCwd`), absolute, and an existing directory.
 */
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

/** `GET .../jobs/:jobId/output?from=<byte>`: a person's read of a job's output; the model's cursor stays. */
function jobOutput(state: HostState, sessionId: string, jobId: string, url: URL): JobOutputView {
  const from = Number(url.searchParams.get('from') ?? 0)
  if (!Number.isInteger(from) || from < 0) throw badParams('"from" must be a byte offset (an integer >= 0)')
  const read = state.host.jobOutput(sessionId, jobId, from)
  return {
    text: read.text,
    next: read.next,
    lost: read.lost,
    status: read.job.status,
    ...(read.job.summary ? { summary: read.job.summary } : {}),
  }
}

function sinceOf(url: URL): number {
  const since = Number(url.searchParams.get('since') ?? 0)
  return Number.isInteger(since) && since >= 0 ? since : 0
}

function optionalString(body: Record<string, unknown>, key: string): string | undefined {
  const value = body[key]
  if (value === undefined) return undefined
  if (typeof value !== 'string') throw badParams(`"${key}" must be a string`)
  return value
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
    const status = NOT_FOUND_CODES.has(error.code) ? 404 : CONFLICT_CODES.has(error.code) ? 409 : 400
    return [status, error.code, error.message]
  }
  return [500, 'INTERNAL', error instanceof Error ? error.message : String(error)]
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
    res.end(`The browser client is not built (no ${file}); run \`npm run build -w @dsh/web-client\`.\n`)
    return
  }
  const assets = pathname.startsWith('/assets/')
  res.writeHead(200, {
    'Content-Type': TYPES[extname(file)] ?? 'application/octet-stream',
    'Cache-Control': assets ? 'public, max-age=31536000, immutable' : 'no-cache',
  })
  res.end(req.method === 'HEAD' ? undefined : readFileSync(file))
}

/** `@dsh/web-client`'s build output, found through module resolution (undefined layout: a path that 503s). */
function defaultStaticDir(): string {
  try {
    return join(dirname(createRequire(import.meta.url).resolve('@dsh/web-client/package.json')), 'dist')
  } catch {
    return resolve('web-client-not-installed')
  }
}

export default WebHostService
