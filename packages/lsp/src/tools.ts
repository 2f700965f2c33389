// @dsh/lsp/tools: the model-facing side of `ctx.lsp`. The `code_nav` tool (definition, references,
// hover, symbols) and a `tools/post-execute` policy that appends a changed file's new diagnostics
// (errors first, capped) to the result of a successful write or edit, so the model sees type errors
// without asking.
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { defineTool, type ToolCallContext, ToolError, type ToolExecution, type ToolOutcome } from '@dsh/agent/tools'
import type { Context } from '@dsh/kernel'
import type {} from '@dsh/session'
import { type LspAnswer, type LspDiagnostic, type LspLocation, type LspSymbol, where } from './index.js'
import { readSourceText } from './source.js'

export const name = 'lsp-tools'
export const inject = ['tools', 'lsp', 'sessions']

export interface LspToolsConfig {
  /** Tools whose successful results get the changed file's diagnostics: tool name -> its path argument. Default write and edit. */
  diagnosticsAfter?: Record<string, string>
  /** Diagnostics listed after a change (errors first). Default 20. */
  maxDiagnostics?: number
  /** Also list hints (unused names and the like). Default false. */
  hints?: boolean
}

type Action = 'definition' | 'references' | 'hover' | 'symbols' | 'workspace_symbols'
interface NavArgs {
  action: Action
  path: string
  line?: number
  column?: number
  symbol?: string
  query?: string
}

const MAX_LOCATIONS = 100

function description(file: string): string {
  return readFileSync(new URL(`../descriptions/${file}.md`, import.meta.url), 'utf8').trim()
}

const notesOf = (answer: LspAnswer<unknown>) => answer.notes.map((note) => `[note: ${note}]`)

/** The text of line `line` (1-based) of a file, trimmed; empty when unreadable (or not a regular file). */
async function lineText(root: string, path: string, line: number, cache: Map<string, string[]>): Promise<string> {
  const file = resolve(root, path)
  let lines = cache.get(file)
  if (!lines) {
    try {
      lines = (await readSourceText(file)).split('\n')
    } catch {
      lines = []
    }
    cache.set(file, lines)
  }
  return (lines[line - 1] ?? '').trim()
}

/** Diagnostic lines as the model reads them, errors first, at most `max`. */
export function formatDiagnostics(server: string, path: string, items: readonly LspDiagnostic[], max: number): string {
  const count = (severity: string) => items.filter((item) => item.severity === severity).length
  const errors = count('error')
  const warnings = count('warning')
  if (items.length === 0) return `[${server}: no problems in ${path}]`
  const summary = [
    errors ? `${errors} error${errors === 1 ? '' : 's'}` : '',
    warnings ? `${warnings} warning${warnings === 1 ? '' : 's'}` : '',
    items.length - errors - warnings ? `${items.length - errors - warnings} other` : '',
  ]
    .filter(Boolean)
    .join(', ')
  const lines = items.slice(0, max).map((item) => {
    const code = item.code === undefined ? '' : ` ${item.source === 'typescript' ? 'TS' : ''}${item.code}`
    return `${where(item)} ${item.severity}${code}: ${item.message.replace(/\s*\n\s*/g, ' ')}`
  })
  const more = items.length > max ? [`... and ${items.length - max} more`] : []
  return [`[${server} diagnostics for ${path} after this change: ${summary}]`, ...lines, ...more].join('\n')
}

export function apply(ctx: Context, config: LspToolsConfig = {}): void {
  const after = config?.diagnosticsAfter ?? { write: 'path', edit: 'path' }
  const max = config?.maxDiagnostics ?? 20
  const rootOf = (sessionId: string | undefined) =>
    (sessionId === undefined ? undefined : ctx.sessions.get(sessionId)?.header.cwd) ?? process.cwd()

  const codeNav = defineTool<NavArgs>({
    name: 'code_nav',
    readOnly: true,
    description: description('code_nav'),
    mode: 'parallel-safe',
    parameters: {
      type: 'object',
      properties: {
        action: { type: 'string', enum: ['definition', 'references', 'hover', 'symbols', 'workspace_symbols'] },
        path: { type: 'string', description: 'The file (relative to the workspace or absolute).' },
        line: { type: 'integer', minimum: 1, description: '1-based line (definition, references, hover).' },
        column: { type: 'integer', minimum: 1, description: '1-based column of the name on that line.' },
        symbol: { type: 'string', description: 'The name as written on that line (instead of column).' },
        query: { type: 'string', description: 'Name (or part) to search (workspace_symbols).' },
      },
      required: ['action', 'path'],
      additionalProperties: false,
    },
    presentation: (args) => ({
      kind: 'generic',
      title: `Code nav: ${args.action}`,
      subtitle: args.line === undefined ? args.path : `${args.path}:${args.line}`,
      locations: [{ path: args.path, ...(args.line === undefined ? {} : { line: args.line }) }],
    }),
    execute: async (args, call: ToolCallContext) => {
      const root = rootOf(call.sessionId)
      const target = {
        root,
        path: args.path,
        ...(call.sessionId === undefined ? {} : { sessionId: call.sessionId }),
        signal: call.signal,
      }
      if (!ctx.lsp.handles(args.path)) {
        throw new ToolError(
          `No language server is configured for ${args.path}. Configured: TypeScript/JavaScript and Python by default; use grep for other files.`,
          'LSP_NO_SERVER',
        )
      }
      const cache = new Map<string, string[]>()
      const listLocations = async (answer: LspAnswer<LspLocation[]>, what: string) => {
        const shown = answer.value.slice(0, MAX_LOCATIONS)
        const lines: string[] = []
        for (const at of shown) lines.push(`${where(at)}  ${await lineText(root, at.path, at.line, cache)}`)
        if (answer.value.length > shown.length) lines.push(`... and ${answer.value.length - shown.length} more`)
        return [...(lines.length ? lines : [`No ${what} found.`]), ...notesOf(answer)].join('\n')
      }
      const listSymbols = (answer: LspAnswer<LspSymbol[]>) => {
        const lines = answer.value
          .slice(0, MAX_LOCATIONS)
          .map((s) => `${s.kind} ${s.container ? `${s.container}.` : ''}${s.name}  ${where(s)}`)
        if (answer.value.length > MAX_LOCATIONS) lines.push(`... and ${answer.value.length - MAX_LOCATIONS} more`)
        return [...(lines.length ? lines : ['No symbols found.']), ...notesOf(answer)].join('\n')
      }
      if (args.action === 'symbols') return listSymbols(await ctx.lsp.documentSymbols(target))
      if (args.action === 'workspace_symbols') {
        if (!args.query)
          throw new ToolError('workspace_symbols needs `query` (a name or part of one).', 'INVALID_ARGUMENTS')
        return listSymbols(await ctx.lsp.workspaceSymbols({ ...target, query: args.query }))
      }
      if (args.line === undefined)
        throw new ToolError(`${args.action} needs \`line\` and \`symbol\` or \`column\`.`, 'INVALID_ARGUMENTS')
      let column = args.column
      if (column === undefined) {
        let text: string | undefined
        try {
          text = (await readSourceText(resolve(root, args.path))).split('\n')[args.line - 1]
        } catch (error) {
          const code = (error as { code?: unknown }).code
          const known = typeof code === 'string' && code.startsWith('FS_')
          throw new ToolError(
            known ? (error as Error).message : `Cannot read ${args.path}.`,
            known ? code : 'FS_NOT_FOUND',
          )
        }
        const found = args.symbol
          ? (text ?? '').search(new RegExp(`\\b${args.symbol.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\b`))
          : -1
        if (found < 0) {
          throw new ToolError(
            `${args.symbol ? `"${args.symbol}" is not on` : 'Give `symbol` or `column` for'} line ${args.line} of ${args.path}${text === undefined ? '' : `: ${text.trim()}`}`,
            'INVALID_ARGUMENTS',
          )
        }
        column = found + 1
      }
      const at = { ...target, line: args.line, column }
      if (args.action === 'definition') return listLocations(await ctx.lsp.definition(at), 'definition')
      if (args.action === 'references') return listLocations(await ctx.lsp.references(at), 'references')
      const hover = await ctx.lsp.hover(at)
      return [hover.value ?? 'No hover information at that position.', ...notesOf(hover)].join('\n')
    },
  })
  ctx.tools.register(codeNav)

  ctx.on('tools/post-execute', async (execution: ToolExecution, next: () => Promise<ToolOutcome>) => {
    const outcome = await next()
    const field = after[execution.toolName]
    const path = field === undefined ? undefined : execution.args[field]
    if (outcome.isError || typeof path !== 'string' || !ctx.lsp.handles(path)) return outcome
    const answer = await ctx.lsp.diagnostics({
      root: rootOf(execution.sessionId),
      path,
      ...(execution.sessionId === undefined ? {} : { sessionId: execution.sessionId }),
      signal: execution.signal,
    })
    if (answer.server === undefined) return outcome
    const shown = answer.value.filter((item) => config?.hints || item.severity !== 'hint')
    const earlier = (answer.earlier ?? []).map((late) =>
      formatDiagnostics(
        answer.server as string,
        `${late.path} (an earlier change)`,
        late.diagnostics.filter((item) => config?.hints || item.severity !== 'hint'),
        max,
      ),
    )
    const text = [
      ...(answer.answered ? [formatDiagnostics(answer.server, path, shown, max)] : []),
      ...earlier,
      ...notesOf(answer),
    ].join('\n')
    if (text === '') return outcome
    return { ...outcome, content: [...outcome.content, { type: 'text', text }] }
  })
}

export default { name, inject, apply }
