// The language servers dsh knows and how a configured one is found: the defaults (TypeScript,
// Python), the row's config with its checks, and the executable lookup (PATH, then node_modules/.bin
// of the workspace and of dsh).
import { existsSync, statSync } from 'node:fs'
import { delimiter, dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { HarnessError } from '@dsh/kernel'

export interface ServerConfig {
  /** Executable and arguments. A bare name is looked up on PATH, then in node_modules/.bin of the workspace and of dsh. */
  command: string[]
  /** File extensions this server handles, with the dot (`.ts`). */
  extensions: string[]
  /** languageId per extension; default: the extension without its dot. */
  languageIds?: Record<string, string>
  initializationOptions?: unknown
  /**
   * Files at the workspace root that mark a project of this language (`tsconfig.json`): a session
   * opening there starts the server in the background. Without markers it starts on the first question.
   */
  markers?: string[]
}

export interface LspStdioConfig {
  /** Merged over the defaults by name; `false` switches a default server off. */
  servers?: Record<string, ServerConfig | false>
  /**
   * How long to wait for a server to publish a changed file's diagnostics. Default 20000: a cold
   * TypeScript project can take that long to load on a busy machine; later changes take well under 1 s.
   */
  diagnosticsTimeoutMs?: number
  /** Bound of one request (definition, references...). Default 30000. */
  requestTimeoutMs?: number
  /** Restarts of one server after crashes before giving up. Default 4. */
  maxRestarts?: number
  /** First restart delay; doubles with each restart. Default 500. */
  restartBaseMs?: number
  /** Start the servers a workspace needs when a session opens there. Default true. */
  warm?: boolean
  /** How long a result waits for diagnostics from a server that has not published any yet. Default 3000. */
  coldWaitMs?: number
}

export const DEFAULT_SERVERS: Readonly<Record<string, ServerConfig>> = Object.freeze({
  typescript: {
    command: ['typescript-language-server', '--stdio'],
    extensions: ['.ts', '.tsx', '.mts', '.cts', '.js', '.jsx', '.mjs', '.cjs'],
    languageIds: {
      '.ts': 'typescript',
      '.mts': 'typescript',
      '.cts': 'typescript',
      '.tsx': 'typescriptreact',
      '.js': 'javascript',
      '.mjs': 'javascript',
      '.cjs': 'javascript',
      '.jsx': 'javascriptreact',
    },
    // The syntax-only server answers while the project loads, with unresolved imports: wait for the real one.
    initializationOptions: { tsserver: { useSyntaxServer: 'never' } },
    markers: ['tsconfig.json', 'jsconfig.json', 'package.json'],
  },
  python: {
    command: ['pyright-langserver', '--stdio'],
    extensions: ['.py', '.pyi'],
    languageIds: { '.py': 'python', '.pyi': 'python' },
    markers: ['pyproject.toml', 'setup.py', 'setup.cfg', 'requirements.txt', 'Pipfile', 'pyrightconfig.json'],
  },
})

export function checkConfig(config: LspStdioConfig): Record<string, ServerConfig> {
  const servers: Record<string, ServerConfig> = { ...DEFAULT_SERVERS }
  for (const [name, server] of Object.entries(config?.servers ?? {})) {
    if (server === false) {
      delete servers[name]
      continue
    }
    const ok =
      Array.isArray(server?.command) &&
      server.command.length > 0 &&
      server.command.every((part) => typeof part === 'string') &&
      Array.isArray(server.extensions) &&
      server.extensions.every((ext) => typeof ext === 'string' && ext.startsWith('.'))
    if (!ok) {
      throw new HarnessError(
        'INVALID_LSP_CONFIG',
        `lsp server "${name}": give command (a list of strings, e.g. [gopls]) and extensions (a list like [".go"]), or false to switch it off`,
        { name },
      )
    }
    servers[name] = server
  }
  return servers
}

/** Directories holding node_modules/.bin above `from`. */
function binDirsAbove(from: string): string[] {
  const dirs: string[] = []
  for (let dir = from; ; dir = dirname(dir)) {
    const bin = join(dir, 'node_modules', '.bin')
    if (existsSync(bin)) dirs.push(bin)
    if (dirname(dir) === dir) return dirs
  }
}

/** The executable for `command` or undefined: PATH, then the workspace's and dsh's node_modules/.bin. */
export function findServerExecutable(command: string, root: string, path = process.env.PATH ?? ''): string | undefined {
  if (command.includes('/')) return existsSync(resolve(root, command)) ? resolve(root, command) : undefined
  const here = dirname(fileURLToPath(import.meta.url))
  const dirs = [...path.split(delimiter).filter(Boolean), ...binDirsAbove(root), ...binDirsAbove(here)]
  for (const dir of dirs) {
    const file = join(dir, command)
    try {
      if (statSync(file).isFile()) return file
    } catch {
      // not here
    }
  }
  return undefined
}
