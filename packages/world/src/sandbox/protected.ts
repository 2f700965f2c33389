// Protected paths (issue 34): files in the workspace that configure the agent or run code on their own
// (git hooks, editor tasks). Writable by mode, they still need a person's approval naming the risk in
// every mode short of danger-full-access: the fs fence refuses them (the write tools then ask), and
// bubblewrap binds the existing ones read-only for bash. Otherwise the model could configure its own
// session (a preset with a wider mode, an MCP server, a hook) or plant code that runs later unconfined.
import { isAbsolute, join } from 'node:path'

/** A path writes need approval for, and why (shown to the person and the model). */
export interface ProtectedPath {
  /** Absolute and canonical. */
  readonly path: string
  readonly why: string
}

const CONFIGURES = 'configures the agent (presets, patches, skills, plugins it loads)'

/** Relative to the workspace. Directories protect everything below them. */
export const PROTECTED_NAMES: ReadonlyArray<{ name: string; why: string }> = Object.freeze([
  { name: '.dsh', why: CONFIGURES },
  { name: '.mcp.json', why: 'configures the agent: the MCP servers it starts and the commands they run' },
  { name: '.claude', why: 'configures agents (settings, hooks that run commands, skills)' },
  { name: '.git/hooks', why: 'runs code on git actions (commit, checkout, push)' },
  { name: '.git/config', why: 'runs code on git actions (core.hooksPath, core.fsmonitor, aliases, filters)' },
  { name: '.husky', why: 'runs code on git actions (git hooks kept in the repository)' },
  { name: '.vscode', why: 'configures the editor (tasks and settings that run code when the folder opens)' },
  { name: '.envrc', why: 'runs code when a shell enters the directory (direnv)' },
])

/**
 * The protected paths of a workspace: the built-in names, then `extra` (relative to the workspace, or
 * absolute), each canonicalized with `canonical` (a symlinked `.dsh` protects where it points).
 */
export function protectedPaths(
  workspace: string,
  canonical: (path: string) => string,
  extra: readonly string[] = [],
): ProtectedPath[] {
  const named = PROTECTED_NAMES.map(({ name, why }) => ({ path: canonical(join(workspace, name)), why }))
  const more = extra.map((path) => ({
    path: canonical(isAbsolute(path) ? path : join(workspace, path)),
    why: 'is protected by the sandbox policy (protectedPaths)',
  }))
  return [...named, ...more]
}

const DSH_HOME_WHY =
  "is dsh's own (settings whose commands run unconfined, folder trust, patches and plugins, sessions)"

/** What dsh keeps in its home (protected even before it exists, when the workspace is inside it). */
const DSH_HOME_NAMES = [
  'settings.yaml',
  'trust.json',
  'patch.yml',
  'patches',
  'profiles',
  'plugins',
  'presets',
  'skills',
  'hooks',
  'package.json',
  'node_modules',
  '.npmrc',
  'sessions',
  'sessions.db',
  'blobs',
  'checkpoints',
  'shares',
  'cache',
  'background',
  'run',
  'worktrees',
]

/**
 * `$DSH_HOME`, protected wherever the workspace is (issue 38's review): a model that could write
 * `settings.yaml` (a status line or notification command), `trust.json`, a patch or a plugin would run
 * code outside the sandbox at the next start. Normally the whole folder; a workspace inside DSH_HOME
 * (as some tests have) gets dsh's own entries protected instead, the one holding the workspace excepted.
 */
export function dshHomePaths(home: string, workspace: string, canonical: (path: string) => string): ProtectedPath[] {
  const root = canonical(home)
  const within = (path: string) => workspace === path || workspace.startsWith(`${path}/`)
  if (!within(root)) return [{ path: root, why: DSH_HOME_WHY }]
  return DSH_HOME_NAMES.map((name) => canonical(join(root, name)))
    .filter((path) => !within(path))
    .map((path) => ({ path, why: DSH_HOME_WHY }))
}
