// `/diff`: what changed in the workspace, as a unified diff. In a git work tree it is `git diff HEAD`
// plus the untracked files (every uncommitted change, not only this session's); elsewhere, or with
// `/diff session`, it is rebuilt from the session's logged write and edit calls that succeeded (shell
// commands' changes are not in it). The answer says which one it is.
import { execFile } from 'node:child_process'
import type { Context } from '@dsh/kernel'
import type { ToolCallBlock } from '@dsh/llm'
import { isEvent, type Session } from '@dsh/session'
import { requireSession, usageError } from './commands.js'
import type {} from './rewind/index.js'

/** The most a /diff answer holds; the rest is cut with a note. */
const MAX_CHARS = 200_000

function git(cwd: string, args: string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile('git', args, { cwd, maxBuffer: 8 * 1024 * 1024, timeout: 20_000 }, (error, stdout) => {
      const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0
      resolve({ code, out: String(stdout) })
    })
  })
}

async function gitDiff(cwd: string): Promise<string | undefined> {
  const inside = await git(cwd, ['rev-parse', '--is-inside-work-tree'])
  if (inside.code !== 0 || inside.out.trim() !== 'true') return undefined
  const hasHead = (await git(cwd, ['rev-parse', '--verify', '--quiet', 'HEAD'])).code === 0
  const tracked = await git(cwd, ['diff', '--no-color', '--no-ext-diff', ...(hasHead ? ['HEAD'] : []), '--'])
  const parts = [tracked.out]
  const untracked = await git(cwd, ['ls-files', '--others', '--exclude-standard', '-z'])
  for (const file of untracked.out.split('\0').filter(Boolean).slice(0, 100)) {
    // Exit code 1 means "they differ", which a new file always does.
    parts.push((await git(cwd, ['diff', '--no-color', '--no-index', '--', '/dev/null', file])).out)
  }
  return parts.join('')
}

function added(path: string, content: string): string {
  const lines = content === '' ? [] : content.replace(/\n$/, '').split('\n')
  return [
    `--- /dev/null`,
    `+++ b/${path}`,
    `@@ -0,0 +1,${lines.length} @@`,
    ...lines.map((line) => `+${line}`),
    '',
  ].join('\n')
}

/** The unified diffs of the session's successful write and edit calls, in order. */
export function sessionDiff(session: Session): string {
  const calls = new Map<string, ToolCallBlock>()
  const parts: string[] = []
  for (const event of session.events) {
    if (isEvent(event, 'tool/call')) calls.set(event.data.call.id, event.data.call)
    if (!isEvent(event, 'tool/result') || event.data.message.isError) continue
    const call = calls.get(event.data.message.toolCallId)
    const text = event.data.message.content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('')
    const path = typeof call?.arguments.path === 'string' ? call.arguments.path : undefined
    if (!call || !path) continue
    if (call.name === 'write' && typeof call.arguments.content === 'string') {
      const content = call.arguments.content
      // An overwrite's earlier content is not in the log: the whole new content is shown as added.
      parts.push(text.startsWith('Created') ? added(path, content) : `# ${path} overwritten:\n${added(path, content)}`)
    } else if (call.name === 'edit') {
      const newline = text.indexOf('\n')
      if (newline >= 0) parts.push(`${text.slice(newline + 1).replace(/\n?$/, '\n')}`)
    }
  }
  return parts.join('')
}

function bounded(text: string): string {
  return text.length <= MAX_CHARS ? text : `${text.slice(0, MAX_CHARS)}\n… cut at ${MAX_CHARS} characters`
}

export function registerDiffCommand(ctx: Context): void {
  ctx.commands.register({
    name: 'diff',
    description: 'Show what changed in the workspace as a unified diff (git diff, or the session log)',
    usage: '[session | N]',
    async run(args, context) {
      const session = requireSession(context)
      const rewind = ctx.get('rewind')
      if (/^\d+$/.test(args) && rewind) {
        // Since the checkpoint before message N (as /rewind lists them): whatever changed the files.
        const { patch, changes } = await rewind.diff(session, Number(args))
        const head = `changes in ${session.header.cwd} since before message ${args} (${changes.length} file${changes.length === 1 ? '' : 's'}, shell commands included)`
        return { text: patch ? `${head}\n${bounded(patch)}` : `${head}: no changes`, data: { source: 'checkpoint' } }
      }
      if (args && args !== 'session') throw usageError('diff', '[session | N]', `"${args}" is not a /diff option`)
      const cwd = session.header.cwd
      const fromGit = args === 'session' ? undefined : await gitDiff(cwd)
      if (fromGit !== undefined) {
        const head = `git diff HEAD of ${cwd}, untracked files included (every uncommitted change, not only this session's; /diff session shows the session's own writes)`
        return { text: fromGit ? `${head}\n${bounded(fromGit)}` : `${head}: no changes`, data: { source: 'git' } }
      }
      const fromLog = sessionDiff(session)
      const head = `the session's logged writes and edits in ${cwd} (changes made by shell commands are not included)`
      return { text: fromLog ? `${head}\n${bounded(fromLog)}` : `${head}: no changes`, data: { source: 'session' } }
    },
  })
}
