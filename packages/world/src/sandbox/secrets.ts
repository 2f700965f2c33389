// Where credentials live: the paths a confined call may not read. bash sees them masked in its mount
// namespace (an empty read-only directory, or /dev/null for a file); the fs tools refuse them. The list
// is the dsh home's credential files, the usual per-user secret stores, `.env*` files in the home and
// in every ancestor of the workspace (the workspace's own `.env` is the project's business), the
// platform's browser profiles (cookies and saved passwords act as the user on the web), the user's
// runtime directory (`/run/user/$UID`: the D-Bus session bus, ssh-agent, gpg-agent and keyring sockets
// through which a process acts as the user) and the agent sockets the environment names, plus the
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
  '.local/share/keyrings',
])

/** Browser profiles under the user's home, per platform (a missing one has nothing to hide). */
export const BROWSER_PROFILES: Readonly<Record<string, readonly string[]>> = Object.freeze({
  linux: Object.freeze([
    '.mozilla',
    '.config/google-chrome',
    '.config/google-chrome-beta',
    '.config/chromium',
    '.config/BraveSoftware',
    '.config/microsoft-edge',
    '.config/vivaldi',
    '.config/opera',
    'snap/firefox',
    'snap/chromium',
    '.var/app/org.mozilla.firefox',
    '.var/app/com.google.Chrome',
    '.var/app/org.chromium.Chromium',
    '.var/app/com.brave.Browser',
    '.var/app/com.microsoft.Edge',
  ]),
  darwin: Object.freeze([
    'Library/Application Support/Google/Chrome',
    'Library/Application Support/Chromium',
    'Library/Application Support/BraveSoftware',
    'Library/Application Support/Microsoft Edge',
    'Library/Application Support/Firefox',
    'Library/Application Support/Vivaldi',
    'Library/Safari',
    'Library/Cookies',
    'Library/Keychains',
  ]),
})

/** The secret stores under a home on `platform`: the credential stores and its browser profiles. */
export function homeSecrets(platform: string = process.platform): string[] {
  return [...HOME_SECRETS, ...(BROWSER_PROFILES[platform] ?? [])]
}

/** The agent sockets `env` names (ssh-agent, the D-Bus session bus, gpg-agent), as absolute paths. */
export function agentSockets(env: Readonly<Record<string, string | undefined>>): string[] {
  const out: string[] = []
  if (env.SSH_AUTH_SOCK?.startsWith('/')) out.push(env.SSH_AUTH_SOCK)
  // `unix:path=/run/user/1000/bus,guid=...`; abstract addresses have no path to hide.
  for (const address of (env.DBUS_SESSION_BUS_ADDRESS ?? '').split(';')) {
    const path = /^unix:(?:.*,)?path=([^,]+)/.exec(address)?.[1]
    if (path?.startsWith('/')) out.push(path)
  }
  const gpg = env.GPG_AGENT_INFO?.split(':')[0]
  if (gpg?.startsWith('/')) out.push(gpg)
  return out
}

export interface SecretPathsInput {
  /** The user's home (`~`). */
  home: string
  /**
   * `$DSH_HOME`, when known: its `.credentials.yaml`, `.env` and `.web-token` are hidden, and its
   * control planes (`run`, `background`, `worktrees`).
   */
  dshHome?: string
  /** Canonical workspace root: `.env*` inside it stays readable, in its ancestors it is hidden. */
  workspace: string
  /** Extra paths (`~/` expands to `home`). */
  extra?: readonly string[]
  /** The platform whose browser profiles are hidden. Default: this process's. */
  platform?: string
  /** The user's runtime directory (`/run/user/$UID`) and agent sockets: hidden whole. */
  runtime?: readonly string[]
}

/** This process's runtime directory and the agent sockets its environment names. */
export function userRuntime(env: Readonly<Record<string, string | undefined>> = process.env): string[] {
  const uid = process.platform === 'linux' ? process.getuid?.() : undefined
  return [...(uid === undefined ? [] : [`/run/user/${uid}`]), ...agentSockets(env)]
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
    ...homeSecrets(input.platform).map((rel) => join(input.home, rel)),
    ...(input.runtime ?? []),
    ...(input.dshHome
      ? [
          join(input.dshHome, '.credentials.yaml'),
          join(input.dshHome, '.env'),
          join(input.dshHome, '.web-token'),
          // Control planes: the attach sockets answer approvals; the background and worktree records
          // tell `dsh agents stop` which process to signal and `dsh worktrees` what to delete.
          join(input.dshHome, 'run'),
          join(input.dshHome, 'background'),
          join(input.dshHome, 'worktrees'),
        ]
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
