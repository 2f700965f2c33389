// Where credentials live: the paths a confined call may not read. bash sees them masked in its mount
// namespace (an empty read-only directory, or /dev/null for a file); the fs tools refuse them. The list
// is the dsh home's credential files, the usual per-user secret stores, `.env*` files in the home and
// in every ancestor of the workspace (the workspace's own `.env` is the project's business), plus the
// policy row's `secretPaths`.
import { existsSync, readdirSync, statSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { canonicalPath, isWithin } from './index.js'

/** Secret stores under the user's home, always hidden from confined calls. */
export const HOME_SECRETS: readonly string[] = Object.freeze([
  '.ssh',
  '.aws',
  '.config/gcloud',
  '.netrc',
  '.docker/config.json',
  '.gnupg',
])

export interface SecretPathsInput {
  /** The user's home (`~`). */
  home: string
  /** `$DSH_HOME`, when known: its `.credentials.yaml`, `.env` and `.web-token` are hidden. */
  dshHome?: string
  /** Canonical workspace root: `.env*` inside it stays readable, in its ancestors it is hidden. */
  workspace: string
  /** Extra paths (`~/` expands to `home`). */
  extra?: readonly string[]
}

// `.env*` names per directory, reused while the directory's mtime (which changes when an entry is
// added, removed or renamed) stays the same: the policy resolves on every confined call, and listing a
// large ancestor such as /tmp each time was a per-step cost.
const listed = new Map<string, { mtimeMs: number; files: string[] }>()

function envFiles(dir: string): string[] {
  try {
    const { mtimeMs } = statSync(dir)
    const known = listed.get(dir)
    if (known?.mtimeMs === mtimeMs) return known.files
    const files = readdirSync(dir)
      .filter((name) => name.startsWith('.env'))
      .map((name) => join(dir, name))
    listed.set(dir, { mtimeMs, files })
    return files
  } catch {
    listed.delete(dir)
    return []
  }
}

/** The existing secret paths, canonical and de-duplicated (a missing path has nothing to hide). */
export function secretPaths(input: SecretPathsInput): string[] {
  const expand = (path: string) => (path === '~' || path.startsWith('~/') ? join(input.home, path.slice(1)) : path)
  const candidates = [
    ...HOME_SECRETS.map((rel) => join(input.home, rel)),
    ...(input.dshHome
      ? [join(input.dshHome, '.credentials.yaml'), join(input.dshHome, '.env'), join(input.dshHome, '.web-token')]
      : []),
    ...envFiles(input.home),
    ...(input.extra ?? []).map(expand),
  ]
  for (let dir = dirname(input.workspace); ; dir = dirname(dir)) {
    candidates.push(...envFiles(dir))
    if (dirname(dir) === dir) break
  }
  const found = new Set<string>()
  for (const path of candidates) {
    if (!existsSync(path)) continue
    const canonical = canonicalPath(path)
    // The workspace's own .env files are the project's; an ancestor's are somebody else's secrets.
    if (isWithin(canonical, input.workspace) && /\/\.env[^/]*$/.test(canonical) && !isHomeSecret(path, input)) continue
    found.add(canonical)
  }
  return [...found]
}

function isHomeSecret(path: string, input: SecretPathsInput): boolean {
  return input.dshHome !== undefined && dirname(path) === input.dshHome
}
