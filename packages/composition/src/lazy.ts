// The YAML library: needed only once the composition reads config: loaded on first use, so commands that
// never compose (`dsh --help`, `--version`) do not pay for loading them. `require` caches them.
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)

export const loadYaml = (): typeof import('yaml') => require('yaml')

let version: string | undefined
/** The YAML library's version, part of every parse-cache key (read from its package.json, not loaded). */
export const yamlVersion = (): string => {
  version ??= (require('yaml/package.json') as { version: string }).version
  return version
}
