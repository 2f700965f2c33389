// The safe config expression form: YAML tags evaluated at activation, never code.
//   !env NAME            the environment variable NAME (an error when unset)
//   !env NAME:default    NAME, or `default` when unset
//   !platform linux      true when process.platform is one of the comma-separated names
import { HarnessError } from '@dsh/kernel'
import type { ScalarTag } from 'yaml'

const PLATFORMS = new Set([
  'aix',
  'android',
  'darwin',
  'freebsd',
  'haiku',
  'linux',
  'openbsd',
  'sunos',
  'win32',
  'cygwin',
  'netbsd',
])
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

/** A config value that is only known at activation. Kept as-is in the tree and in dumps. */
export class ConfigExpr {
  constructor(
    readonly kind: 'env' | 'platform',
    readonly source: string,
  ) {}

  toString(): string {
    return `!${this.kind} ${this.source}`
  }

  toJSON(): { $expr: string } {
    return { $expr: this.toString() }
  }
}

function parseEnv(source: string, onError: (message: string) => void): ConfigExpr {
  const name = source.split(':', 1)[0] ?? ''
  if (!ENV_NAME.test(name)) onError(`!env needs a variable name like NAME or NAME:default, got "${source}"`)
  return new ConfigExpr('env', source)
}

function parsePlatform(source: string, onError: (message: string) => void): ConfigExpr {
  const names = source.split(',').map((name) => name.trim())
  const unknown = names.filter((name) => !PLATFORMS.has(name))
  if (unknown.length > 0) {
    onError(`!platform names unknown platform(s) ${unknown.join(', ')}; known: ${[...PLATFORMS].join(', ')}`)
  }
  return new ConfigExpr('platform', names.join(','))
}

function quoteIfNeeded(source: string): string {
  return /^[A-Za-z0-9_./-]+$/.test(source) || /^[A-Za-z0-9_./-]+:[^\s#:'"]+$/.test(source)
    ? source
    : JSON.stringify(source)
}

/** The YAML tags used by every layer file and by `--dump-config`. */
export const configTags: ScalarTag[] = [
  {
    tag: '!env',
    identify: (value) => value instanceof ConfigExpr && value.kind === 'env',
    resolve: (source, onError) => parseEnv(source.trim(), onError),
    // Quoted when plain YAML would misread it (`NAME:` alone would open a mapping).
    stringify: (item) => quoteIfNeeded((item.value as ConfigExpr).source),
  },
  {
    tag: '!platform',
    identify: (value) => value instanceof ConfigExpr && value.kind === 'platform',
    resolve: (source, onError) => parsePlatform(source.trim(), onError),
    stringify: (item) => String((item.value as ConfigExpr).source),
  },
]

export interface EvalEnvironment {
  env: Readonly<Record<string, string | undefined>>
  platform: string
}

/** Evaluates one expression. Throws `CONFIG_ENV_MISSING` for an unset variable without a default. */
export function evaluateExpr(expr: ConfigExpr, scope: EvalEnvironment, where: string): string | boolean {
  if (expr.kind === 'platform') return expr.source.split(',').includes(scope.platform)
  const colon = expr.source.indexOf(':')
  const name = colon < 0 ? expr.source : expr.source.slice(0, colon)
  const value = scope.env[name]
  if (value !== undefined) return value
  if (colon >= 0) return expr.source.slice(colon + 1)
  throw new HarnessError(
    'CONFIG_ENV_MISSING',
    `${where}: environment variable ${name} is not set; set it, or give a default with !env ${name}:value`,
    { variable: name, where },
  )
}

/** Returns a copy of `value` with every ConfigExpr replaced by its value. `where` names the spot in errors. */
export function evaluateConfig(value: unknown, scope: EvalEnvironment, where: string): unknown {
  if (value instanceof ConfigExpr) return evaluateExpr(value, scope, where)
  if (Array.isArray(value)) return value.map((item, index) => evaluateConfig(item, scope, `${where}[${index}]`))
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {}
    for (const [key, item] of Object.entries(value)) out[key] = evaluateConfig(item, scope, `${where}.${key}`)
    return out
  }
  return value
}
