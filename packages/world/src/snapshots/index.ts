// @dsh/world/snapshots: the workspace-snapshot seam `ctx.snapshots` that rewind is built on (issue 32).
// A snapshot is what a workspace's files looked like at one moment, named by an opaque id (a tree).
// Snapshots are taken by dsh itself, never by the model, and live outside the workspace: the user's
// own version control is never touched. Provider: `@dsh/world/snapshots/shadow-git` (a shadow git
// repository per workspace under $DSH_HOME; local only, the SSH world disables it).
//
// Codes: SNAPSHOT_UNAVAILABLE (no git, or the store cannot be written), SNAPSHOT_TOO_LARGE (more files
// than the limit; the message says how to exclude or raise it), SNAPSHOT_NOT_FOUND (an id this store
// does not hold), SNAPSHOT_FAILED (git failed; its message is in the error).
import type {} from '@dsh/kernel'

declare module 'cordis' {
  interface Context {
    snapshots: Snapshots
  }
}

/** A file left out of a snapshot because it is larger than the limit (it is never restored either). */
export interface SkippedFile {
  path: string
  bytes: number
}

export interface Snapshot {
  /** Opaque id of the snapshot (same content, same id). */
  id: string
  /** Files captured. */
  files: number
  /** Files over the size limit: not captured, so neither a diff nor a restore ever touches them. */
  skipped: SkippedFile[]
  /** Time it took. */
  ms: number
}

/** One path that differs between two snapshots. Line counts are absent for binary files. */
export interface SnapshotChange {
  path: string
  kind: 'added' | 'modified' | 'deleted'
  added?: number
  removed?: number
}

export interface SnapshotRequest {
  /** Absolute workspace directory. */
  cwd: string
  /** Who takes it: snapshots of one session reuse their own file cache (another session's work never blocks it). */
  sessionId: string
  signal?: AbortSignal
}

export interface RestoreRequest {
  cwd: string
  /** The snapshot to bring the files back to. */
  to: string
  /** Workspace-relative paths (forward slashes). A path absent from `to` is deleted. */
  paths: readonly string[]
  /** Called after each file is in place (crash tests and progress). */
  onFile?: (path: string) => void
}

export interface RestoreResult {
  /** Paths written back. */
  written: string[]
  /** Paths deleted (absent in `to`). */
  deleted: string[]
  /** Paths already as in `to`. */
  unchanged: string[]
}

/** The seam. All paths are workspace-relative with forward slashes. */
export interface Snapshots {
  /** Takes a snapshot of `cwd` now (honouring its .gitignore files). */
  take(request: SnapshotRequest): Promise<Snapshot>
  /** What differs from snapshot `from` to `to` (optionally only under `paths`), with line counts. */
  changes(cwd: string, from: string, to: string, paths?: readonly string[]): Promise<SnapshotChange[]>
  /** A unified diff from `from` to `to` (optionally only `paths`). */
  patch(cwd: string, from: string, to: string, paths?: readonly string[]): Promise<string>
  /**
   * Writes `paths` back as they are in `to`: each file through a temporary file and a rename, so a
   * crash leaves every file either as it was or as restored, never half-written.
   */
  restore(request: RestoreRequest): Promise<RestoreResult>
  /** Writes every file of snapshot `id` of workspace `cwd` into the empty folder `dir` (a scratch copy). */
  materialize(cwd: string, id: string, dir: string): Promise<void>
  /**
   * The snapshots `ids` of `cwd` as one self-contained blob another store's `unpack` takes (what a
   * session bundle carries to another machine). Optional: a provider without it cannot carry checkpoints.
   */
  pack?(cwd: string, ids: readonly string[]): Promise<Buffer>
  /** Adds the snapshots of a `pack` blob to the store of `cwd`; returns the ids it now holds from it. */
  unpack?(cwd: string, blob: Buffer, ids: readonly string[]): Promise<string[]>
}
