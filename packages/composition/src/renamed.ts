// Module specifiers before the regroup (decision 400), so that a patch or plugin row still naming one
// fails with the new name in its message instead of a bare "cannot resolve". Not an alias: loading the
// old name silently would keep stale patches alive forever.
const MOVED: Record<string, string> = {
  'session-store': 'session/store',
  'session-store-pg': 'session/store-pg',
  'session-host': 'surfaces/host',
  'surface-headless': 'surfaces/headless',
  'surface-rpc': 'surfaces/rpc',
  'surface-acp': 'surfaces/acp',
  'surface-web': 'surfaces/web',
  'surface-tui': 'surfaces/tui',
  tools: 'agent/tools',
  approval: 'agent/approval',
  'system-prompt': 'agent/system-prompt',
  guards: 'agent/guards',
  subprocess: 'world/subprocess',
  shell: 'world/shell',
  fs: 'world/fs',
  sandbox: 'world/sandbox',
  jobs: 'world/jobs',
  terminal: 'world/terminal',
  subagents: 'orchestration/subagents',
  'subagents-acp': 'orchestration/subagents-acp',
  workflow: 'orchestration/workflow',
  'code-mode': 'coding-tools/code-mode',
  'web-fetch': 'coding-tools/web-fetch',
  credentials: 'settings/credentials',
  'work-state': 'interaction/work-state',
  mcp: 'bridges/mcp',
  hooks: 'bridges/hooks',
  skills: 'presets/skills',
}

const MOVED_EXACT: Record<string, string> = {
  '@dsh/session-store/title': '@dsh/context/title',
  '@dsh/session-store/search-tool': '@dsh/coding-tools/session-search',
}

/** The current specifier of a module named by its pre-regroup specifier, or undefined. */
export function renamedModule(use: string): string | undefined {
  if (MOVED_EXACT[use]) return MOVED_EXACT[use]
  const match = /^@dsh\/([\w-]+)(\/.*)?$/.exec(use)
  const moved = match && MOVED[match[1] as string]
  return moved ? `@dsh/${moved}${match[2] ?? ''}` : undefined
}
