// Where a session's attach socket is, and one request to it (what `agents/respond` sends a background
// run from another process). The server side is `./attach.ts`; `dsh attach` is the interactive client.
import { connect } from 'node:net'
import { join } from 'node:path'
import { HarnessError } from '@dsh/kernel'

/** `$DSH_HOME/run`: the attach sockets. */
export function attachDir(home: string): string {
  return join(home, 'run')
}

export function attachSocketPath(home: string, sessionId: string): string {
  return join(attachDir(home), `${sessionId}.sock`)
}

/** Sends one JSON-RPC request on session `sessionId`'s attach socket and resolves with its result. */
export function attachCall(
  home: string,
  sessionId: string,
  method: string,
  params: Record<string, unknown>,
): Promise<unknown> {
  const path = attachSocketPath(home, sessionId)
  return new Promise((resolve, reject) => {
    const socket = connect(path)
    let buffer = ''
    const fail = (message: string, code = 'AGENT_NOT_ATTACHABLE') => {
      socket.destroy()
      reject(new HarnessError(code, message, { sessionId }))
    }
    const timer = setTimeout(() => fail(`session ${sessionId} did not answer on ${path}`), 10_000)
    socket.setEncoding('utf8')
    socket.on('connect', () => socket.write(`${JSON.stringify({ jsonrpc: '2.0', id: 1, method, params })}\n`))
    socket.on('data', (chunk: string) => {
      buffer += chunk
      for (const line of buffer.split('\n').slice(0, -1)) {
        const message = JSON.parse(line) as {
          id?: number
          result?: unknown
          error?: { message: string; data?: { code?: string } }
        }
        if (message.id !== 1) continue
        clearTimeout(timer)
        socket.end()
        if (message.error) fail(message.error.message, message.error.data?.code ?? 'AGENT_REFUSED')
        else resolve(message.result)
        return
      }
      buffer = buffer.slice(buffer.lastIndexOf('\n') + 1)
    })
    socket.on('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer)
      fail(
        `session ${sessionId} takes no answers from here (${error.code ?? error.message}): only a background run (dsh run --bg) serves an attach socket`,
      )
    })
  })
}
