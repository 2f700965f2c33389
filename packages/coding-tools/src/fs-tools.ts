// @dsh/coding-tools/fs: the file tools the model uses (read, write, edit, ls, glob, grep), over
// `ctx.fs`. read reports what it saw (`fs/observed`); write and edit ask `fs/mutation-intent` first
// (the observation policy answers there), write through the version it returns, and report
// `fs/mutated`. Sandbox refusals come back as `[sandbox: ...]` results with the escalation route.

import { createRequire } from 'node:module'
import { defineTool, type ToolCallContext, type ToolDefinition, ToolError } from '@dsh/agent/tools'
import type {} from '@dsh/attachments'
import { type Context, HarnessError } from '@dsh/kernel'
import type { ToolResultContent } from '@dsh/llm'
import type { FileSystem, FileVersion, FsMutationDecision, FsMutationIntent, WriteMode } from '@dsh/world/fs'
import {
  callPolicy,
  clip,
  description,
  ESCALATION_PROPERTIES,
  type EscalationArgs,
  fsFailure,
  withProtection,
  workspaceOf,
} from './shared.js'

// The diff library loads with the first write or edit, not with every session.
const require = createRequire(import.meta.url)

export const name = 'coding-tools-fs'
export const inject = ['tools', 'fs']

export interface FsToolsConfig {
  /** Lines `read` returns without an explicit limit. Default 2000. */
  readLimit?: number
  /** Paths `glob` returns at most. Default 200. */
  globLimit?: number
  /** Matches `grep` returns at most. Default 200. */
  grepLimit?: number
}

const MAX_LS = 1000

interface Env {
  fs: FileSystem
  cwd: string | undefined
  call: ToolCallContext
}

function env(ctx: Context, call: ToolCallContext): Env {
  return { fs: ctx.fs, cwd: workspaceOf(ctx, call), call }
}

const base = (e: Env) => ({
  ...(e.cwd === undefined ? {} : { cwd: e.cwd }),
  ...(e.call.sessionId === undefined ? {} : { sessionId: e.call.sessionId }),
  signal: e.call.signal,
})

async function intent(ctx: Context, value: FsMutationIntent): Promise<FsMutationDecision> {
  const decision = await ctx.waterfall(
    'fs/mutation-intent',
    value,
    async () => ({ action: 'allow' }) as FsMutationDecision,
  )
  if (decision.action === 'deny') {
    const marker =
      decision.code === 'FS_NOT_OBSERVED'
        ? '[not read]'
        : decision.code === 'FS_VERSION_CONFLICT'
          ? '[changed on disk]'
          : '[refused]'
    throw new ToolError(`${marker} ${decision.message}`, decision.code)
  }
  return decision
}

function diffOf(path: string, before: string, after: string): string {
  const patch = (require('diff') as typeof import('diff')).createTwoFilesPatch(path, path, before, after, '', '', {
    context: 3,
  })
  return patch.split('\n').slice(2).join('\n').trimEnd()
}

const IMAGE_FILE = /\.(png|jpe?g|gif|webp)$/i

/** An image file becomes an image block the model sees (stored in ctx.attachments, scaled to its limits). */
async function readImage(ctx: Context, e: Env, path: string): Promise<ToolResultContent[]> {
  const attachments = ctx.get('attachments')
  if (!attachments) {
    throw new ToolError(
      `Not a text file: ${path} is an image, and this dsh has no attachment store to show it (the attachments row is disabled).`,
      'FS_NOT_TEXT',
    )
  }
  const max = attachments.limits.maxBytes
  const read = await e.fs
    .readBytes(path, { ...base(e), maxBytes: max + 1 })
    .catch((error) => fsFailure(ctx, e.call, error, path))
  const blob = await attachments.put(read.bytes, { name: path }).catch((error: unknown) => {
    if (error instanceof HarnessError) throw new ToolError(`Not a usable image: ${error.message}`, error.code)
    throw error
  })
  const size = `${blob.width}x${blob.height}, ${blob.bytes} bytes`
  const scaled = blob.original
    ? `; scaled down from ${blob.original.width}x${blob.original.height} (${blob.original.bytes} bytes) to fit the model's limits`
    : ''
  return [
    { type: 'text', text: `[image ${path}: ${blob.mimeType}, ${size}${scaled}]` },
    { type: 'image', ref: blob.ref, mimeType: blob.mimeType },
  ]
}

export function createFsTools(ctx: Context, config: FsToolsConfig = {}): ToolDefinition<never>[] {
  const read = defineTool<{ path: string; offset?: number; limit?: number }>({
    name: 'read',
    readOnly: true,
    description: description('read'),
    mode: 'parallel-safe',
    parameters: {
      type: 'object',
      properties: {
        path: { type: 'string', description: 'The file to read (absolute or workspace-relative).' },
        offset: { type: 'integer', minimum: 1, description: 'First line to return (1-based). Default 1.' },
        limit: { type: 'integer', minimum: 1, description: 'How many lines to return. Default 2000.' },
      },
      required: ['path'],
      additionalProperties: false,
    },
    presentation: (args) => ({ kind: 'generic', title: 'Read', subtitle: args.path, locations: [{ path: args.path }] }),
    async execute(args, call) {
      const e = env(ctx, call)
      const path = e.fs.resolvePath(args.path, base(e))
      if (IMAGE_FILE.test(path)) return readImage(ctx, e, path)
      const file = await e.fs.readText(path, base(e)).catch((error) => fsFailure(ctx, call, error, path))
      ctx.emit('fs/observed', {
        ...(call.sessionId === undefined ? {} : { sessionId: call.sessionId }),
        path,
        version: file.version,
      })
      if (file.text === '') return `[empty file: ${path}]`
      const lines = file.text.endsWith('\n') ? file.text.slice(0, -1).split('\n') : file.text.split('\n')
      const start = (args.offset ?? 1) - 1
      if (start >= lines.length) {
        throw new ToolError(
          `offset ${args.offset} is past the end of ${path}, which has ${lines.length} lines.`,
          'READ_OFFSET',
        )
      }
      const end = Math.min(lines.length, start + (args.limit ?? config.readLimit ?? 2000))
      const width = String(end).length
      const body = lines
        .slice(start, end)
        .map((line, i) => `${String(start + i + 1).padStart(Math.max(width, 5))}\t${clip(line.replace(/\r$/, ''))}`)
        .join('\n')
      const footer =
        end < lines.length || start > 0
          ? `\n[lines ${start + 1}-${end} of ${lines.length}${end < lines.length ? `; continue with offset=${end + 1}` : ''}]`
          : ''
      return `${body}${footer}`
    },
  })

  const write = defineTool<{ path: string; content: string } & EscalationArgs>({
    name: 'write',
    description: description('write'),
    parameters: {
      type: 'object',
      properties: {
        path: { type: 'string', description: 'The file to write (absolute or workspace-relative).' },
        content: { type: 'string', description: 'The complete new content of the file.' },
        ...ESCALATION_PROPERTIES,
      },
      required: ['path', 'content'],
      additionalProperties: false,
    },
    presentation: (args) => ({
      kind: 'diff',
      title: 'Write',
      path: args.path,
      after: args.content,
      locations: [{ path: args.path }],
    }),
    async execute(args, call) {
      const e = env(ctx, call)
      const path = e.fs.resolvePath(args.path, base(e))
      const policy = await callPolicy(ctx, call, args, `Write ${path} with wider sandbox permissions`)
      try {
        const result = await withProtection(ctx, call, policy, async (policy) => {
          const options = { ...base(e), ...(policy ? { policy } : {}) }
          const current = await e.fs.version(path, options)
          const decision = await intent(ctx, { ...sid(call), path, kind: 'write', current })
          const mode: WriteMode =
            decision.action === 'allow' && decision.expectedVersion !== undefined
              ? { kind: 'replaceIfVersion', version: decision.expectedVersion }
              : current === undefined
                ? { kind: 'createIfAbsent' }
                : { kind: 'overwrite' }
          return e.fs.writeText(path, args.content, mode, options)
        })
        ctx.emit('fs/mutated', { ...sid(call), path, version: result.version })
        const lines = args.content === '' ? 0 : args.content.split('\n').length - (args.content.endsWith('\n') ? 1 : 0)
        return `${result.created ? 'Created' : 'Wrote'} ${path} (${lines} lines).`
      } catch (error) {
        return fsFailure(ctx, call, error, path, policy)
      }
    },
  })

  const edit = defineTool<
    { path: string; old_string: string; new_string: string; replace_all?: boolean } & EscalationArgs
  >({
    name: 'edit',
    description: description('edit'),
    parameters: {
      type: 'object',
      properties: {
        path: { type: 'string', description: 'The file to edit (absolute or workspace-relative).' },
        old_string: { type: 'string', description: 'The exact text to replace.' },
        new_string: { type: 'string', description: 'The replacement text (must differ from old_string).' },
        replace_all: {
          type: 'boolean',
          description: 'Replace every occurrence instead of exactly one. Default false.',
        },
        ...ESCALATION_PROPERTIES,
      },
      required: ['path', 'old_string', 'new_string'],
      additionalProperties: false,
    },
    presentation: (args) => ({
      kind: 'diff',
      title: 'Edit',
      path: args.path,
      before: args.old_string,
      after: args.new_string,
      locations: [{ path: args.path }],
    }),
    async execute(args, call) {
      const e = env(ctx, call)
      const path = e.fs.resolvePath(args.path, base(e))
      const policy = await callPolicy(ctx, call, args, `Edit ${path} with wider sandbox permissions`)
      try {
        const result = await withProtection(ctx, call, policy, async (policy) => {
          const options = { ...base(e), ...(policy ? { policy } : {}) }
          const current = await e.fs.version(path, options)
          if (current === undefined)
            throw new ToolError(`File not found: ${path}. Use write to create a new file.`, 'FS_NOT_FOUND')
          const decision = await intent(ctx, { ...sid(call), path, kind: 'edit', current })
          const expectedVersion: FileVersion | undefined =
            decision.action === 'allow' ? decision.expectedVersion : undefined
          return e.fs.editText(
            path,
            [{ oldText: args.old_string, newText: args.new_string, replaceAll: args.replace_all === true }],
            { ...options, ...(expectedVersion ? { expectedVersion } : {}) },
          )
        })
        ctx.emit('fs/mutated', { ...sid(call), path, version: result.version })
        const count = result.replacements === 1 ? '1 replacement' : `${result.replacements} replacements`
        return {
          content: `Edited ${path} (${count}):\n${diffOf(path, result.before, result.after)}`,
          details: { path },
        }
      } catch (error) {
        return fsFailure(ctx, call, error, path, policy)
      }
    },
  })

  const ls = defineTool<{ path?: string }>({
    name: 'ls',
    readOnly: true,
    description: description('ls'),
    mode: 'parallel-safe',
    parameters: {
      type: 'object',
      properties: { path: { type: 'string', description: 'The directory to list. Default: the workspace.' } },
      additionalProperties: false,
    },
    presentation: (args) => ({ kind: 'generic', title: 'List', subtitle: args.path ?? '.' }),
    async execute(args, call) {
      const e = env(ctx, call)
      const path = e.fs.resolvePath(args.path ?? '.', base(e))
      const entries = await e.fs.list(path, base(e)).catch((error) => fsFailure(ctx, call, error, path))
      if (entries.length === 0) return `[empty directory: ${path}]`
      const shown = entries
        .slice(0, MAX_LS)
        .map((entry) => entry.name + (entry.kind === 'directory' ? '/' : entry.kind === 'symlink' ? '@' : ''))
      const more =
        entries.length > MAX_LS ? `\n[truncated: ${entries.length - MAX_LS} more entries; use glob to narrow]` : ''
      return `${path}:\n${shown.join('\n')}${more}`
    },
  })

  const glob = defineTool<{ pattern: string; path?: string }>({
    name: 'glob',
    readOnly: true,
    description: description('glob'),
    mode: 'parallel-safe',
    parameters: {
      type: 'object',
      properties: {
        pattern: { type: 'string', description: 'The glob, e.g. "src/**/*.ts" or "*.md".' },
        path: { type: 'string', description: 'The directory to search. Default: the workspace.' },
      },
      required: ['pattern'],
      additionalProperties: false,
    },
    presentation: (args) => ({ kind: 'generic', title: 'Glob', subtitle: args.pattern }),
    async execute(args, call) {
      const e = env(ctx, call)
      const root = e.fs.resolvePath(args.path ?? '.', base(e))
      const limit = config.globLimit ?? 200
      const result = await e.fs
        .glob(args.pattern, { ...base(e), cwd: root, limit })
        .catch((error) => fsFailure(ctx, call, error, root))
      if (result.paths.length === 0) return `No files found matching ${args.pattern} in ${root}`
      const more = result.truncated ? `\n[truncated: more than ${limit} files match; narrow the pattern or path]` : ''
      return `${result.paths.join('\n')}${more}`
    },
  })

  const grep = defineTool<{ pattern: string; path?: string; include?: string; ignore_case?: boolean }>({
    name: 'grep',
    readOnly: true,
    description: description('grep'),
    mode: 'parallel-safe',
    parameters: {
      type: 'object',
      properties: {
        pattern: { type: 'string', description: 'A JavaScript regular expression.' },
        path: { type: 'string', description: 'A file or directory to search. Default: the workspace.' },
        include: { type: 'string', description: 'Only search files matching this glob, e.g. "*.ts".' },
        ignore_case: { type: 'boolean', description: 'Case-insensitive. Default false.' },
      },
      required: ['pattern'],
      additionalProperties: false,
    },
    presentation: (args) => ({ kind: 'generic', title: 'Grep', subtitle: args.pattern }),
    async execute(args, call) {
      const e = env(ctx, call)
      const path = e.fs.resolvePath(args.path ?? '.', base(e))
      const limit = config.grepLimit ?? 200
      const result = await e.fs
        .grep(args.pattern, path, {
          ...base(e),
          limit,
          ...(args.include ? { include: args.include } : {}),
          ...(args.ignore_case ? { ignoreCase: true } : {}),
        })
        .catch((error) => fsFailure(ctx, call, error, path))
      if (result.matches.length === 0)
        return `No matches for ${args.pattern} in ${path} (${result.filesSearched} files searched)`
      const lines = result.matches.map((m) => `${m.path}:${m.line}: ${m.text}`)
      const more = result.truncated
        ? `\n[truncated: more than ${limit} matches; narrow the pattern, path or include]`
        : ''
      return `${lines.join('\n')}${more}`
    },
  })

  return [read, write, edit, ls, glob, grep] as ToolDefinition<never>[]
}

const sid = (call: ToolCallContext) => (call.sessionId === undefined ? {} : { sessionId: call.sessionId })

export function apply(ctx: Context, config: FsToolsConfig = {}): void {
  for (const tool of createFsTools(ctx, config ?? {})) ctx.tools.register(tool)
}

/** The plugin (bundle rows use this default export). */
export default { name, inject, apply }
