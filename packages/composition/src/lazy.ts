// The YAML library: needed only once the composition reads config: loaded on first use, so commands that
// never compose (`dsh --help`, `--version`) do not pay for loading them. `require` caches them.
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)

export const loadYaml = (): typeof import('yaml') => require('yaml')
