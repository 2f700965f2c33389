// The commands people type by habit (issue 31): /exit and /quit, /clear and /new, /status, /mcp and
// /init (/diff is in ./diff-command.ts). /exit and /new change what the surface shows, so they answer
// with `data.action` (`exit`, `new-session`) for the surface to act on; a surface that cannot says so.
// Optional services (`ctx.mcp`, `ctx.tokenMeter`, `ctx.sandboxPolicy`, `ctx.approval`) are looked up
// per call and typed structurally: this package does not depend on theirs.
import type {} from '@dsh/agent/approval'
import type { Context } from '@dsh/kernel'
import { requireAgent, requireSession } from './commands.js'
import { currentModel } from './model-choice.js'

/** What /status and /mcp read of `ctx.mcp`. */
interface McpLike {
  servers(): Array<{ name: string; source: string; state: string; tools: string[]; error?: string }>
}

/** What /status reads of `ctx.tokenMeter`. */
interface MeterLike {
  measure(session: unknown): { tokens: number; window?: number; pressure?: number }
}

interface SandboxLike {
  mode(sessionId?: string): string
}

function optional<T>(ctx: Context, name: string): T | undefined {
  return (ctx.get as (name: string) => unknown)(name) as T | undefined
}

/** The prompt /init sends: a normal turn, so the write goes through the tools and their approval. */
export const INIT_PROMPT = [
  'Write an AGENTS.md file at the root of this repository: the guide a coding agent reads before working here.',
  'First look at the repository (README, package manifests, build and test scripts, CI config, the source layout).',
  'Then describe, briefly and concretely: what the project is, how to install, build, test and lint it (exact',
  'commands), the layout of the code, and the conventions a change must follow. If AGENTS.md already exists,',
  'improve it instead of starting over. Use the write or edit tool for the file.',
].join(' ')

function mcpLines(mcp: McpLike | undefined, detail: boolean): string[] {
  const servers = mcp?.servers() ?? []
  if (servers.length === 0)
    return ['MCP servers: none (add one in .mcp.json or the mcp row of settings; see the README)']
  const lines = [`MCP servers (${servers.length}):`]
  for (const server of servers) {
    const tools = `${server.tools.length} tool${server.tools.length === 1 ? '' : 's'}`
    lines.push(`  ${server.name}: ${server.state}, ${tools}${server.error ? ` (error: ${server.error})` : ''}`)
    if (detail) {
      lines.push(`    from ${server.source}`)
      for (const tool of server.tools) lines.push(`    ${tool}`)
    }
  }
  return lines
}

export function registerSessionCommands(ctx: Context): void {
  for (const name of ['exit', 'quit']) {
    ctx.commands.register({
      name,
      description: 'Leave the terminal chat, like Ctrl-D (the session stays resumable)',
      run: (_args, context) => ({
        text: `/${name} leaves the terminal chat; on the web page or in an editor, close the tab or panel (the session stays resumable${context.session ? `: dsh --resume ${context.session.id}` : ''})`,
        data: { action: 'exit' },
      }),
    })
  }

  for (const name of ['clear', 'new']) {
    ctx.commands.register({
      name,
      description: 'Start a fresh session in the same workspace (this one stays resumable)',
      run: (_args, context) => {
        const session = requireSession(context)
        return {
          text: `a new session starts in ${session.header.cwd}; this one stays resumable: dsh --resume ${session.id}`,
          data: { action: 'new-session', cwd: session.header.cwd, previous: session.id },
        }
      },
    })
  }

  ctx.commands.register({
    name: 'status',
    description: 'Show the model, preset, mode, session, workspace, context use and MCP servers',
    run: (_args, context) => {
      const agent = requireAgent(context)
      const session = agent.session
      const lines = [`model: ${currentModel(ctx, agent)}`, `preset: ${agent.preset ?? '(none)'}`]
      const sandbox = optional<SandboxLike>(ctx, 'sandboxPolicy')
      const approval = ctx.get('approval')
      const mode = [
        ...(sandbox ? [sandbox.mode(session.id)] : []),
        ...(approval ? [`approval ${approval.policy(session.id)}`] : []),
      ]
      lines.push(`mode: ${mode.join(', ') || '(no sandbox policy)'}`)
      lines.push(`session: ${session.id}`, `workspace: ${session.header.cwd}`)
      const meter = optional<MeterLike>(ctx, 'tokenMeter')
      try {
        const reading = meter?.measure(session)
        if (reading) {
          const tokens = reading.tokens.toLocaleString('en-US')
          lines.push(
            reading.window
              ? `context: ${tokens} of ${reading.window.toLocaleString('en-US')} tokens (${Math.round((reading.pressure ?? 0) * 100)}%)`
              : `context: ${tokens} tokens (the model's window is unknown)`,
          )
        }
      } catch {
        lines.push('context: unknown until the model is resolved')
      }
      lines.push(...mcpLines(optional<McpLike>(ctx, 'mcp'), false))
      return { text: lines.join('\n'), data: { sessionId: session.id, cwd: session.header.cwd } }
    },
  })

  ctx.commands.register({
    name: 'mcp',
    description: 'List the MCP servers: their state, tools and errors',
    run: () => {
      const mcp = optional<McpLike>(ctx, 'mcp')
      return { text: mcpLines(mcp, true).join('\n'), data: { servers: (mcp?.servers() ?? []) as never } }
    },
  })

  ctx.commands.register({
    name: 'init',
    description: 'Ask the model to write an AGENTS.md for this repository (a normal turn, with approval)',
    run: (_args, context) => {
      const agent = requireAgent(context)
      const receipt = agent.followup(INIT_PROMPT)
      return {
        text: 'asked the model to write AGENTS.md for this repository (its writes ask for approval as usual)',
        data: { messageId: receipt.id },
      }
    },
  })
}
