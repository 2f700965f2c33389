// @dsh/settings: `ctx.settings`, typed user settings. Any package declares its keys (a JSON Schema, a
// default, an optional environment variable) with `define`, an effect undone when the declaring plugin
// unloads. A value comes from the highest of five layers: default < $DSH_HOME/settings.yaml <
// <cwd>/.dsh/settings.yaml < environment < CLI flags, and says which one it came from.
import { existsSync } from 'node:fs'
import { homedir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import type {} from '@dsh/composition'
import { type Context, didYouMean, HarnessError, Service } from '@dsh/kernel'
import { type FileValues, SettingsFiles } from './files.js'
import { type JsonSchema, parseText, SchemaChecker, subschema } from './schema.js'
import { FolderTrust } from './trust/store.js'

/**
 * The typed map of setting keys. A package adds its keys by declaration merging:
 * `declare module '@dsh/settings' { interface SettingsMap { model: string } }`, then `ctx.settings.define('model', ...)`.
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled by declaration merging in the packages that own keys
export interface SettingsMap {}

export type SettingKey = keyof SettingsMap & string

declare module 'cordis' {
  interface Context {
    settings: SettingsService
  }
  interface Events {
    /** A setting may have a new value: written by `set`/`unset` or a flag of this process. */
    'settings/changed'(change: { key: string; source: SettingSource }): void
  }
}

export { MAX_CONFIG_BYTES, readChunks, readConfigText, readTextHead } from './config-file.js'
export { maskUrlPasswords } from './mask.js'
export type { JsonSchema } from './schema.js'

/** What a package declares about one of its keys. */
export interface SettingSpec<T> {
  /** JSON Schema of the value, checked with Ajv in every layer. */
  schema: JsonSchema
  /** The value when no layer sets one. Must satisfy the schema. */
  default?: T
  /** One line for `dsh config list` and the settings page. */
  description: string
  /** An environment variable that sets this key (its text is read like a `dsh config set` argument). */
  env?: string
  /** What a valid value looks like, for error messages (e.g. `provider:model, such as anthropic:claude-sonnet-4-5`). */
  allowed?: string
  /** A check the schema cannot express (relations to live state); returns the problem, or undefined. */
  check?: (value: T) => string | undefined
  /**
   * A plain preference a project's `.dsh/settings.yaml` may set in a folder the user has not trusted:
   * it cannot run code, reach a host of the project's choosing or change where a credential goes.
   * Default false: the project file's value loads only in a trusted folder (see `@dsh/settings/trust`).
   */
  projectSafe?: boolean
}

/** The five layers, lowest first. */
export type SettingSource = 'default' | 'user' | 'project' | 'env' | 'flag'

/** One resolved value and where it came from: a file path, an environment variable or a flag. */
export interface SettingValue {
  key: string
  value: unknown
  source: SettingSource
  /** The file path (user, project), variable name (env) or flag (flag); absent for defaults. */
  location?: string
}

/** A key as `dsh config list` and the settings page describe it. */
export interface SettingInfo extends SettingValue {
  description: string
  env?: string
  allowed?: string
  schema: JsonSchema
}

export interface SettingsConfig {
  /** The dsh home holding `settings.yaml`. Default: the launcher's home, else $DSH_HOME, else ~/.dsh. */
  home?: string
  /** The project directory whose `.dsh/settings.yaml` is read. Default: the launcher's cwd, else the process cwd. */
  cwd?: string
  /** The environment to read. Default: `process.env`. */
  env?: Readonly<Record<string, string | undefined>>
}

export type WritableScope = 'user' | 'project'

export interface SetOptions {
  /** Which file to write: `user` ($DSH_HOME/settings.yaml, the default) or `project` (.dsh/settings.yaml). */
  scope?: WritableScope
  /** The value is command-line text, read by the schema's type (`8` is a number where numbers are expected). */
  text?: boolean
}

const KEY = /^[a-z][a-zA-Z0-9-]*(\.[a-z][a-zA-Z0-9-]*)*$/

interface Definition {
  spec: SettingSpec<unknown>
}

/**
 * `ctx.settings`. Throws `CONFIG_SETTINGS_INVALID` (a value breaks its schema: the message names the file
 * or variable, the key and what is allowed), `CONFIG_SETTING_UNKNOWN` (no active plugin declares the key),
 * `CONFIG_SETTINGS_UNREADABLE`, and for programmer errors `SETTING_DEFINITION_INVALID`, `DUPLICATE_SETTING`.


 */
export class SettingsService extends Service {
  static readonly provide = 'settings'
  private readonly _config: SettingsConfig
  private readonly _definitions = new Map<string, Definition>()
  private readonly _flags = new Map<string, { value: unknown; label: string }>()
  private readonly _files = new SettingsFiles()
  private readonly _schemas = new SchemaChecker()
  private readonly _paths: { user?: string; project?: string } = {}
  private _trust: FolderTrust | undefined

  constructor(ctx: Context, config: SettingsConfig = {}) {
    super(ctx, 'settings')
    this._config = config ?? {}
    // `--trust` covers the folder as it is at boot, before the model has written anything.
    if (ctx.get('launcher')?.config.trustFolder) void this.trust
  }

  get env(): Readonly<Record<string, string | undefined>> {
    return this._config.env ?? process.env
  }

  /** `$DSH_HOME/settings.yaml`. */
  get userFile(): string {
    // Fixed for the life of the process; asked on every read of a key, so worked out once.
    if (this._paths.user === undefined) {
      const home = this._config.home ?? this.ctx.get('launcher')?.config.home ?? this.env.DSH_HOME
      this._paths.user = join(home ? resolve(home) : join(homedir(), '.dsh'), 'settings.yaml')
    }
    return this._paths.user
  }

  /** `<cwd>/.dsh/settings.yaml`. */
  get projectFile(): string {
    this._paths.project ??= join(
      resolve(this._config.cwd ?? this.ctx.get('launcher')?.config.cwd ?? process.cwd()),
      '.dsh',
      'settings.yaml',
    )
    return this._paths.project
  }

  /**
   * Declares `key` for the lifetime of the calling plugin. Throws `DUPLICATE_SETTING` when another
   * active plugin declared it, `SETTING_DEFINITION_INVALID` for a bad name. The default is trusted here
   * (checking it would load the schema library at every start for values nobody set):
   * `defaultProblems()` checks it, and `dsh check` reports what that finds.
   */
  define<K extends SettingKey>(key: K, spec: SettingSpec<SettingsMap[K]>): () => void {
    if (!KEY.test(key)) {
      throw new HarnessError(
        'SETTING_DEFINITION_INVALID',
        `setting keys look like "model" or "lsp.servers"; got "${key}"`,
        {
          key,
        },
      )
    }
    const definitions = this._definitions
    const definition: Definition = { spec: spec as SettingSpec<unknown> }
    const dispose = this.ctx.effect(() => {
      if (definitions.has(key)) {
        throw new HarnessError('DUPLICATE_SETTING', `setting "${key}" is already declared by another plugin`, { key })
      }
      definitions.set(key, definition)
      return () => {
        if (definitions.get(key) === definition) definitions.delete(key)
      }
    }, `settings.define(${key})`)
    return () => void dispose()
  }

  /** Whether an active plugin declares `key`. */
  has(key: string): boolean {
    return this._definitions.has(key)
  }

  /** The declared keys, sorted. */
  keys(): string[] {
    return [...this._definitions.keys()].sort()
  }

  /** The value of `key` from the highest layer that sets it. Throws like `resolve`. */
  get<K extends SettingKey>(key: K): SettingsMap[K] {
    return this.resolve(key).value as SettingsMap[K]
  }

  /** The value of `key` and where it came from. Throws `CONFIG_SETTINGS_INVALID` when that value is invalid. */
  resolve(key: string): SettingValue {
    const { spec } = this._definition(key)
    const found = this._layers(key, spec).at(-1)
    if (!found) return { key, value: spec.default, source: 'default' }
    const problem = this._problem(spec, found.value, key)
    if (problem) throw invalid(found, problem, spec)
    return found
  }

  /**
   * What one file layer alone sets for `key` (undefined when it sets nothing, or when it is the project
   * file of a folder that is not trusted). Not checked against the schema: for comparisons such as
   * whether the user bound a credential to an endpoint the project also names.
   */
  fileValue(key: string, source: 'user' | 'project'): unknown {
    const { spec } = this._definition(key)
    return this._layers(key, spec).find((layer) => layer.source === source)?.value
  }

  /** Every declared key with its value, source and description. Throws like `resolve`. */
  list(): SettingInfo[] {
    return this.keys().map((key) => ({ ...this.resolve(key), ...this.describe(key) }))
  }

  /** What the declaring package says about `key`, without reading a value (so an invalid one cannot throw). */
  describe(key: string): Omit<SettingInfo, keyof SettingValue> {
    const { spec } = this._definition(key)
    return {
      description: spec.description,
      schema: spec.schema,
      ...(spec.env ? { env: spec.env } : {}),
      ...(spec.allowed ? { allowed: spec.allowed } : {}),
    }
  }

  /** Each declared default that breaks its own schema, as one line naming the key (a plugin author's error). */
  defaultProblems(): string[] {
    const problems: string[] = []
    for (const [key, { spec }] of this._definitions) {
      const problem = spec.default === undefined ? undefined : this._schemas.problem(spec.schema, spec.default)
      if (problem) problems.push(`setting "${key}": its default breaks its schema: ${problem}`)
    }
    return problems.sort()
  }

  /**
   * Checks every layer of every declared key (not only the winning one) and throws one
   * `CONFIG_SETTINGS_INVALID` listing each bad value with its file or variable, key and what is allowed.
   * Returns warnings for keys in the files that no active plugin declares (a typo, or a row not loaded).
   */
  check(): string[] {
    const problems: string[] = []
    for (const [key, { spec }] of this._definitions) {
      for (const found of this._layers(key, spec)) {
        const problem = this._problem(spec, found.value, key)
        if (problem) problems.push(invalid(found, problem, spec).message)
      }
    }
    if (problems.length > 0) {
      throw new HarnessError('CONFIG_SETTINGS_INVALID', problems.join('\n'), { problems })
    }
    const warnings: string[] = []
    for (const [file, values] of this._fileValues()) {
      for (const key of Object.keys(values)) {
        if (!this._definitions.has(key)) {
          warnings.push(
            `${file}: unknown setting "${key}"${didYouMean(key, this.keys())} (declared keys: ${this.keys().join(', ') || 'none'})`,
          )
        }
      }
    }
    return warnings
  }

  /**
   * Writes `value` at `path` (a key, or a key and a path into its value: `endpoints.local.baseUrl`) into
   * the user or project file, keeping the file's comments and order. The key's whole new value is
   * checked first; an invalid one throws `CONFIG_SETTINGS_INVALID` and nothing is written.
   */
  set(path: string, value: unknown, options: SetOptions = {}): SettingValue {
    const { key, rest, spec } = this._split(path)
    const scope = options.scope ?? 'user'
    const file = scope === 'project' ? this.projectFile : this.userFile
    const parsed = options.text && typeof value === 'string' ? parseText(value, subschema(spec.schema, rest)) : value
    const next = withPath(this._files.read(file)[key], rest, parsed)
    const problem = this._problem(spec, next, key)
    if (problem)
      throw invalid({ key, value: next, source: scope, location: file }, `${problem}; nothing was written`, spec)
    this._keepingTrust(scope, () =>
      this._files.update(file, (document) => document.setIn([key, ...rest], parsed), { private: scope === 'user' }),
    )
    this.ctx.emit('settings/changed', { key, source: scope })
    return { key, value: next, source: scope, location: file }
  }

  /** Removes `path` from the user or project file. Returns whether it was there. */
  unset(path: string, options: Pick<SetOptions, 'scope'> = {}): boolean {
    const { key, rest, spec } = this._split(path)
    const scope = options.scope ?? 'user'
    const file = scope === 'project' ? this.projectFile : this.userFile
    const current = this._files.read(file)[key]
    if (current === undefined || (rest.length > 0 && valueAt(current, rest) === undefined)) return false
    if (rest.length > 0) {
      const next = withPath(current, rest, undefined)
      const problem = this._problem(spec, next, key)
      if (problem)
        throw invalid({ key, value: next, source: scope, location: file }, `${problem}; nothing was written`, spec)
    }
    this._keepingTrust(scope, () =>
      this._files.update(file, (document) => document.deleteIn([key, ...rest]), { private: scope === 'user' }),
    )
    this.ctx.emit('settings/changed', { key, source: scope })
    return true
  }

  /**
   * Sets `key` from a command-line flag (`label`, e.g. `--model`) for the calling plugin's lifetime: the
   * highest layer. Throws `CONFIG_SETTINGS_INVALID` naming the flag when the value is invalid.
   */
  setFlag(key: string, value: unknown, label: string): () => void {
    const { spec } = this._definition(key)
    const parsed = typeof value === 'string' ? parseText(value, spec.schema) : value
    const problem = this._problem(spec, parsed, key)
    if (problem) throw invalid({ key, value: parsed, source: 'flag', location: label }, problem, spec)
    const flags = this._flags
    const entry = { value: parsed, label }
    const dispose = this.ctx.effect(() => {
      flags.set(key, entry)
      return () => {
        if (flags.get(key) === entry) flags.delete(key)
      }
    }, `settings.setFlag(${key})`)
    this.ctx.emit('settings/changed', { key, source: 'flag' })
    return () => void dispose()
  }

  private _definition(key: string): Definition {
    const definition = this._definitions.get(key)
    if (!definition) {
      throw new HarnessError(
        'CONFIG_SETTING_UNKNOWN',
        `unknown setting "${key}"${didYouMean(key, this.keys())}; the declared keys are: ${this.keys().join(', ') || 'none'} (dsh config list describes them)`,
        { key },
      )
    }
    return definition
  }

  /** The longest declared key that `path` starts with, and the rest of the path inside its value. */
  private _split(path: string): { key: string; rest: string[]; spec: SettingSpec<unknown> } {
    const parts = path.split('.')
    for (let length = parts.length; length > 0; length--) {
      const key = parts.slice(0, length).join('.')
      const definition = this._definitions.get(key)
      if (definition) return { key, rest: parts.slice(length), spec: definition.spec }
    }
    return { key: path, rest: [], spec: this._definition(path).spec }
  }

  private _fileValues(): Array<[string, FileValues]> {
    return [
      [this.userFile, this._files.read(this.userFile)],
      [this.projectFile, this._files.read(this.projectFile)],
    ]
  }

  /** The layers that set `key`, lowest first (the default excluded). */
  private _layers(key: string, spec: SettingSpec<unknown>): SettingValue[] {
    const out: SettingValue[] = []
    const [[userFile, user], [projectFile, project]] = this._fileValues() as [
      [string, FileValues],
      [string, FileValues],
    ]
    if (user[key] !== undefined) out.push({ key, value: user[key], source: 'user', location: userFile })
    if (project[key] !== undefined && (spec.projectSafe || this._projectTrusted()))
      out.push({ key, value: project[key], source: 'project', location: projectFile })
    const text = spec.env ? this.env[spec.env] : undefined
    if (spec.env && text !== undefined && text !== '') {
      out.push({ key, value: parseText(text, spec.schema), source: 'env', location: spec.env })
    }
    const flag = this._flags.get(key)
    if (flag) out.push({ key, value: flag.value, source: 'flag', location: flag.label })
    return out
  }

  /**
   * Keys the project file sets that do not load because the folder is not trusted (or the file
   * changed since it was), for the notice that says so.
   */
  ignoredProjectKeys(): string[] {
    const project = this._files.read(this.projectFile)
    if (Object.keys(project).length === 0 || this._projectTrusted()) return []
    return Object.keys(project).filter((key) => !this._definitions.get(key)?.spec.projectSafe)
  }

  /** The folder trust record of this settings' home (`dsh trust` writes it; see `@dsh/settings/trust`). */
  get trust(): FolderTrust {
    const launcher = this.ctx.get('launcher')?.config
    this._trust ??= new FolderTrust(dirname(this.userFile), {
      assume: launcher?.trustFolder === true,
      cwd: dirname(dirname(this.projectFile)),
    })
    return this._trust
  }

  /**
   * A write through this service is the user's own (`dsh config set --project`): in a folder they
   * trusted, the project file stays trusted with its new content. An untrusted or since-edited file
   * is not laundered by it.
   */
  private _keepingTrust(scope: WritableScope, write: () => void): void {
    const folder = dirname(dirname(this.projectFile))
    const path = '.dsh/settings.yaml'
    const keep =
      scope === 'project' &&
      !this.trust.assumed &&
      this.trust.record(folder) !== undefined &&
      (this.trust.admits(folder, path) || !existsSync(this.projectFile))
    write()
    if (keep) this.trust.update(folder, path)
  }

  private _projectTrusted(): boolean {
    return this.trust.admits(dirname(dirname(this.projectFile)), '.dsh/settings.yaml')
  }

  private _problem(spec: SettingSpec<unknown>, value: unknown, key: string): string | undefined {
    return this._schemas.problem(spec.schema, value, key) ?? spec.check?.(value)
  }
}

function invalid(found: SettingValue, problem: string, spec: SettingSpec<unknown>): HarnessError {
  const where =
    found.source === 'env'
      ? `environment variable ${found.location}`
      : found.source === 'flag'
        ? `flag ${found.location}`
        : found.location
  const allowed = spec.allowed ? ` (allowed: ${spec.allowed})` : ''
  const fix =
    found.source === 'user' || found.source === 'project'
      ? `; fix the file or run \`dsh config set${found.source === 'project' ? ' --project' : ''} ${found.key} VALUE\``
      : ''
  // A schema problem names its field path from the key (`endpoints.local.baseUrl: ...`).
  const what = problem.startsWith(`${found.key}`) ? problem : `setting "${found.key}" ${problem}`
  return new HarnessError('CONFIG_SETTINGS_INVALID', `${where}: ${what}${allowed}${fix}`, {
    key: found.key,
    source: found.source,
    location: found.location ?? null,
    problem,
  })
}

function valueAt(value: unknown, path: readonly string[]): unknown {
  let current = value
  for (const part of path) {
    if (typeof current !== 'object' || current === null) return undefined
    current = (current as Record<string, unknown>)[part]
  }
  return current
}

/** A copy of `value` with `path` set to `next` (removed when `next` is undefined). */
function withPath(value: unknown, path: readonly string[], next: unknown): unknown {
  if (path.length === 0) return next
  const [head, ...rest] = path as [string, ...string[]]
  const base = typeof value === 'object' && value !== null && !Array.isArray(value) ? { ...value } : {}
  const child = withPath((base as Record<string, unknown>)[head], rest, next)
  if (child === undefined) delete (base as Record<string, unknown>)[head]
  else (base as Record<string, unknown>)[head] = child
  return base
}

/** Where `peekStringSetting` looks. */
export interface PeekWhere {
  home: string
  cwd: string
  env: Readonly<Record<string, string | undefined>>
  /** The key's environment variable. */
  envName?: string
  /** `--set KEY=VALUE` flags. */
  flags?: readonly string[]
  /** `--trust`: read the project file even if the folder is not trusted. */
  trustFolder?: boolean
}

/**
 * A string setting read before boot, for the few keys that decide which rows to compose (`remote`):
 * the last `--set` flag, else the variable, else the project file, else the user file. Not checked
 * against the key's schema here: the booted service checks every layer as usual.
 */
export function peekStringSetting(key: string, where: PeekWhere): { value: string; source: string } | undefined {
  const flag = [...(where.flags ?? [])].reverse().find((item) => item.startsWith(`${key}=`))
  if (flag) return { value: flag.slice(key.length + 1), source: `--set ${key}` }
  const fromEnv = where.envName ? where.env[where.envName] : undefined
  if (fromEnv) return { value: fromEnv, source: where.envName as string }
  const files = new SettingsFiles()
  // The keys read here choose rows (where the session runs): a project sets them only when trusted.
  const trusted = new FolderTrust(resolve(where.home), { assume: where.trustFolder === true, cwd: where.cwd }).admits(
    resolve(where.cwd),
    '.dsh/settings.yaml',
  )
  const candidates = [join(resolve(where.home), 'settings.yaml')]
  if (trusted) candidates.unshift(join(resolve(where.cwd), '.dsh', 'settings.yaml'))
  for (const file of candidates) {
    const value = files.read(file)[key]
    if (typeof value === 'string' && value !== '') return { value, source: file }
  }
  return undefined
}

export default SettingsService
