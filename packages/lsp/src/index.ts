// @dsh/lsp: the language-server seam `ctx.lsp`. Callers ask about a file of a workspace; the provider
// decides which server handles it, starts that server on first use, keeps the file in sync with disk,
// and answers in model-friendly shapes: paths relative to the workspace, 1-based lines and columns.
// Provider: `@dsh/lsp/stdio` (servers as child processes over stdio). Consumer: `@dsh/lsp/tools`.
import type { JsonValue } from '@dsh/kernel'

declare module 'cordis' {
  interface Context {
    lsp: LanguageServers
  }
  interface Events {
    /** A language server is starting for a workspace (surfaces show it: a cold start takes seconds). */
    'lsp/starting'(server: { server: string; root: string }): void
    /** It answered its initialize: questions about its files are answered from now on. */
    'lsp/ready'(server: { server: string; root: string }): void
  }
}

/** A place in a file: 1-based line and column (what `read` shows and editors use). */
export interface LspLocation {
  /** Relative to the workspace root when inside it, else absolute. */
  path: string
  line: number
  column: number
}

export type LspSeverity = 'error' | 'warning' | 'info' | 'hint'

export interface LspDiagnostic extends LspLocation {
  severity: LspSeverity
  message: string
  /** Who reported it (`typescript`, `Pyright`...) and its code, when the server says. */
  source?: string
  code?: Extract<JsonValue, string | number>
}

export interface LspSymbol extends LspLocation {
  name: string
  /** `function`, `class`, `method`, `variable`... */
  kind: string
  container?: string
}

/**
 * Every answer names the server that gave it, and carries `notes`: one-line facts the model should
 * know (a server restarted after a crash, a server binary is not installed, diagnostics still pending).
 * `server` is undefined when no configured server handles the file: then the answer is empty.
 */
export interface LspAnswer<T> {
  server?: string
  /** False when the server could not answer (missing, crashed, timed out): `value` is then empty. */
  answered: boolean
  value: T
  notes: string[]
  /** Diagnostics that arrived since for files an earlier answer said were still coming. */
  earlier?: Array<{ path: string; diagnostics: LspDiagnostic[] }>
}

/** Which workspace and file a question is about. `path` may be relative to `root`. */
export interface LspTarget {
  /** Absolute workspace root (the session's cwd): one server per root and language. */
  root: string
  path: string
  /** The session asking: a server is shut down when no session that used it is open anymore. */
  sessionId?: string
  signal?: AbortSignal
}

export interface LspPositionTarget extends LspTarget {
  line: number
  column: number
}

/** A running (or failed) server, for status displays and tests. */
export interface LspServerStatus {
  root: string
  server: string
  state: 'starting' | 'ready' | 'restarting' | 'missing' | 'failed' | 'stopped'
  pid?: number
  restarts: number
}

/** The seam. Methods never throw for server trouble: that becomes `notes` and an empty value. */
export interface LanguageServers {
  /** Whether some configured server handles this file (by extension). */
  handles(path: string): boolean
  /**
   * The file's diagnostics after its current content on disk reached the server, errors first.
   * Waits up to the provider's bound for the server to publish; a late server gives a note.
   */
  diagnostics(target: LspTarget): Promise<LspAnswer<LspDiagnostic[]>>
  definition(target: LspPositionTarget): Promise<LspAnswer<LspLocation[]>>
  references(target: LspPositionTarget): Promise<LspAnswer<LspLocation[]>>
  /** Hover text (type signature and docs) as plain text or markdown. */
  hover(target: LspPositionTarget): Promise<LspAnswer<string | undefined>>
  documentSymbols(target: LspTarget): Promise<LspAnswer<LspSymbol[]>>
  /** Symbols matching `query` across the workspace of the server that handles `target.path`. */
  workspaceSymbols(target: LspTarget & { query: string }): Promise<LspAnswer<LspSymbol[]>>
  status(): LspServerStatus[]
}

const ORDER: Record<LspSeverity, number> = { error: 0, warning: 1, info: 2, hint: 3 }

/** Errors first, then by line and column. Returns a new array. */
export function sortDiagnostics(items: readonly LspDiagnostic[]): LspDiagnostic[] {
  return [...items].sort((a, b) => ORDER[a.severity] - ORDER[b.severity] || a.line - b.line || a.column - b.column)
}

/** `path:line:column` as the model reads it. */
export const where = (at: LspLocation) => `${at.path}:${at.line}:${at.column}`
