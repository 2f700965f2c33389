// The built `dsh` in a real pseudo-terminal (node-pty), its output fed to a headless xterm so tests
// read the screen a person would see. DSH_HOME is a temp dir; the model is the mock SSE server.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { AnySessionEvent } from '@dsh/session'
import { type MockLlmServer, startMockLlmServer } from '@dsh/test-support'
import { type IPty, spawn } from '@lydell/node-pty'
import xterm from '@xterm/headless'
import { bin, dshNode } from '../dsh-child.js'

export interface Screen {
  readonly pty: IPty
  /** The visible rows, trailing spaces trimmed. */
  text(): string
  /** Visible rows plus the scrollback. */
  all(): string
  /** Every byte the program wrote. */
  raw(): string
  /** Resolves once `pattern` is on the screen (scrollback included); rejects after `ms` naming what is there. */
  waitFor(pattern: string | RegExp, ms?: number): Promise<void>
  type(data: string): void
  /** Types `data`, then waits for `pattern` on the screen. */
  press(data: string, pattern: string | RegExp, ms?: number): Promise<void>
  resize(cols: number, rows: number): void
  /** The exit code, once the process ended. */
  exited: Promise<number>
}

export interface Fixture {
  home: string
  work: string
  server: MockLlmServer
  open(args?: string[], options?: { cols?: number; rows?: number; env?: Record<string, string> }): Screen
  /** The durable log of the session `id` (or the only session), checksum members dropped. */
  log(id?: string): AnySessionEvent[]
  close(): Promise<void>
}

export async function fixture(): Promise<Fixture> {
  const home = mkdtempSync(join(tmpdir(), 'dsh-tui-'))
  const work = join(home, 'work')
  const { mkdirSync } = await import('node:fs')
  mkdirSync(work)
  const server = await startMockLlmServer()
  const screens: Screen[] = []
  const sessionsDir = join(home, 'sessions')
  return {
    home,
    work,
    server,
    open(args = [], options = {}) {
      const screen = openScreen(args, {
        cols: options.cols ?? 100,
        rows: options.rows ?? 30,
        cwd: work,
        env: {
          PATH: process.env.PATH ?? '',
          HOME: home,
          TERM: 'xterm-256color',
          DSH_HOME: home,
          DEEPSEEK_API_KEY: 'sk-test',
          DEEPSEEK_BASE_URL: server.url,
          ...options.env,
        },
      })
      screens.push(screen)
      return screen
    },
    log(id) {
      const files = readdirSync(sessionsDir).filter((name) => name.endsWith('.jsonl'))
      const file = id ? `${id}.jsonl` : files.length === 1 ? files[0] : undefined
      if (!file) throw new Error(`expected one session in ${sessionsDir}, found ${files.join(', ')}`)
      const [, ...events] = readFileSync(join(sessionsDir, file), 'utf8')
        .trim()
        .split('\n')
        .map((line) => {
          const { crc: _crc, hash: _hash, ...value } = JSON.parse(line)
          return value
        })
      return events as AnySessionEvent[]
    },
    async close() {
      for (const screen of screens) {
        try {
          screen.pty.kill('SIGKILL')
        } catch {
          // already gone
        }
      }
      await server.close()
      rmSync(home, { recursive: true, force: true })
    },
  }
}

function openScreen(
  args: string[],
  options: { cols: number; rows: number; cwd: string; env: Record<string, string> },
): Screen {
  const term = new xterm.Terminal({ cols: options.cols, rows: options.rows, allowProposedApi: true, scrollback: 5000 })
  const pty = spawn(dshNode, [bin, ...args], {
    name: 'xterm-256color',
    cols: options.cols,
    rows: options.rows,
    cwd: options.cwd,
    env: options.env,
  })
  let raw = ''
  let pending = Promise.resolve()
  pty.onData((data) => {
    raw += data
    // xterm parses asynchronously; chain writes so reads see everything written so far.
    pending = pending.then(() => new Promise<void>((done) => term.write(data, done)))
  })
  // Resolves once the last output is on the headless screen too.
  const exited = new Promise<number>((resolve) =>
    pty.onExit(({ exitCode }) => {
      setTimeout(() => void pending.then(() => resolve(exitCode)), 50)
    }),
  )
  const rows = (from: number, to: number) => {
    const buffer = term.buffer.active
    const lines: string[] = []
    for (let y = from; y < to; y++) lines.push(buffer.getLine(y)?.translateToString(true) ?? '')
    return lines.join('\n')
  }
  const text = () => rows(term.buffer.active.viewportY, term.buffer.active.viewportY + term.rows)
  const all = () => rows(0, term.buffer.active.length)
  return {
    pty,
    text,
    all,
    raw: () => raw,
    async waitFor(pattern, ms = 20_000) {
      const deadline = Date.now() + ms
      const matches = () => {
        const screen = all()
        return typeof pattern === 'string' ? screen.includes(pattern) : pattern.test(screen)
      }
      while (Date.now() < deadline) {
        await pending
        if (matches()) return
        await new Promise((done) => setTimeout(done, 25))
      }
      throw new Error(`timed out waiting for ${String(pattern)}; the screen shows:\n${text()}`)
    },
    type: (data) => pty.write(data),
    press(data, pattern, ms) {
      pty.write(data)
      return this.waitFor(pattern, ms)
    },
    resize(cols, rows) {
      pty.resize(cols, rows)
      term.resize(cols, rows)
    },
    exited,
  }
}

/** Bells the program rang itself: BEL characters outside OSC sequences (which a BEL may end). */
export function ownBells(raw: string): number {
  let count = 0
  for (let i = 0; i < raw.length; i++) {
    if (raw[i] === '\x1b' && raw[i + 1] === ']') {
      // Skip the OSC sequence up to its terminator: BEL, or ESC backslash.
      for (i += 2; i < raw.length && raw[i] !== '\x07' && !(raw[i] === '\x1b' && raw[i + 1] === '\\'); i++);
      if (raw[i] === '\x1b') i++
    } else if (raw[i] === '\x07') count++
  }
  return count
}
