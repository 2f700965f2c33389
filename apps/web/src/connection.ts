// The client's only link to the host: unary JSON calls under /api and the two downlink streams,
// reconnected with backoff. A session stream resumes from the next seq the projection lacks.
import type { EventEnvelope, HostFrame, SessionFrame } from '@dsh/surfaces/wire'

export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message)
  }
}

const TOKEN_KEY = 'dsh-token'

/**
 * The access token of this tab. The URL `dsh web` prints carries it once (`?token=`): it is kept in
 * sessionStorage (this tab and this origin only, so not in a cookie every localhost port would be sent)
 * and dropped from the address bar. Every change sends it as `x-dsh-token`; the host refuses a change
 * that only has the cookie.
 */
function accessToken(): string | undefined {
  try {
    const url = new URL(location.href)
    const given = url.searchParams.get('token')
    if (given) {
      sessionStorage.setItem(TOKEN_KEY, given)
      url.searchParams.delete('token')
      history.replaceState(history.state, '', url.pathname + url.search + url.hash)
    }
    return sessionStorage.getItem(TOKEN_KEY) ?? undefined
  } catch {
    return undefined
  }
}

const token = accessToken()

/** One unary call. JSON in, JSON out; a refusal throws `ApiFailure` with the host's code. */
export async function api<T = unknown>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = body === undefined ? {} : { 'Content-Type': 'application/json' }
  if (token) headers['x-dsh-token'] = token
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'same-origin',
  })
  const parsed = (await response.json().catch(() => ({}))) as { error?: { code: string; message: string } }
  if (!response.ok) {
    throw new ApiFailure(response.status, parsed.error?.code ?? 'HTTP', parsed.error?.message ?? response.statusText)
  }
  return parsed as T
}

export interface Stream {
  close(): void
}

/**
 * Opens a downlink stream and keeps it open: on every (re)connect `path()` is asked again (so a
 * session stream can carry `since`), and the first frame is a baseline.
 */
export function openStream<F extends HostFrame | SessionFrame>(
  path: () => string,
  onFrame: (frame: F) => void,
  onState: (connected: boolean) => void = () => {},
): Stream {
  // An exported page (`dsh sessions export --format html`) has no host to talk to.
  if (exportedSession()) return { close() {} }
  let socket: WebSocket | undefined
  let closed = false
  let delay = 250
  let timer: ReturnType<typeof setTimeout> | undefined
  const connect = () => {
    if (closed) return
    const url = new URL(path(), location.href)
    url.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:'
    socket = new WebSocket(url)
    socket.onopen = () => {
      delay = 250
      onState(true)
    }
    socket.onmessage = (message) => onFrame(JSON.parse(String(message.data)) as F)
    socket.onclose = () => {
      onState(false)
      if (closed) return
      timer = setTimeout(connect, delay)
      delay = Math.min(delay * 2, 5000)
    }
  }
  connect()
  return {
    close() {
      closed = true
      if (timer) clearTimeout(timer)
      socket?.close()
    },
  }
}

/** What an exported page embeds (`window.__DSH_EXPORT__`): the session's header and events. */
export interface ExportedSession {
  header: { id: string; cwd: string; createdAt: number; parentSession?: string; seedLength?: number }
  events: EventEnvelope[]
  exportedAt: string
  toolOutput: boolean
  /** Attached images by blob ref, as `data:` URLs. */
  images?: Record<string, string>
  /** The subagents' own sessions by id. */
  children?: Record<string, { header: ExportedSession['header']; events: EventEnvelope[] }>
}

/** Where an attached image is read from: the page's own copy in an export, else the host's blob route. */
export function blobSrc(ref: string): string | undefined {
  const exported = exportedSession()
  if (exported) return exported.images?.[ref]
  return `/api/blobs/${ref}`
}

export function exportedSession(): ExportedSession | undefined {
  return (globalThis as { __DSH_EXPORT__?: ExportedSession }).__DSH_EXPORT__
}
