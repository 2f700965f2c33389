// @dsh/world/terminal: the persistent-terminal seam `ctx.terminals`. A terminal is a pseudo-terminal running
// a command (a shell, a REPL, a dev server) that outlives one tool call: the model writes keystrokes,
// reads what is new or what the screen shows, and closes it. Terminals belong to the session that
// opened them (only that session sees them) and die with it. Provider: `@dsh/world/terminal/pty`.
import type {} from '@dsh/kernel'

declare module 'cordis' {
  interface Context {
    terminals: Terminals
  }
}

/** Who may use a terminal: the session (and agent) that opened it. */
export interface TerminalOwner {
  sessionId?: string
  agentId?: string
}

export interface TerminalOpenRequest extends TerminalOwner {
  /** A shell command line (run by bash, confined like the bash tool). Default: an interactive bash. */
  command?: string
  /** Absolute working directory. */
  cwd: string
  cols?: number
  rows?: number
}

export interface TerminalInfo {
  id: string
  command: string
  cwd: string
  pid: number
  status: 'running' | 'exited'
  exitCode?: number
  signal?: number
  /** Output bytes so far. */
  totalBytes: number
}

export interface TerminalReadOptions {
  /** `new`: output since the last read (escape codes removed). `screen`: the visible screen now. */
  view: 'new' | 'screen'
  /** Wait up to this long for output (new: any new output, or `until`). Default 0. */
  waitMs?: number
  /** With `waitMs`: stop waiting as soon as the new output matches this regular expression. */
  until?: string
  /** Cap of the returned text (the tail is kept). Default 16000. */
  maxBytes?: number
}

export interface TerminalRead {
  info: TerminalInfo
  text: string
  /** Bytes of new output left out by `maxBytes` (the complete output is in `spillPath`). */
  omitted: number
  /** The file holding the terminal's complete output, once it outgrew memory. */
  spillPath?: string
  /** `until` matched before the wait ended. */
  matched?: boolean
}

/**
 * The seam. Every method but `open` takes the owner: another session's terminal reads as unknown
 * (`TERMINAL_NOT_FOUND`). `open` rejects with `TERMINAL_LIMIT` past the per-session limit and with
 * the sandbox's error when the command cannot be confined.
 */
export interface Terminals {
  open(request: TerminalOpenRequest): Promise<TerminalInfo>
  /** Sends text as typed (use `\r` for Enter, `\u0003` for Ctrl-C). */
  write(id: string, owner: TerminalOwner, data: string): TerminalInfo
  read(id: string, owner: TerminalOwner, options: TerminalReadOptions): Promise<TerminalRead>
  /** Ends the terminal's whole process tree; resolves once it is gone. Idempotent. */
  close(id: string, owner: TerminalOwner): Promise<TerminalInfo>
  list(owner: TerminalOwner): TerminalInfo[]
}
