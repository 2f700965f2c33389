// @dsh/world/fs: the file seam `ctx.fs`. Paths are resolved against a cwd (a default for relative paths,
// never containment). Writes are versioned and published atomically; a literal edit runs its version
// check, match and rewrite in one critical section. Failures throw `HarnessError` with an `FS_*` code
// that model-facing tools turn into actionable results.
import { HarnessError } from '@dsh/kernel'
import type { SandboxPolicy } from '../sandbox/index.js'

declare module 'cordis' {
  interface Context {
    fs: FileSystem
  }
  interface Events {
    /** A model-facing read saw `path` at `version` (the observation policy records it). */
    'fs/observed'(observation: FsObservation): void
    /**
     * Before a model-facing write or edit. Listeners may return a refusal or a version to guard the
     * mutation with; return `next()` to defer. The innermost default allows without a guard.
     */
    'fs/mutation-intent'(intent: FsMutationIntent, next: () => Promise<FsMutationDecision>): Promise<FsMutationDecision>
    /** After a model-facing write or edit committed `version` (observers refresh their record). */
    'fs/mutated'(observation: FsObservation): void
  }
}

/** An opaque content version: equal versions mean equal bytes. */
export type FileVersion = string & { readonly __fileVersion: unique symbol }

export interface FsObservation {
  sessionId?: string
  /** Absolute path as resolved by `ctx.fs.resolvePath`. */
  path: string
  version: FileVersion
}

export interface FsMutationIntent {
  sessionId?: string
  path: string
  kind: 'write' | 'edit'
  /** The file's current version, or `undefined` when it does not exist. */
  current: FileVersion | undefined
}

export type FsMutationDecision =
  | { action: 'allow'; expectedVersion?: FileVersion }
  | { action: 'deny'; code: string; message: string }

/** Options every call may carry. */
export interface FsCallOptions {
  /** Relative paths resolve against this (default: the provider's cwd). */
  cwd?: string
  /** The session the call belongs to (selects its sandbox policy). */
  sessionId?: string
  /** A per-call policy (an approved escalation) instead of the session's. */
  policy?: SandboxPolicy
  signal?: AbortSignal
}

export interface TextFile {
  path: string
  text: string
  version: FileVersion
  /** Size in bytes. */
  size: number
}

export interface FileStat {
  path: string
  kind: 'file' | 'directory' | 'symlink' | 'other'
  size: number
  mtimeMs: number
}

export interface DirEntry {
  name: string
  kind: FileStat['kind']
}

/**
 * How a write treats an existing file: `createIfAbsent` fails with `FS_EXISTS` when there is one;
 * `replaceIfVersion` fails with `FS_VERSION_CONFLICT` unless the file is exactly at `version` (or,
 * with `version: null`, absent); `overwrite` writes whatever is there.
 */
export type WriteMode =
  | { kind: 'createIfAbsent' }
  | { kind: 'replaceIfVersion'; version: FileVersion | null }
  | { kind: 'overwrite' }

export interface WriteResult {
  path: string
  version: FileVersion
  created: boolean
  /** The previous text, when the file existed and was valid text. */
  previous?: string
}

export interface LiteralEdit {
  oldText: string
  newText: string
  /** Replace every occurrence; otherwise `oldText` must occur exactly once. */
  replaceAll?: boolean
}

export interface EditResult {
  path: string
  before: string
  after: string
  version: FileVersion
  replacements: number
}

export interface GlobOptions extends FsCallOptions {
  /** Include files ignored by .gitignore (default false; `.git` is always skipped). */
  includeIgnored?: boolean
  /** Stop after this many matches (default 1000). */
  limit?: number
}

export interface GlobResult {
  /** Paths relative to the search root, sorted by modification time, newest first. */
  paths: string[]
  truncated: boolean
}

export interface GrepOptions extends GlobOptions {
  /** Only files whose relative path matches this glob. */
  include?: string
  ignoreCase?: boolean
  /** Stop after this many matching lines (default 200). */
  limit?: number
}

export interface GrepMatch {
  /** Relative to the search root. */
  path: string
  line: number
  text: string
}

export interface GrepResult {
  matches: GrepMatch[]
  truncated: boolean
  filesSearched: number
}

/** The seam. Providers: `@dsh/world/fs/local`, `@dsh/world/fs/sandbox` (local plus the sandbox policy's write fence). */
export interface FileSystem {
  /** The absolute path `path` names (relative to `options.cwd` or the provider's cwd). */
  resolvePath(path: string, options?: FsCallOptions): string
  /** UTF-8 text. `FS_NOT_FOUND`, `FS_IS_DIRECTORY`, `FS_NOT_TEXT` (invalid UTF-8 or NUL), `FS_TOO_LARGE`. */
  readText(path: string, options?: FsCallOptions & { maxBytes?: number }): Promise<TextFile>
  /** At most `maxBytes` bytes from the start (required: there is no unbounded byte read). */
  readBytes(
    path: string,
    options: FsCallOptions & { maxBytes: number },
  ): Promise<{ bytes: Uint8Array; size: number; truncated: boolean }>
  /** `undefined` when nothing is there. Does not follow a final symlink. */
  stat(path: string, options?: FsCallOptions): Promise<FileStat | undefined>
  /** Entries sorted by name. `FS_NOT_FOUND`, `FS_NOT_DIRECTORY`. */
  list(path: string, options?: FsCallOptions): Promise<DirEntry[]>
  /** The version of the file now, or `undefined` when absent. */
  version(path: string, options?: FsCallOptions): Promise<FileVersion | undefined>
  /** Atomic publish (temp file + rename); creates parent directories. See `WriteMode` for the guards. */
  writeText(path: string, text: string, mode: WriteMode, options?: FsCallOptions): Promise<WriteResult>
  /**
   * Applies literal edits in order, in one critical section with the version check (`expectedVersion`)
   * and the rewrite: of two concurrent edits of the same text, exactly one wins. `FS_EDIT_NO_MATCH`,
   * `FS_EDIT_AMBIGUOUS` (with `facts.count`), `FS_VERSION_CONFLICT`.
   */
  editText(
    path: string,
    edits: readonly LiteralEdit[],
    options?: FsCallOptions & { expectedVersion?: FileVersion },
  ): Promise<EditResult>
  /** Files under `options.cwd` matching a glob (`**` crosses directories), respecting .gitignore. */
  glob(pattern: string, options?: GlobOptions): Promise<GlobResult>
  /** Lines matching a JavaScript regular expression under `path` (a file or a directory). */
  grep(pattern: string, path: string, options?: GrepOptions): Promise<GrepResult>
}

/** Throws a `HarnessError` with an `FS_*` code; `facts.path` names the file. */
export function fsError(code: string, message: string, facts: Record<string, unknown> = {}): HarnessError {
  return new HarnessError(code, message, facts)
}

/** All codes of the seam, for tools and docs. */
export const FS_ERROR_CODES = [
  'FS_NOT_FOUND',
  'FS_IS_DIRECTORY',
  'FS_NOT_DIRECTORY',
  'FS_NOT_TEXT',
  'FS_TOO_LARGE',
  'FS_EXISTS',
  'FS_VERSION_CONFLICT',
  'FS_EDIT_NO_MATCH',
  'FS_EDIT_AMBIGUOUS',
  'FS_EDIT_INVALID',
  'FS_SANDBOX_DENIED',
  'FS_PROTECTED_PATH',
  'FS_SECRET_DENIED',
  'FS_NOT_OBSERVED',
  'FS_INVALID_PATTERN',
  'FS_IO',
] as const
