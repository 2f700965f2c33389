// @dsh/world/snapshots/shadow-git: the provider of `ctx.snapshots`. One bare git repository per
// workspace under `$DSH_HOME/checkpoints/<hash of the path>`, driven with `--work-tree` pointed at
// the workspace, so the workspace's .gitignore files are honoured while its own `.git` (if any) is
// never read or written. Each session stages into its own index file: git's stat cache makes the next
// snapshot cost a directory scan, and two sessions never wait on one index lock.
//
// The git configuration is dsh's alone (no system or global file): a checkout's .gitattributes can
// name filter drivers, but none is defined, so snapshotting a strange repository runs no code of it.
import { type ChildProcess, spawn } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import {
  chmod,
  copyFile,
  lstat,
  mkdir,
  readdir,
  readFile,
  readlink,
  realpath,
  rename,
  rm,
  rmdir,
  symlink,
  writeFile,
} from 'node:fs/promises'
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path'
import type {} from '@dsh/composition'
import { launcherHome } from '@dsh/composition/launcher'
import { type Context, HarnessError, Service } from '@dsh/kernel'
import type {
  RestoreRequest,
  RestoreResult,
  SkippedFile,
  Snapshot,
  SnapshotChange,
  SnapshotRequest,
  Snapshots,
} from './index.js'

export interface ShadowGitConfig {
  /** Where the shadow repositories live (default `$DSH_HOME/checkpoints`). */
  dir?: string
  /** Most files a workspace may have for snapshots (not counting ignored ones). Default 50,000. */
  maxFiles?: number
  /** Files larger than this are not captured (named in the snapshot's `skipped`). Default 10 MiB. */
  maxFileBytes?: number
  /** A git command that runs longer is stopped. Default 60 s. */
  timeoutMs?: number
}

/** Per-session index files kept per workspace (older ones are seeded again when their session returns). */
const KEPT_INDEXES = 16

const EMPTY_TREE = '4b825dc642cb6eb9a060e54bf8d69288fbee4904'

interface GitResult {
  stdout: Buffer
  stderr: string
}

/** Runs git with `env`; rejects with SNAPSHOT_FAILED (or SNAPSHOT_UNAVAILABLE when git is missing). */
function git(
  args: string[],
  env: NodeJS.ProcessEnv,
  options: { input?: Buffer | string; timeoutMs: number; signal?: AbortSignal; limit?: (bytes: number) => boolean },
): Promise<GitResult> {
  return new Promise((resolve, reject) => {
    let child: ChildProcess
    try {
      child = spawn('git', args, { env, stdio: ['pipe', 'pipe', 'pipe'], signal: options.signal })
    } catch (error) {
      reject(error)
      return
    }
    const out: Buffer[] = []
    let outBytes = 0
    let err = ''
    let stopped: HarnessError | undefined
    const timer = setTimeout(() => {
      stopped = new HarnessError('SNAPSHOT_FAILED', `git ${args[0]} took longer than ${options.timeoutMs} ms`, {})
      child.kill('SIGKILL')
    }, options.timeoutMs)
    child.stdout?.on('data', (chunk: Buffer) => {
      out.push(chunk)
      outBytes += chunk.length
      if (options.limit && !stopped && !options.limit(outBytes)) {
        stopped = new HarnessError('SNAPSHOT_TOO_LARGE', 'stopped', {})
        child.kill('SIGKILL')
      }
    })
    child.stderr?.on('data', (chunk: Buffer) => {
      if (err.length < 8192) err += chunk.toString('utf8')
    })
    child.on('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer)
      if (error.code === 'ENOENT')
        reject(
          new HarnessError(
            'SNAPSHOT_UNAVAILABLE',
            'checkpoints need git, which is not on PATH (install git; without it rewind keeps the conversation only)',
            {},
          ),
        )
      else reject(error)
    })
    child.on('close', (code) => {
      clearTimeout(timer)
      if (stopped) reject(stopped)
      else if (code === 0) resolve({ stdout: Buffer.concat(out), stderr: err })
      else
        reject(
          new HarnessError('SNAPSHOT_FAILED', `git ${args[0]} failed (exit ${code}): ${err.trim().split('\n')[0]}`, {
            exitCode: code ?? -1,
          }),
        )
    })
    child.stdin?.on('error', () => {})
    child.stdin?.end(options.input ?? '')
  })
}

function nulList(buffer: Buffer): string[] {
  const text = buffer.toString('utf8')
  return text ? text.split('\0').filter(Boolean) : []
}

function countNul(buffer: Buffer): number {
  let count = 0
  for (const byte of buffer) if (byte === 0) count++
  return count
}

/** A workspace-relative path with forward slashes that stays inside the workspace. */
function safeRelative(path: string): string {
  const parts = path.split('/')
  if (path.startsWith('/') || parts.some((part) => part === '..' || part === '' || part === '.git'))
    throw new HarnessError('SNAPSHOT_FAILED', `refusing to restore "${path}": not a plain path inside the workspace`, {
      path,
    })
  return path
}

interface TreeEntry {
  mode: string
  oid: string
}

export class ShadowGitSnapshots extends Service implements Snapshots {
  private readonly _dir: string
  /** `$DSH_HOME`: never part of a snapshot (sessions, the checkpoints themselves) when inside a workspace. */
  private readonly _home: string
  private readonly _maxFiles: number
  private readonly _maxFileBytes: number
  private readonly _timeoutMs: number
  /** Shadow repository per workspace, initialised once per process. */
  private readonly _repos = new Map<string, Promise<string>>()
  /** Files in each index after its last snapshot (for the total-files limit). */
  private readonly _indexed = new Map<string, number>()
  private readonly _abort = new AbortController()

  constructor(ctx: Context, config: ShadowGitConfig = {}) {
    super(ctx, 'snapshots')
    const home = launcherHome(ctx)
    this._dir = config.dir || join(home, 'checkpoints')
    this._home = home
    this._maxFiles = config.maxFiles ?? 50_000
    this._maxFileBytes = config.maxFileBytes ?? 10 * 1024 * 1024
    this._timeoutMs = config.timeoutMs ?? 60_000
    ctx.effect(() => () => this._abort.abort())
  }

  /** The shadow repository of `cwd`, created on first use. */
  private async _repo(cwd: string): Promise<string> {
    const real = await realpath(cwd)
    let repo = this._repos.get(real)
    if (!repo) {
      repo = this._init(real)
      this._repos.set(real, repo)
      repo.catch(() => this._repos.delete(real))
    }
    return repo
  }

  private async _init(real: string): Promise<string> {
    const gitDir = join(this._dir, createHash('sha256').update(real).digest('hex').slice(0, 24))
    if (!existsSync(join(gitDir, 'HEAD'))) {
      await mkdir(this._dir, { recursive: true, mode: 0o700 })
      const { GIT_DIR: _dir, GIT_WORK_TREE: _tree, ...plain } = this._env(gitDir, real)
      await git(['init', '--quiet', '--bare', gitDir], plain, { timeoutMs: this._timeoutMs })
      const env = this._env(gitDir, real)
      for (const [key, value] of [
        ['gc.auto', '0'],
        ['core.autocrlf', 'false'],
        ['core.symlinks', 'true'],
        ['core.quotepath', 'false'],
        ['core.untrackedCache', 'true'],
      ] as const)
        await git(['config', key, value], env, { timeoutMs: this._timeoutMs })
      await writeFile(join(gitDir, 'workspace'), `${real}\n`, { mode: 0o600 })
    }
    // dsh's own files inside the workspace (a workspace that holds $DSH_HOME, e.g. the home folder): a
    // rewind must never write back a session log, and a snapshot must never hold its own store.
    const own = new Set<string>()
    for (const path of [this._home, this._dir]) {
      const resolved = await realpath(path).catch(() => resolve(path))
      const rel = relative(real, resolved)
      if (rel && !rel.startsWith('..') && !isAbsolute(rel)) own.add(`/${rel.split(sep).join('/')}/`)
      // The workspace is $DSH_HOME itself: its stores, at least, stay out.
      else if (!rel && path === this._home)
        for (const store of ['sessions', 'checkpoints', 'blobs']) own.add(`/${store}/`)
    }
    await mkdir(join(gitDir, 'info'), { recursive: true })
    await writeFile(join(gitDir, 'info', 'exclude'), [...own].map((line) => `${line}\n`).join(''), { mode: 0o600 })
    return gitDir
  }

  private _env(gitDir: string, cwd: string, sessionId?: string): NodeJS.ProcessEnv {
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      LANG: 'C',
      LC_ALL: 'C',
      GIT_DIR: gitDir,
      GIT_WORK_TREE: cwd,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_TERMINAL_PROMPT: '0',
      GIT_LITERAL_PATHSPECS: '1',
    }
    if (sessionId !== undefined)
      env.GIT_INDEX_FILE = join(gitDir, `index-${sessionId.replace(/[^A-Za-z0-9_.-]/g, '_')}`)
    return env
  }

  private _run(args: string[], env: NodeJS.ProcessEnv, options: Omit<Parameters<typeof git>[2], 'timeoutMs'> = {}) {
    return git(args, env, { timeoutMs: this._timeoutMs, signal: this._abort.signal, ...options })
  }

  async take(request: SnapshotRequest): Promise<Snapshot> {
    const started = performance.now()
    const cwd = await realpath(request.cwd)
    const gitDir = await this._repo(cwd)
    const env = this._env(gitDir, cwd, request.sessionId)
    const index = env.GIT_INDEX_FILE ?? ''
    if (!existsSync(index)) await this._seedIndex(gitDir, index)
    const before = this._indexed.get(index) ?? 0
    const tooLarge = () =>
      new HarnessError(
        'SNAPSHOT_TOO_LARGE',
        `${cwd} has more than ${this._maxFiles.toLocaleString('en-US')} files that no .gitignore excludes: checkpoints are off for it (ignore build output and dependencies in .gitignore, or raise the snapshots row's maxFiles)`,
        { cwd, maxFiles: this._maxFiles },
      )
    // What differs from this session's index: new, modified and deleted files (ignored ones left out).
    let listed: string[]
    try {
      const result = await this._run(
        ['ls-files', '-z', '--others', '--modified', '--deleted', '--exclude-standard'],
        env,
        {
          limit: (bytes) => bytes < 64 * 1024 * 1024,
          ...(request.signal ? { signal: request.signal } : {}),
        },
      )
      listed = [...new Set(nulList(result.stdout))]
    } catch (error) {
      if (error instanceof HarnessError && error.code === 'SNAPSHOT_TOO_LARGE') throw tooLarge()
      throw error
    }
    if (before + listed.length > this._maxFiles && listed.length > this._maxFiles - before) {
      // The count over-estimates (modified files are counted twice); re-check against the true total.
      const total = countNul((await this._run(['ls-files', '-z'], env)).stdout) + listed.length
      if (total > this._maxFiles) throw tooLarge()
    }
    const add: string[] = []
    const skipped: SkippedFile[] = []
    for (const path of listed) {
      const stat = await lstat(join(cwd, path)).catch(() => undefined)
      if (stat?.isFile() && stat.size > this._maxFileBytes) skipped.push({ path, bytes: stat.size })
      else add.push(path)
    }
    if (add.length > 0)
      await this._run(['add', '--all', '--pathspec-from-file=-', '--pathspec-file-nul'], env, {
        input: `${add.join('\0')}\0`,
      })
    if (skipped.length > 0)
      // A file that grew past the limit leaves the index: a snapshot never holds stale content for it.
      await this._run(
        ['rm', '--cached', '--quiet', '--ignore-unmatch', '--pathspec-from-file=-', '--pathspec-file-nul'],
        env,
        { input: `${skipped.map((file) => file.path).join('\0')}\0` },
      )
    const tree = (await this._run(['write-tree'], env)).stdout.toString('utf8').trim()
    let files = before
    if (add.length > 0 || skipped.length > 0 || !this._indexed.has(index)) {
      files = countNul((await this._run(['ls-files', '-z'], env)).stdout)
      this._indexed.set(index, files)
    }
    return { id: tree, files, skipped, ms: Math.round(performance.now() - started) }
  }

  /**
   * A session's first snapshot starts from the newest index of the workspace (another session's): its
   * stat cache is valid for every file nobody changed since, so only changed files are hashed again.
   */
  private async _seedIndex(gitDir: string, index: string): Promise<void> {
    const names = await readdir(gitDir).catch(() => [] as string[])
    let newest: { path: string; mtime: number } | undefined
    for (const name of names) {
      if (!name.startsWith('index-') || name.endsWith('.lock')) continue
      const stat = await lstat(join(gitDir, name)).catch(() => undefined)
      if (stat?.isFile() && (!newest || stat.mtimeMs > newest.mtime))
        newest = { path: join(gitDir, name), mtime: stat.mtimeMs }
    }
    if (newest) await copyFile(newest.path, index).catch(() => undefined)
    // Each index is about 100 bytes per file; keep the newest few (an older session seeds a new one).
    const indexes: Array<{ path: string; mtime: number }> = []
    for (const name of names) {
      if (!name.startsWith('index-') || name.endsWith('.lock')) continue
      const stat = await lstat(join(gitDir, name)).catch(() => undefined)
      if (stat?.isFile()) indexes.push({ path: join(gitDir, name), mtime: stat.mtimeMs })
    }
    indexes.sort((a, b) => b.mtime - a.mtime)
    for (const old of indexes.slice(KEPT_INDEXES)) {
      await rm(old.path, { force: true })
      this._indexed.delete(old.path)
    }
  }

  private async _known(cwd: string, id: string): Promise<{ gitDir: string; env: NodeJS.ProcessEnv; cwd: string }> {
    const real = await realpath(cwd)
    const gitDir = await this._repo(real)
    const env = this._env(gitDir, real)
    if (!/^[0-9a-f]{40,64}$/.test(id))
      throw new HarnessError('SNAPSHOT_NOT_FOUND', `"${id}" is not a snapshot id`, { id })
    if (id !== EMPTY_TREE) {
      try {
        await this._run(['cat-file', '-e', `${id}^{tree}`], env)
      } catch {
        throw new HarnessError(
          'SNAPSHOT_NOT_FOUND',
          `snapshot ${id.slice(0, 12)} is not in ${gitDir} (the checkpoint store of ${real} was removed or moved)`,
          { id, cwd: real },
        )
      }
    }
    return { gitDir, env, cwd: real }
  }

  async changes(cwd: string, from: string, to: string, paths?: readonly string[]): Promise<SnapshotChange[]> {
    if (from === to) return []
    const { env } = await this._known(cwd, from)
    await this._known(cwd, to)
    const output = await this._run(['diff-tree', '-r', '-z', '--no-renames', '--raw', '--numstat', from, to], env)
    const tokens = output.stdout.toString('utf8').split('\0')
    const kinds = new Map<string, SnapshotChange['kind']>()
    const counts = new Map<string, { added?: number; removed?: number }>()
    for (let i = 0; i < tokens.length; i++) {
      const token = tokens[i] ?? ''
      if (token.startsWith(':')) {
        const status = token.split(' ')[4] ?? 'M'
        const path = tokens[++i] ?? ''
        kinds.set(path, status === 'A' ? 'added' : status === 'D' ? 'deleted' : 'modified')
      } else if (token.includes('\t')) {
        const [added = '-', removed = '-', ...rest] = token.split('\t')
        const path = rest.join('\t')
        counts.set(path, added === '-' ? {} : { added: Number(added), removed: Number(removed) })
      }
    }
    const only = paths ? new Set(paths) : undefined
    const out: SnapshotChange[] = []
    for (const [path, kind] of kinds) {
      if (only && !only.has(path)) continue
      out.push({ path, kind, ...counts.get(path) })
    }
    return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
  }

  async patch(cwd: string, from: string, to: string, paths?: readonly string[]): Promise<string> {
    if (from === to) return ''
    const { env } = await this._known(cwd, from)
    await this._known(cwd, to)
    const args = ['diff-tree', '-r', '-p', '--no-renames', '--no-color', from, to]
    if (paths && paths.length > 0) args.push('--', ...paths)
    return (await this._run(args, env)).stdout.toString('utf8')
  }

  private async _entries(env: NodeJS.ProcessEnv, tree: string): Promise<Map<string, TreeEntry>> {
    const map = new Map<string, TreeEntry>()
    if (tree === EMPTY_TREE) return map
    const output = await this._run(['ls-tree', '-r', '-z', '--full-tree', tree], env)
    for (const line of nulList(output.stdout)) {
      const tab = line.indexOf('\t')
      const [mode = '', , oid = ''] = line.slice(0, tab).split(' ')
      map.set(line.slice(tab + 1), { mode, oid })
    }
    return map
  }

  async restore(request: RestoreRequest): Promise<RestoreResult> {
    const { env, cwd } = await this._known(request.cwd, request.to)
    const entries = await this._entries(env, request.to)
    const result: RestoreResult = { written: [], deleted: [], unchanged: [] }
    const paths = [...new Set(request.paths)].map(safeRelative)
    // Deletions first (deepest first), so a file can take the place of a directory the turn made.
    const removals = paths.filter((path) => !entries.has(path)).sort((a, b) => b.length - a.length)
    for (const path of removals) {
      const abs = await this._inside(cwd, path)
      const stat = await lstat(abs).catch(() => undefined)
      if (!stat) result.unchanged.push(path)
      else {
        await rm(abs, { recursive: stat.isDirectory(), force: true })
        result.deleted.push(path)
        await this._pruneEmpty(cwd, dirname(abs))
      }
      request.onFile?.(path)
    }
    for (const path of paths) {
      const entry = entries.get(path)
      if (!entry || entry.mode === '160000') continue
      const abs = await this._inside(cwd, path)
      const content = (await this._run(['cat-file', 'blob', entry.oid], env)).stdout
      if (await this._same(abs, entry.mode, content)) {
        result.unchanged.push(path)
        request.onFile?.(path)
        continue
      }
      await mkdir(dirname(abs), { recursive: true })
      const current = await lstat(abs).catch(() => undefined)
      if (current?.isDirectory()) await rm(abs, { recursive: true, force: true })
      const temp = join(dirname(abs), `.${path.split('/').pop()}.dsh-restore-${randomBytes(4).toString('hex')}`)
      try {
        if (entry.mode === '120000') await symlink(content.toString('utf8'), temp)
        else {
          await writeFile(temp, content)
          await chmod(temp, entry.mode === '100755' ? 0o755 : 0o644)
        }
        await rename(temp, abs)
      } catch (error) {
        await rm(temp, { force: true })
        throw error
      }
      result.written.push(path)
      request.onFile?.(path)
    }
    return result
  }

  async materialize(cwd: string, id: string, dir: string): Promise<void> {
    const { env } = await this._known(cwd, id)
    await mkdir(dir, { recursive: true })
    const index = join(dir, `.dsh-materialize-${randomBytes(4).toString('hex')}`)
    const scratch = { ...env, GIT_WORK_TREE: dir, GIT_INDEX_FILE: index }
    try {
      await this._run(['read-tree', id], scratch)
      await this._run(['checkout-index', '--all', '--force'], scratch)
    } finally {
      await rm(index, { force: true })
    }
  }

  async pack(cwd: string, ids: readonly string[]): Promise<Buffer> {
    const wanted = [...new Set(ids)].filter((id) => id !== EMPTY_TREE)
    let env: NodeJS.ProcessEnv | undefined
    for (const id of wanted) env = (await this._known(cwd, id)).env
    if (!env) return Buffer.alloc(0)
    // A tree names every blob and subtree under it: git packs the whole snapshot from its id alone.
    return (
      await this._run(['pack-objects', '--revs', '--stdout', '--quiet'], env, { input: `${wanted.join('\n')}\n` })
    ).stdout
  }

  async unpack(cwd: string, blob: Buffer, ids: readonly string[]): Promise<string[]> {
    const real = await realpath(cwd)
    const env = this._env(await this._repo(real), real)
    // index-pack checks every object's hash as it stores it: a damaged pack is refused whole.
    if (blob.length > 0) await this._run(['index-pack', '--stdin'], env, { input: blob })
    const held: string[] = []
    for (const id of ids) {
      if (id === EMPTY_TREE) held.push(id)
      else if (
        await this._known(real, id).then(
          () => true,
          () => false,
        )
      )
        held.push(id)
    }
    return held
  }

  /** The absolute path of `path`, refused when a symlinked folder would carry the write outside `cwd`. */
  private async _inside(cwd: string, path: string): Promise<string> {
    const abs = join(cwd, ...path.split('/'))
    let parent = dirname(abs)
    while (parent !== cwd && !existsSync(parent)) parent = dirname(parent)
    const real = await realpath(parent)
    if (real !== cwd && !real.startsWith(cwd + sep))
      throw new HarnessError('SNAPSHOT_FAILED', `refusing to restore "${path}": its folder leads outside ${cwd}`, {
        path,
      })
    return abs
  }

  private async _same(abs: string, mode: string, content: Buffer): Promise<boolean> {
    const stat = await lstat(abs).catch(() => undefined)
    if (!stat) return false
    if (mode === '120000') return stat.isSymbolicLink() && (await readlink(abs)) === content.toString('utf8')
    if (!stat.isFile() || stat.size !== content.length) return false
    if (((stat.mode & 0o111) !== 0) !== (mode === '100755')) return false
    return (await readFile(abs)).equals(content)
  }

  /** Removes folders a deletion left empty, up to the workspace. */
  private async _pruneEmpty(cwd: string, dir: string): Promise<void> {
    while (dir !== cwd && relative(cwd, dir) && !relative(cwd, dir).startsWith('..')) {
      try {
        await rmdir(dir)
      } catch {
        return
      }
      dir = dirname(dir)
    }
  }
}

export default ShadowGitSnapshots
