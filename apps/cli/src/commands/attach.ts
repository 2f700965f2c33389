// `dsh attach ID`: a terminal on a session another dsh process runs. A background run serves its
// session on an attach socket ($DSH_HOME/run/<id>.sock): the conversation so far is printed, then the
// live stream; a waiting approval is asked here (y/n), a line typed is sent as the next message, and
// Ctrl-D detaches (the session goes on). A session without a socket (a chat or `dsh run` in another
// terminal) is followed read-only from its durable log, with a note saying so.
import { existsSync, readdirSync } from 'node:fs'
import { connect, type Socket } from 'node:net'
import { createInterface } from 'node:readline'
import { dshHome } from '@dsh/composition'
import { HarnessError } from '@dsh/kernel/errors'
import { type AnySessionEvent, isEvent, type SessionEvent } from '@dsh/session'
import { heldElsewhere, renderTranscript } from '@dsh/surfaces/host'
import { type AttachResult, attachDir, attachSocketPath } from '@dsh/surfaces/rpc/attach'
import type { PendingApproval } from '@dsh/surfaces/wire'
import type { ComposeRequest } from '../config.js'
import { ExitCode } from '../exit-codes.js'
import type { Io } from '../io.js'
import { printable, printableLines } from '../printable.js'
import { withRuntime } from '../runtime.js'
import { progressLine } from './run.js'

/** The socket of the session named by `id` or a unique prefix of one, if its owner serves one. */
function socketOf(home: string, id: string): string | undefined {
  const exact = attachSocketPath(home, id)
  if (existsSync(exact)) return exact
  let names: string[] = []
  try {
    names = readdirSync(attachDir(home)).filter((name) => name.endsWith('.sock') && name.startsWith(id))
  } catch {}
  if (names.length > 1) {
    throw new HarnessError('USAGE', `${id} names ${names.length} attachable sessions; give more of the id`, { id })
  }
  return names[0] ? attachSocketPath(home, names[0].slice(0, -'.sock'.length)) : undefined
}

export async function attach(request: ComposeRequest, id: string, io: Io): Promise<number> {
  const env = request.env ?? process.env
  const socket = socketOf(dshHome(env), id)
  if (!socket) return follow(request, id, io)
  return interact(socket, io)
}

/** The text blocks of a message, joined. */
function textOf(content: ReadonlyArray<{ type: string; text?: string }>): string {
  return content.flatMap((block) => (block.type === 'text' && block.text ? [block.text] : [])).join('')
}

/** Lines of one live event, for a person watching (text streams as it comes). */
function liveText(event: AnySessionEvent, streamed: { open: boolean }): string | undefined {
  if (isEvent(event, 'assistant/chunk')) {
    const chunk = event.data.chunk
    if (chunk.type !== 'text-delta' || !chunk.text) return undefined
    streamed.open = true
    return chunk.text
  }
  const close = streamed.open ? '\n' : ''
  if (isEvent(event, 'assistant/message')) {
    const wasStreamed = streamed.open
    streamed.open = false
    if (wasStreamed) return '\n'
    const text = textOf(event.data.message.content)
    return text ? `${text}\n` : undefined
  }
  if (isEvent(event, 'user/message') && event.data.origin === undefined) {
    const content = event.data.message.content
    return `${close}> ${typeof content === 'string' ? content : textOf(content)}\n`
  }
  if (isEvent(event, 'turn/end')) {
    streamed.open = false
    return `${close}dsh: turn ended (${event.data.reason})\n`
  }
  const line = progressLine(event as SessionEvent)
  if (line) {
    streamed.open = false
    return `${close}${line}\n`
  }
  return undefined
}

async function interact(path: string, io: Io): Promise<number> {
  const socket: Socket = connect(path)
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', () => resolve())
    socket.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        new HarnessError(
          'ATTACH_FAILED',
          `cannot attach through ${path}: ${error.code ?? error.message} (the session's process may have ended; dsh agents shows it)`,
          { path },
        ),
      ),
    )
  })
  const write = (text: string) => process.stdout.write(printableLines(text))
  let next = 1
  const replies = new Map<number, (message: { result?: unknown; error?: { message: string } }) => void>()
  const call = (method: string, params: Record<string, unknown> = {}) =>
    new Promise<unknown>((resolve, reject) => {
      const id = next++
      replies.set(id, (message) => (message.error ? reject(new Error(message.error.message)) : resolve(message.result)))
      socket.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`)
    })
  const approvals: PendingApproval[] = []
  const streamed = { open: false }
  const ask = () => {
    const first = approvals[0]
    if (!first) return
    if (process.stdout.isTTY) process.stdout.write('\x07')
    write(
      `\ndsh: approval needed: ${first.toolName ?? 'an action'}: ${first.summary}${first.reason ? ` (${first.reason})` : ''}\ndsh: allow it once? [y/n] `,
    )
  }
  let buffer = ''
  socket.setEncoding('utf8')
  socket.on('data', (chunk: string) => {
    buffer += chunk
    const lines = buffer.split('\n')
    buffer = lines.pop() ?? ''
    for (const line of lines) {
      if (!line.trim()) continue
      let parsed: unknown
      try {
        parsed = JSON.parse(line)
      } catch {
        write(`dsh: ignored a line the session's process sent that is not JSON\n`)
        continue
      }
      const message = parsed as {
        id?: number
        method?: string
        params?: Record<string, unknown>
        result?: unknown
        error?: { message: string }
      }
      if (message.id !== undefined && replies.has(message.id)) {
        replies.get(message.id)?.(message)
        replies.delete(message.id)
      } else if (message.method === 'session/event') {
        const text = liveText(message.params?.event as AnySessionEvent, streamed)
        if (text) write(text)
      } else if (message.method === 'approval/requested') {
        approvals.push(message.params as unknown as PendingApproval)
        if (approvals.length === 1) ask()
      } else if (message.method === 'approval/settled') {
        const at = approvals.findIndex((item) => item.requestId === message.params?.requestId)
        if (at >= 0) approvals.splice(at, 1)
        write(`dsh: approval ${String(message.params?.decision)}\n`)
        ask()
      }
    }
  })
  const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()))
  const info = (await call('attach')) as AttachResult
  for (const line of info.transcript) write(`${line}\n`)
  io.err(
    `dsh: attached to session ${info.sessionId} (pid ${info.pid}, ${info.cwd}); type a message to send it, Ctrl-D detaches (the session goes on)`,
  )
  approvals.push(...info.approvals)
  ask()
  const input = createInterface({ input: io.stdin, terminal: false })
  input.on('line', (line) => {
    const text = line.trim()
    const pending = approvals[0]
    if (pending) {
      if (!/^(y|yes|n|no)$/i.test(text)) {
        write('dsh: answer y or n\n')
        return
      }
      const decision = /^y/i.test(text) ? 'allowed-once' : 'rejected'
      void call('approval/respond', {
        requestId: pending.requestId,
        decision,
        ...(decision === 'rejected' ? { reason: 'rejected from an attached terminal' } : {}),
      }).catch((error: Error) => write(`dsh: ${error.message}\n`))
      return
    }
    if (!text) return
    void call('prompt', { sessionId: info.sessionId, text }).catch((error: Error) => write(`dsh: ${error.message}\n`))
  })
  const detached = new Promise<'detached'>((resolve) => input.once('close', () => resolve('detached')))
  const how = await Promise.race([detached, ended.then(() => 'ended' as const)])
  input.close()
  socket.end()
  if (how === 'ended')
    io.err(
      `dsh: session ${info.sessionId} is no longer served (its run ended); dsh sessions show ${info.sessionId} prints it`,
    )
  else io.err(`dsh: detached; session ${info.sessionId} goes on (dsh attach ${info.sessionId} to come back)`)
  return ExitCode.OK
}

/** Read-only: the durable log, followed while a live owner holds the session. */
async function follow(request: ComposeRequest, id: string, io: Io): Promise<number> {
  return withRuntime(request, io, async ({ runtime }) => {
    const { resolveSessionId } = await import('@dsh/session/store')
    const store = runtime.root.sessionStore
    const query = runtime.root.get('sessionQuery')
    if (!query) throw new HarnessError('CONFIG_NO_QUERY', 'the profile has no session-query row', {})
    const full = await resolveSessionId(store, id)
    let shown = 0
    const print = async (): Promise<void> => {
      const log = await query.read(full)
      const lines = renderTranscript(log.events, 'text')
      for (const line of lines.slice(shown)) io.out(printableLines(line))
      shown = lines.length
    }
    await print()
    const live = () => heldElsewhere(runtime.root, full)
    if (!(await live())) {
      io.err(`dsh: session ${printable(full)} is not running; this is its whole transcript`)
      return ExitCode.OK
    }
    io.err(
      `dsh: read-only: session ${printable(full)} runs in another terminal that takes no input from here (a background run, dsh run --bg, can be answered); following its log, Ctrl-C stops`,
    )
    const stop = new AbortController()
    const off = io.onSignal(() => stop.abort())
    try {
      while (!stop.signal.aborted && (await live())) {
        await new Promise((resolve) => setTimeout(resolve, 500))
        await print()
      }
    } finally {
      off()
    }
    await print()
    return ExitCode.OK
  })
}
