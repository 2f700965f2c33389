// @dsh/world/terminal/tools: terminal_open, terminal_write, terminal_read and terminal_close over
// `ctx.terminals`. Each call is authorized by the caller's session: another session's terminal reads
// as `[no terminal ID]`. Results start with a status line and carry the terminal in `details` for
// surfaces.
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { defineTool, type ToolCallContext, ToolError } from '@dsh/agent/tools'
import { type Context, HarnessError, type JsonValue } from '@dsh/kernel'
import type {} from '@dsh/session'
import type { TerminalInfo, TerminalOwner, TerminalRead } from './index.js'

export const name = 'terminal-tools'
export const inject = ['tools', 'terminals', 'sessions']

const description = (tool: string) =>
  readFileSync(new URL(`../../descriptions/terminal/${tool}.md`, import.meta.url), 'utf8').trim()

const ownerOf = (call: ToolCallContext): TerminalOwner => ({
  ...(call.sessionId === undefined ? {} : { sessionId: call.sessionId }),
  ...(call.agentId === undefined ? {} : { agentId: call.agentId }),
})

/** `[term-1 running: node]` / `[term-1 exited with code 0: node]` */
export function statusLine(info: TerminalInfo): string {
  const state =
    info.status === 'running'
      ? 'running'
      : `exited${info.exitCode === undefined ? '' : ` with code ${info.exitCode}`}${info.signal ? ` (signal ${info.signal})` : ''}`
  return `[${info.id} ${state}: ${info.command}]`
}

function render(read: TerminalRead, view: 'new' | 'screen'): { content: string; details: JsonValue } {
  const lines = [statusLine(read.info)]
  if (read.omitted > 0) lines.push(`[${read.omitted} earlier bytes left out; the whole output is in ${read.spillPath}]`)
  if (read.matched === false) lines.push('[`until` did not match before the wait ended]')
  lines.push(read.text === '' ? (view === 'screen' ? '(the screen is empty)' : '(no new output)') : read.text)
  return { content: lines.join('\n'), details: { terminal: { ...read.info } } }
}

/** Runs a seam call, turning its refusals into model-readable tool errors. */
async function seam<T>(id: string, body: () => T | Promise<T>): Promise<T> {
  try {
    return await body()
  } catch (error) {
    if (HarnessError.is(error, 'TERMINAL_NOT_FOUND')) {
      throw new ToolError(
        `[no terminal ${id}] It is unknown or not this session's; terminal_open starts one.`,
        error.code,
      )
    }
    if (HarnessError.is(error, 'TERMINAL_EXITED')) throw new ToolError(`[terminal exited] ${error.message}`, error.code)
    if (error instanceof HarnessError) throw new ToolError(error.message, error.code)
    if (error instanceof SyntaxError)
      throw new ToolError(`\`until\` is not a valid regular expression: ${error.message}`, 'INVALID_ARGUMENTS')
    throw error
  }
}

const WAIT = {
  type: 'integer',
  minimum: 0,
  maximum: 60000,
  description: 'Milliseconds to wait for output. Default 1000.',
}
const UNTIL = { type: 'string', description: 'Stop waiting once the new output matches this regular expression.' }

export function apply(ctx: Context): void {
  const cwdOf = (call: ToolCallContext, cwd: string | undefined) => {
    const base =
      (call.sessionId === undefined ? undefined : ctx.sessions.get(call.sessionId)?.header.cwd) ?? process.cwd()
    return cwd === undefined ? base : resolve(base, cwd)
  }

  ctx.tools.register(
    defineTool<{ command?: string; cwd?: string; wait_ms?: number; until?: string }>({
      name: 'terminal_open',
      deferred: true,
      description: description('terminal_open'),
      parameters: {
        type: 'object',
        properties: {
          command: { type: 'string', description: 'The command line, e.g. "node" or "npm run dev". Default: bash.' },
          cwd: {
            type: 'string',
            description: 'Working directory (relative to the workspace). Default: the workspace.',
          },
          wait_ms: WAIT,
          until: UNTIL,
        },
        additionalProperties: false,
      },
      presentation: (args) => ({
        kind: 'terminal',
        title: 'Open terminal',
        command: args.command ?? 'bash -i',
        ...(args.cwd ? { cwd: args.cwd } : {}),
      }),
      execute: async (args, call) => {
        const owner = ownerOf(call)
        const info = await seam('', () =>
          ctx.terminals.open({
            ...owner,
            cwd: cwdOf(call, args.cwd),
            ...(args.command ? { command: args.command } : {}),
          }),
        )
        const read = await seam(info.id, () =>
          ctx.terminals.read(info.id, owner, {
            view: 'new',
            waitMs: args.wait_ms ?? 1000,
            ...(args.until ? { until: args.until } : {}),
          }),
        )
        return render(read, 'new')
      },
    }),
  )

  ctx.tools.register(
    defineTool<{ id: string; input: string; wait_ms?: number; until?: string }>({
      name: 'terminal_write',
      deferred: true,
      description: description('terminal_write'),
      parameters: {
        type: 'object',
        properties: {
          id: { type: 'string', description: 'The terminal, e.g. "term-1".' },
          input: { type: 'string', description: 'Text to type; a newline is Enter.' },
          wait_ms: WAIT,
          until: UNTIL,
        },
        required: ['id', 'input'],
        additionalProperties: false,
      },
      presentation: (args) => ({ kind: 'terminal', title: `Type into ${args.id}`, command: args.input }),
      execute: async (args, call) => {
        const owner = ownerOf(call)
        // Terminals take Enter as a carriage return.
        await seam(args.id, () => ctx.terminals.write(args.id, owner, args.input.replace(/\r?\n/g, '\r')))
        const read = await seam(args.id, () =>
          ctx.terminals.read(args.id, owner, {
            view: 'new',
            waitMs: args.wait_ms ?? 1000,
            ...(args.until ? { until: args.until } : {}),
          }),
        )
        return render(read, 'new')
      },
    }),
  )

  ctx.tools.register(
    defineTool<{ id: string; view?: 'new' | 'screen'; wait_ms?: number; until?: string; max_bytes?: number }>({
      name: 'terminal_read',
      deferred: true,
      readOnly: true,
      description: description('terminal_read'),
      mode: 'parallel-safe',
      parameters: {
        type: 'object',
        properties: {
          id: { type: 'string', description: 'The terminal, e.g. "term-1".' },
          view: { type: 'string', enum: ['new', 'screen'], description: 'Default "new".' },
          wait_ms: { ...WAIT, description: 'Milliseconds to wait for output. Default 0.' },
          until: UNTIL,
          max_bytes: { type: 'integer', minimum: 100, maximum: 200000, description: 'Default 16000.' },
        },
        required: ['id'],
        additionalProperties: false,
      },
      presentation: (args) => ({ kind: 'generic', title: 'Read terminal', subtitle: args.id }),
      execute: async (args, call) => {
        const view = args.view ?? 'new'
        const read = await seam(args.id, () =>
          ctx.terminals.read(args.id, ownerOf(call), {
            view,
            waitMs: args.wait_ms ?? 0,
            ...(args.until ? { until: args.until } : {}),
            ...(args.max_bytes ? { maxBytes: args.max_bytes } : {}),
          }),
        )
        return render(read, view)
      },
    }),
  )

  ctx.tools.register(
    defineTool<{ id: string }>({
      name: 'terminal_close',
      deferred: true,
      description: description('terminal_close'),
      parameters: {
        type: 'object',
        properties: { id: { type: 'string', description: 'The terminal, e.g. "term-1".' } },
        required: ['id'],
        additionalProperties: false,
      },
      presentation: (args) => ({ kind: 'generic', title: 'Close terminal', subtitle: args.id }),
      execute: async (args, call) => {
        const owner = ownerOf(call)
        await seam(args.id, () => ctx.terminals.close(args.id, owner))
        return render(await seam(args.id, () => ctx.terminals.read(args.id, owner, { view: 'new' })), 'new')
      },
    }),
  )
}

export default { name, inject, apply }
