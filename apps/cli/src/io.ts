// The process edges the commands use, injectable so commands stay testable in-process.
import type { LogRecord } from '@dsh/composition'
import { ExitCode } from './exit-codes.js'

export interface Io {
  out(line: string): void
  err(line: string): void
  /** Kernel log records (plugin failures); shown when they are errors or when DSH_DEBUG is set. */
  log(record: LogRecord): void
  /** Resolves with the exit code for the first SIGINT/SIGTERM. */
  untilSignal(): Promise<number>
  /** Calls `handler` on every SIGINT/SIGTERM until the returned function is called. */
  onSignal(handler: (signal: 'SIGINT' | 'SIGTERM') => void): () => void
  /** Ends the process at once (a second Ctrl-C). */
  forceExit(code: number): never
  stdin: NodeJS.ReadableStream
  stderrIsTty: boolean
}

/** The whole of a stream as text (a task, a bundle or a diff piped to `-`). */
export async function readAllText(stream: NodeJS.ReadableStream): Promise<string> {
  let text = ''
  for await (const chunk of stream) text += chunk.toString()
  return text
}

/**
 * A reader that went away (`dsh sessions ls | head -1`) is not an error: further output is dropped; a
 * command that handles SIGTERM (one with a session) is told as if it had been sent one, so it cancels
 * and flushes; any other command ends at once with exit code 0, as Unix tools do on SIGPIPE.
 */
function closedStdout(): () => boolean {
  let closed = false
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error
    if (closed) return
    closed = true
    if (process.listenerCount('SIGTERM') > 0) process.emit('SIGTERM', 'SIGTERM')
    else process.exit(0)
  })
  return () => closed
}

export function processIo(env = process.env): Io {
  const debug = env.DSH_DEBUG === '1'
  const stdoutClosed = closedStdout()
  return {
    out: (line) => {
      if (!stdoutClosed()) process.stdout.write(`${line}\n`)
    },
    err: (line) => process.stderr.write(`${line}\n`),
    log: (record) => {
      if (!debug && record.level !== 'error') return
      const detail = debug && record.error instanceof Error ? `\n${record.error.stack}` : ''
      process.stderr.write(`dsh: [${record.name}] ${record.level}: ${record.text}${detail}\n`)
    },
    untilSignal: () =>
      new Promise((resolve) => {
        process.once('SIGINT', () => resolve(ExitCode.SIGINT))
        process.once('SIGTERM', () => resolve(ExitCode.SIGTERM))
      }),
    onSignal: (handler) => {
      const onInt = () => handler('SIGINT')
      const onTerm = () => handler('SIGTERM')
      process.on('SIGINT', onInt)
      process.on('SIGTERM', onTerm)
      return () => {
        process.off('SIGINT', onInt)
        process.off('SIGTERM', onTerm)
      }
    },
    forceExit: (code) => {
      if (process.stdin.isTTY && process.stdin.isRaw) process.stdin.setRawMode(false)
      process.exit(code)
    },
    stdin: process.stdin,
    stderrIsTty: Boolean(process.stderr.isTTY),
  }
}
