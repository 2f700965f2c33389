// @dsh/settings/credentials: `ctx.credentials`. Config names a secret by reference (e.g. `DEEPSEEK_API_KEY`);
// this service resolves the value at the moment it is needed, so a rotated key works on the next
// request. Sources in order: the environment (read-only), $DSH_HOME/.credentials.yaml, ./.env,
// $DSH_HOME/.env. Values never appear in logs, errors or facts.
import { randomBytes } from 'node:crypto'
import { chmod, mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { homedir } from 'node:os'
import { join, resolve } from 'node:path'
import type {} from '@dsh/composition'
import { type Context, HarnessError, Service } from '@dsh/kernel'

// The YAML library loads with the first read of a credentials file: a start whose keys come from the
// environment never needs it (decision 391).
const require = createRequire(import.meta.url)
const yaml = (): typeof import('yaml') => require('yaml')

declare module 'cordis' {
  interface Context {
    credentials: CredentialsService
  }
}

export interface CredentialsConfig {
  /** The dsh home holding `.credentials.yaml` and `.env`. Default: the launcher's home, else $DSH_HOME, else ~/.dsh. */
  home?: string
  /** The directory whose `.env` is read. Default: the launcher's cwd, else the process cwd. */
  cwd?: string
  /** The environment to read (tests pass their own). Default: `process.env`. */
  env?: Readonly<Record<string, string | undefined>>
}

export type CredentialSource = 'env' | 'credentials-file' | 'dotenv-cwd' | 'dotenv-home'

/** Where a reference resolved. `location` is `environment` or a file path; never the value. */
export interface CredentialLocation {
  name: string
  source: CredentialSource
  location: string
}

export interface ResolvedCredential extends CredentialLocation {
  value: string
}

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

function checkName(name: string): void {
  if (typeof name !== 'string' || !NAME.test(name)) {
    throw new HarnessError(
      'INVALID_CREDENTIAL_NAME',
      `credential names look like DEEPSEEK_API_KEY; got "${String(name)}"`,
      {
        name: String(name),
      },
    )
  }
}

/** Parses a `.env` file: `KEY=value`, optional `export `, `#` comments, single or double quotes. */
export function parseDotenv(text: string): Record<string, string> {
  const out: Record<string, string> = {}
  for (const rawLine of text.split(/\r?\n/)) {
    const line = rawLine.trim()
    if (line === '' || line.startsWith('#')) continue
    const match = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/.exec(line)
    if (!match) continue
    const key = match[1] as string
    let value = match[2] as string
    const quote = value[0]
    if ((quote === '"' || quote === "'") && value.lastIndexOf(quote) > 0) {
      value = value.slice(1, value.lastIndexOf(quote))
      if (quote === '"') value = value.replace(/\\n/g, '\n').replace(/\\"/g, '"')
    } else {
      value = value.replace(/\s+#.*$/, '').trim()
    }
    out[key] = value
  }
  return out
}

async function readOptional(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw new HarnessError('CREDENTIALS_UNREADABLE', `cannot read ${path}: ${(error as NodeJS.ErrnoException).code}`, {
      path,
      errno: (error as NodeJS.ErrnoException).code ?? null,
    })
  }
}

/**
 * `ctx.credentials`. Throws `INVALID_CREDENTIAL_NAME`, `INVALID_CREDENTIAL_VALUE`,
 * `CREDENTIALS_FILE_INVALID` (the YAML file is not a map of strings; the message names the file and
 * line, never its text) and `CREDENTIALS_UNREADABLE`. It never logs or returns a value except from
 * `get`/`resolve`.
 */
export class CredentialsService extends Service {
  static readonly provide = 'credentials'
  private readonly _config: CredentialsConfig
  private readonly _paths: { home?: string; cwd?: string } = {}

  constructor(ctx: Context, config: CredentialsConfig = {}) {
    super(ctx, 'credentials')
    this._config = config ?? {}
  }

  /** The environment this service reads (settings such as base URLs come from here too). */
  get env(): Readonly<Record<string, string | undefined>> {
    return this._config.env ?? process.env
  }

  // Fixed for the life of the process and asked on every sandbox resolution: worked out once.
  get home(): string {
    if (this._paths.home === undefined) {
      const home = this._config.home ?? this.ctx.get('launcher')?.config.home ?? this.env.DSH_HOME
      this._paths.home = home ? resolve(home) : join(homedir(), '.dsh')
    }
    return this._paths.home
  }

  get cwd(): string {
    this._paths.cwd ??= resolve(this._config.cwd ?? this.ctx.get('launcher')?.config.cwd ?? process.cwd())
    return this._paths.cwd
  }

  /** `$DSH_HOME/.credentials.yaml`. */
  get file(): string {
    return join(this.home, '.credentials.yaml')
  }

  /** The value of `name` from the first source that has it, or undefined. Reads the files each call. */
  async get(name: string): Promise<string | undefined> {
    return (await this.resolve(name))?.value
  }

  /** Like `get`, also saying where the value came from. */
  async resolve(name: string): Promise<ResolvedCredential | undefined> {
    checkName(name)
    const fromEnv = this.env[name]
    if (fromEnv) return { name, value: fromEnv, source: 'env', location: 'environment' }
    const stored = (await this._readStore())[name]
    if (stored) return { name, value: stored, source: 'credentials-file', location: this.file }
    for (const [source, dir] of [
      ['dotenv-cwd', this.cwd],
      ['dotenv-home', this.home],
    ] as const) {
      const path = join(dir, '.env')
      const text = await readOptional(path)
      const value = text === undefined ? undefined : parseDotenv(text)[name]
      if (value) return { name, value, source, location: path }
    }
    return undefined
  }

  /** Where `name` would resolve from, without the value (for diagnostics). */
  async locate(name: string): Promise<CredentialLocation | undefined> {
    const found = await this.resolve(name)
    return found && { name: found.name, source: found.source, location: found.location }
  }

  /**
   * Stores `name` in `$DSH_HOME/.credentials.yaml` (mode 0600, written to a temp file and renamed).
   * The environment is never written; a name set there still wins at resolve time.
   */
  async set(name: string, value: string): Promise<void> {
    checkName(name)
    if (typeof value !== 'string' || value === '' || /[\r\n]/.test(value)) {
      throw new HarnessError('INVALID_CREDENTIAL_VALUE', `the value for ${name} must be a non-empty single line`, {
        name,
      })
    }
    const store = await this._readStore()
    store[name] = value
    await this._writeStore(store)
  }

  /** Removes `name` from the credentials file. Returns whether it was there. */
  async delete(name: string): Promise<boolean> {
    checkName(name)
    const store = await this._readStore()
    if (!(name in store)) return false
    delete store[name]
    await this._writeStore(store)
    return true
  }

  /** Names stored in the credentials file (no values). */
  async names(): Promise<string[]> {
    return Object.keys(await this._readStore()).sort()
  }

  private async _readStore(): Promise<Record<string, string>> {
    const path = this.file
    const text = await readOptional(path)
    if (text === undefined) return {}
    const mode = (await stat(path)).mode & 0o777
    if (mode & 0o077) {
      this.ctx
        .logger('credentials')
        .warn(`${path} is readable by other users (mode ${mode.toString(8)}); run chmod 600`)
    }
    let data: unknown
    try {
      data = yaml().parse(text)
    } catch (error) {
      const line = (error as { linePos?: { line: number }[] }).linePos?.[0]?.line
      throw new HarnessError('CREDENTIALS_FILE_INVALID', `${path} is not valid YAML${line ? ` (line ${line})` : ''}`, {
        path,
        line: line ?? null,
      })
    }
    if (data === null || data === undefined) return {}
    if (typeof data !== 'object' || Array.isArray(data) || Object.values(data).some((v) => typeof v !== 'string')) {
      throw new HarnessError('CREDENTIALS_FILE_INVALID', `${path} must be a map of NAME: value strings`, { path })
    }
    return { ...(data as Record<string, string>) }
  }

  private async _writeStore(store: Record<string, string>): Promise<void> {
    const path = this.file
    await mkdir(this.home, { recursive: true, mode: 0o700 })
    const temp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`
    try {
      await writeFile(temp, Object.keys(store).length ? yaml().stringify(store) : '', { mode: 0o600, flag: 'wx' })
      await chmod(temp, 0o600)
      await rename(temp, path)
    } catch (error) {
      await rm(temp, { force: true })
      throw error
    }
  }
}

export default CredentialsService
