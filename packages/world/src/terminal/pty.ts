// @dsh/world/terminal/pty: the provider of `ctx.terminals` on node-pty. The command runs through bash inside
// the same sandbox and policy as the bash tool (`ctx.sandbox.confine` with the session's
// `ctx.sandboxPolicy`; without an OS sandbox the open fails closed), under dsh's containment prefix,
// with secrets scrubbed from its environment. A headless xterm keeps the screen; the raw output is kept
// as a bounded tail in memory and in full in a private spill file. A session's terminals are closed when
// it closes, all of them when the row is disposed.
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type Context, HarnessError, Service } from '@dsh/kernel'
import type {} from '@dsh/session'
import type { IPty } from '@lydell/node-pty'
import type xtermModule from '@xterm/headless'
import type {} from '../sandbox/index.js'
import { scrubEnv } from '../subprocess/index.js'
import type {
  TerminalInfo,
  TerminalOpenRequest,
  TerminalOwner,
  TerminalRead,
  TerminalReadOptions,
  Terminals,
} from './index.js'

// The headless screen (about 90 ms of CPU to load) only when the first terminal opens.
const require = createRequire(import.meta.url)
let xtermLoaded: typeof xtermModule | undefined
const xterm = (): typeof xtermModule => (xtermLoaded ??= require('@xterm/headless') as typeof xtermModule)

/**
 * node-pty (as @lydell/node-pty: the same library with prebuilt binaries per platform, so no compiler at
 * install) is an optional dependency: loaded on the first open.
 */
function loadNodePty(): typeof import('@lydell/node-pty') {
  try {
    return require('@lydell/node-pty') as typeof import('@lydell/node-pty')
  } catch (error) {
    throw new HarnessError(
      'DEPENDENCY_MISSING',
      `terminals need @lydell/node-pty, which is not installed or has no binary for this platform (${(error as Error).message.split('\n')[0]}); install it next to dsh (npm install @lydell/node-pty@1.1.0 in the directory that holds @dsh/world), or disable the terminal row`,
      { dependency: '@lydell/node-pty' },
    )
  }
}
export interface PtyTerminalsConfig {
  /** Terminals open at once per session. Default 4. */
  maxPerSession?: number
  /** Output kept in memory per terminal (the tail). Default 1 MiB. */
  memoryBytes?: number
  /** SIGTERM -> SIGKILL grace when closing. Default 1000. */
  graceMs?: number
}

// CSI sequences, OSC strings (ended by BEL or ST), charset selections and single-character escapes.
const ESC = '\\u001b'
const ESCAPES = new RegExp(
  `${ESC}\\[[0-?]*[ -/]*[@-~]|${ESC}\\][^\\u0007${ESC}]*(?:\\u0007|${ESC}\\\\)|${ESC}[()][0-9A-Za-z]|${ESC}[=>78NOM]`,
  'g',
)

/** Output as text a model reads: escape sequences removed, CRLF as LF, lone CRs dropped. */
export function plainText(raw: string): string {
  return raw.replace(ESCAPES, '').replace(/\r+\n/g, '\n').replace(/\r/g, '')
}

interface Live {
  info: TerminalInfo
  owner: TerminalOwner
  pty: IPty
  screen: InstanceType<typeof xtermModule.Terminal>
  /** Raw output tail in memory; `base` is the absolute offset of its first character. */
  tail: string
  base: number
  /** Absolute offset up to which `new` reads have consumed. */
  cursor: number
  spill: string
  exited: Promise<void>
  listeners: Set<() => void>
}

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms))

export class PtyTerminals extends Service implements Terminals {
  static readonly provide = 'terminals'
  static readonly inject = ['sandbox', 'sandboxPolicy', 'sessions']
  // TS-private, not #private: Cordis hands callers a proxy of the service.
  private readonly live = new Map<string, Live>()
  private readonly settings: Required<PtyTerminalsConfig>
  private spillRoot: string | undefined
  private seq = 0

  constructor(ctx: Context, config: PtyTerminalsConfig = {}) {
    super(ctx, 'terminals')
    this.settings = {
      maxPerSession: config?.maxPerSession ?? 4,
      memoryBytes: config?.memoryBytes ?? 1_048_576,
      graceMs: config?.graceMs ?? 1000,
    }
    ctx.on('session/closed', (session) => {
      for (const term of this.live.values()) {
        if (term.owner.sessionId === session.id) void this.end(term)
      }
    })
    ctx.effect(
      () => () =>
        Promise.all([...this.live.values()].map((term) => this.end(term))).then(() => {
          if (this.spillRoot) rmSync(this.spillRoot, { recursive: true, force: true })
        }),
      'terminals.live',
    )
  }

  async open(request: TerminalOpenRequest): Promise<TerminalInfo> {
    const mine = [...this.live.values()].filter((term) => term.owner.sessionId === request.sessionId)
    if (mine.filter((term) => term.info.status === 'running').length >= this.settings.maxPerSession) {
      throw new HarnessError(
        'TERMINAL_LIMIT',
        `this session already has ${this.settings.maxPerSession} running terminals; close one first (terminal_close)`,
        { limit: this.settings.maxPerSession },
      )
    }
    const command = request.command?.trim() || 'bash -i'
    const policy = this.ctx.sandboxPolicy.resolve(request.sessionId)
    const confined = await this.ctx.sandbox.confine(['bash', '-c', command], policy, { cwd: request.cwd })
    const prefix = (await this.ctx.get('subprocess')?.containment())?.prefix ?? []
    const [file, ...args] = [...prefix, ...confined] as [string, ...string[]]
    const cols = request.cols ?? 120
    const rows = request.rows ?? 30
    const pty = loadNodePty().spawn(file, args, {
      name: 'xterm-256color',
      cols,
      rows,
      cwd: request.cwd,
      env: { ...scrubEnv(process.env), TERM: 'xterm-256color' },
    })
    this.spillRoot ??= mkdtempSync(join(tmpdir(), 'dsh-terminals-'))
    const id = `term-${++this.seq}`
    const term: Live = {
      info: { id, command, cwd: request.cwd, pid: pty.pid, status: 'running', totalBytes: 0 },
      owner: { sessionId: request.sessionId, agentId: request.agentId },
      pty,
      screen: new (xterm().Terminal)({ cols, rows, allowProposedApi: true }),
      tail: '',
      base: 0,
      cursor: 0,
      spill: join(this.spillRoot, `${id}.log`),
      exited: Promise.resolve(),
      listeners: new Set(),
    }
    term.exited = new Promise((resolve) => {
      // node-pty may report the exit before the last output: give that output a moment to arrive.
      pty.onExit(({ exitCode, signal }) =>
        setTimeout(() => {
          term.info = { ...term.info, status: 'exited', exitCode, ...(signal ? { signal } : {}) }
          for (const wake of term.listeners) wake()
          resolve()
        }, 100),
      )
    })
    pty.onData((data) => {
      term.screen.write(data)
      term.tail += data
      term.info = { ...term.info, totalBytes: term.info.totalBytes + Buffer.byteLength(data) }
      appendFileSync(term.spill, data, { mode: 0o600 })
      if (term.tail.length > this.settings.memoryBytes) {
        const cut = term.tail.length - this.settings.memoryBytes
        term.tail = term.tail.slice(cut)
        term.base += cut
      }
      for (const wake of term.listeners) wake()
    })
    this.live.set(id, term)
    return term.info
  }

  write(id: string, owner: TerminalOwner, data: string): TerminalInfo {
    const term = this.find(id, owner)
    if (term.info.status !== 'running') {
      throw new HarnessError(
        'TERMINAL_EXITED',
        `terminal ${id} has exited (code ${term.info.exitCode}); open a new one`,
        { id },
      )
    }
    term.pty.write(data)
    return term.info
  }

  async read(id: string, owner: TerminalOwner, options: TerminalReadOptions): Promise<TerminalRead> {
    const term = this.find(id, owner)
    const until = options.until === undefined ? undefined : new RegExp(options.until)
    const end = Date.now() + (options.waitMs ?? 0)
    const fresh = () => plainText(term.tail.slice(Math.max(0, term.cursor - term.base)))
    let matched = false
    for (;;) {
      const text = fresh()
      if (until?.test(text)) {
        matched = true
        break
      }
      const left = end - Date.now()
      if (left <= 0 || term.info.status !== 'running') break
      if (!until && text !== '' && options.view === 'new') break
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer)
          term.listeners.delete(soon)
          resolve()
        }
        // Output arrives in bursts: after a chunk, a moment more usually completes the line.
        const soon = () => setTimeout(wake, 50)
        const timer = setTimeout(wake, left)
        term.listeners.add(soon)
      })
    }
    const max = options.maxBytes ?? 16_000
    // Output that left memory before anyone read it (it is still in the spill file).
    const lost = options.view === 'new' && term.cursor < term.base ? term.base - term.cursor : 0
    let text: string
    if (options.view === 'screen') {
      await new Promise<void>((resolve) => term.screen.write('', resolve))
      text = screenText(term.screen)
    } else {
      text = fresh()
      term.cursor = term.base + term.tail.length
    }
    let omitted = lost
    if (Buffer.byteLength(text) > max) {
      const cut = text.length - max
      omitted += Buffer.byteLength(text.slice(0, cut))
      text = text.slice(cut)
    }
    return {
      info: term.info,
      text,
      omitted,
      ...(omitted > 0 ? { spillPath: term.spill } : {}),
      ...(until ? { matched } : {}),
    }
  }

  async close(id: string, owner: TerminalOwner): Promise<TerminalInfo> {
    const term = this.find(id, owner)
    await this.end(term)
    return term.info
  }

  list(owner: TerminalOwner): TerminalInfo[] {
    return [...this.live.values()].filter((term) => owns(term, owner)).map((term) => term.info)
  }

  /** SIGHUP/SIGTERM to the process group, SIGKILL after the grace; resolves once the pty exited. */
  private async end(term: Live): Promise<void> {
    const group = (signal: NodeJS.Signals) => {
      try {
        process.kill(-term.pty.pid, signal)
      } catch {
        // already gone
      }
    }
    if (term.info.status === 'running') {
      group('SIGHUP')
      group('SIGTERM')
      await Promise.race([term.exited, sleep(this.settings.graceMs)])
      if (term.info.status === 'running') group('SIGKILL')
      await Promise.race([term.exited, sleep(this.settings.graceMs)])
    }
    term.screen.dispose()
  }

  private find(id: string, owner: TerminalOwner): Live {
    const term = this.live.get(id)
    if (!term || !owns(term, owner)) {
      throw new HarnessError('TERMINAL_NOT_FOUND', `no terminal ${id} in this session; terminal_open starts one`, {
        id,
      })
    }
    return term
  }
}

function owns(term: Live, owner: TerminalOwner): boolean {
  return term.owner.sessionId === owner.sessionId
}

/** The visible screen as text, trailing blanks trimmed. */
function screenText(screen: InstanceType<typeof xtermModule.Terminal>): string {
  const buffer = screen.buffer.active
  const lines: string[] = []
  for (let row = 0; row < screen.rows; row++) {
    lines.push(buffer.getLine(buffer.viewportY + row)?.translateToString(true) ?? '')
  }
  while (lines.length > 0 && lines.at(-1) === '') lines.pop()
  return lines.join('\n')
}

export default PtyTerminals
