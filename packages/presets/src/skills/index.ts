// @dsh/presets/skills: `ctx.skills`, the catalog of skills. A skill is a directory with a `SKILL.md` whose YAML
// front matter names it and says when to use it; the body is loaded on demand. Sources, first wins on
// a name clash: the project's `.dsh/skills`, the project's `.claude/skills` (compatibility), the user's
// `$DSH_HOME/skills`, then any configured directories.
import { readdir, stat } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { homedir } from 'node:os'
import { join, resolve } from 'node:path'
import { matchesToolPattern } from '@dsh/agent/tools'
import type {} from '@dsh/composition'
import { agentScopeOf, type Context, HarnessError, Service } from '@dsh/kernel'
import { readConfigText } from '@dsh/settings'
import { projectConfigItems, projectTrust } from '@dsh/settings/trust'

/** Bound of one SKILL.md: larger files (or a FIFO, a device) are left out with a problem, not read. */
export const MAX_SKILL_BYTES = 1024 * 1024

// The YAML library loads with the first skill file read: a session with no skills never needs it.
const require = createRequire(import.meta.url)
const parse = (text: string): unknown => (require('yaml') as typeof import('yaml')).parse(text)

declare module 'cordis' {
  interface Context {
    skills: SkillsService
  }
}

/** Where a skill was found. */
export type SkillSource = 'project' | 'project-claude' | 'user' | 'extra'

/** A catalog entry: what the prompt lists. */
export interface SkillInfo {
  name: string
  description: string
  source: SkillSource
  /** The skill directory. */
  dir: string
  /** Its SKILL.md. */
  path: string
}

/** A loaded skill: the catalog entry, the body (front matter removed) and the other files of the directory. */
export interface LoadedSkill extends SkillInfo {
  body: string
  /** Other files in the skill directory (relative paths, at most 50), which the body may refer to. */
  files: string[]
}

/** A SKILL.md that could not be used, and why (shown by diagnostics, never thrown). */
export interface SkillProblem {
  path: string
  message: string
}

export interface SkillsConfig {
  /** Project root. Default: the launcher's cwd, else the process cwd. */
  cwd?: string
  /** dsh home. Default: the launcher's home, else $DSH_HOME, else ~/.dsh. */
  home?: string
  /** Read the project's `.dsh/skills` and `.claude/skills`. Default true. */
  project?: boolean
  /** Read `$DSH_HOME/skills`. Default true. */
  user?: boolean
  /** More skill roots (absolute, or relative to cwd), read last. */
  dirs?: string[]
}

const NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/
const FRONT_MATTER = /^---\r?\n([\s\S]*?)\r?\n---\r?\n?/

/**
 * Splits a SKILL.md into its front matter and body. Throws `SKILL_INVALID` when the front matter is
 * missing, is not YAML, or lacks a valid `name` or `description`.
 */
export function parseSkill(text: string, path: string): { name: string; description: string; body: string } {
  const match = FRONT_MATTER.exec(text)
  if (!match) throw new HarnessError('SKILL_INVALID', `${path}: no YAML front matter (--- ... ---)`, { path })
  let data: unknown
  try {
    data = parse(match[1] as string)
  } catch (error) {
    throw new HarnessError('SKILL_INVALID', `${path}: front matter is not YAML: ${(error as Error).message}`, { path })
  }
  const { name, description } = (data ?? {}) as { name?: unknown; description?: unknown }
  if (typeof name !== 'string' || !NAME.test(name)) {
    throw new HarnessError('SKILL_INVALID', `${path}: name must match ${NAME}`, { path })
  }
  if (typeof description !== 'string' || description.trim() === '') {
    throw new HarnessError('SKILL_INVALID', `${path}: description is required`, { path })
  }
  return { name, description: description.trim().replace(/\s+/g, ' '), body: text.slice(match[0].length).trim() }
}

async function isDir(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory()
  } catch {
    return false
  }
}

async function listFiles(dir: string, prefix = '', out: string[] = []): Promise<string[]> {
  let entries: import('node:fs').Dirent[]
  try {
    entries = await readdir(dir, { withFileTypes: true })
  } catch {
    return out
  }
  for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
    if (out.length >= 50) break
    const rel = prefix ? `${prefix}/${entry.name}` : entry.name
    if (entry.isDirectory()) await listFiles(join(dir, entry.name), rel, out)
    else if (rel !== 'SKILL.md') out.push(rel)
  }
  return out
}

/**
 * `ctx.skills`. The catalog is read once, on first use, and again on `refresh()`; bodies are read
 * from disk on every `load()`.
 */
export class SkillsService extends Service {
  static readonly provide = 'skills'
  // Plain fields, not #private: Cordis calls service methods through a proxy.
  readonly config: SkillsConfig
  readonly home: Context
  private _catalog: Promise<{ skills: SkillInfo[]; problems: SkillProblem[] }> | undefined
  /** Per-agent skill filters (names or globs), from the agents' presets. */
  readonly filters = new Map<string, readonly string[]>()

  constructor(ctx: Context, config: SkillsConfig = {}) {
    super(ctx, 'skills')
    this.home = ctx
    this.config = config ?? {}
  }

  /** The directories searched, in priority order. */
  roots(): Array<{ dir: string; source: SkillSource }> {
    const launcher = this.home.get('launcher')
    const cwd = this.config.cwd ?? launcher?.config.cwd ?? process.cwd()
    const home = this.config.home ?? launcher?.config.home ?? process.env.DSH_HOME ?? join(homedir(), '.dsh')
    const roots: Array<{ dir: string; source: SkillSource }> = []
    if (this.config.project !== false) {
      roots.push({ dir: join(cwd, '.dsh', 'skills'), source: 'project' })
      roots.push({ dir: join(cwd, '.claude', 'skills'), source: 'project-claude' })
    }
    if (this.config.user !== false) roots.push({ dir: join(home, 'skills'), source: 'user' })
    for (const dir of this.config.dirs ?? []) roots.push({ dir: resolve(cwd, dir), source: 'extra' })
    return roots
  }

  /** The catalog (sorted by name); for an agent with a filter, only the skills it lets through. */
  async list(scope: { agentId?: string } = {}): Promise<SkillInfo[]> {
    const skills = (await this.scan()).skills
    const filter = scope.agentId === undefined ? undefined : this.filters.get(scope.agentId)
    if (!filter) return skills
    return skills.filter((skill) => filter.some((pattern) => matchesToolPattern(skill.name, pattern)))
  }

  /**
   * Limits the skills an agent sees (listed and loadable) to `patterns` (names or globs), for the
   * caller's lifetime. The agent is the caller's agent scope (a preset composition) unless given.
   * Throws `SKILL_FILTER_INVALID` when there is no agent to filter for.
   */
  restrict(patterns: readonly string[], agentId = agentScopeOf(this.ctx)): () => void {
    if (agentId === undefined) {
      throw new HarnessError('SKILL_FILTER_INVALID', 'a skill filter belongs to one agent; none was given', {})
    }
    return this.ctx.effect(() => {
      const filter = [...patterns]
      this.filters.set(agentId, filter)
      return () => {
        if (this.filters.get(agentId) === filter) this.filters.delete(agentId)
      }
    }, `skills.restrict(${agentId})`)
  }

  /** SKILL.md files that were skipped, and why. */
  async problems(): Promise<SkillProblem[]> {
    return (await this.scan()).problems
  }

  /** Reads the directories again. */
  async refresh(): Promise<SkillInfo[]> {
    this._catalog = undefined
    return this.list()
  }

  /**
   * Loads a skill's body (one the agent's filter lets through, for `scope.agentId`). Throws
   * `SKILL_NOT_FOUND` (with the known names) or `SKILL_INVALID`.
   */
  async load(name: string, scope: { agentId?: string } = {}): Promise<LoadedSkill> {
    const skills = await this.list(scope)
    const info = skills.find((skill) => skill.name === name)
    if (!info) {
      throw new HarnessError(
        'SKILL_NOT_FOUND',
        `no skill named "${name}"; available: ${skills.map((skill) => skill.name).join(', ') || 'none'}`,
        { name, available: skills.map((skill) => skill.name) },
      )
    }
    let text: string
    try {
      text = readConfigText(info.path, MAX_SKILL_BYTES)
    } catch (error) {
      throw new HarnessError('SKILL_INVALID', `cannot read ${info.path}: ${(error as Error).message}`, {
        path: info.path,
      })
    }
    const parsed = parseSkill(text, info.path)
    return { ...info, description: parsed.description, body: parsed.body, files: await listFiles(info.dir) }
  }

  /** Project skill directories with files besides Markdown that the folder's trust does not cover. */
  private untrustedProjectSkills(): Set<string> {
    if (this.config.project === false) return new Set()
    const cwd = this.config.cwd ?? this.home.get('launcher')?.config.cwd ?? process.cwd()
    const trust = projectTrust(this.home, this.config.home)
    return new Set(
      projectConfigItems(cwd)
        .filter((item) => item.kind === 'skill' && !trust.admits(cwd, item.path))
        .map((item) => join(cwd, item.path)),
    )
  }

  private scan(): Promise<{ skills: SkillInfo[]; problems: SkillProblem[] }> {
    this._catalog ??= (async () => {
      const byName = new Map<string, SkillInfo>()
      const problems: SkillProblem[] = []
      const gated = this.untrustedProjectSkills()
      for (const root of this.roots()) {
        if (!(await isDir(root.dir))) continue
        const entries = (await readdir(root.dir, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name))
        for (const entry of entries) {
          if (!entry.isDirectory() && !entry.isSymbolicLink()) continue
          const dir = join(root.dir, entry.name)
          const path = join(dir, 'SKILL.md')
          if (gated.has(dir)) {
            problems.push({
              path,
              message: `skill ${dir} has scripts and this folder is not trusted (or it changed since); review it, then run \`dsh trust\``,
            })
            continue
          }
          let text: string
          try {
            // Bounded and regular files only: a FIFO named SKILL.md would hang the scan (and dsh's start).
            text = readConfigText(path, MAX_SKILL_BYTES)
          } catch (error) {
            const code = (error as NodeJS.ErrnoException).code
            if (code !== 'ENOENT' && code !== 'ENOTDIR') {
              problems.push({ path, message: `skill ${dir} left out: ${(error as Error).message}` })
            }
            continue
          }
          try {
            const { name, description } = parseSkill(text, path)
            if (byName.has(name)) {
              problems.push({ path, message: `skill "${name}" is shadowed by ${byName.get(name)?.path}` })
            } else byName.set(name, { name, description, source: root.source, dir, path })
          } catch (error) {
            problems.push({ path, message: (error as Error).message })
          }
        }
      }
      for (const problem of problems) this.home.logger('skills').warn(problem.message)
      const skills = [...byName.values()].sort((a, b) => a.name.localeCompare(b.name))
      return { skills, problems }
    })()
    return this._catalog
  }
}

export default SkillsService
