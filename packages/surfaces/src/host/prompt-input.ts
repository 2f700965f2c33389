// A person's prompt as the model will see it: the text, the files attached to it, and what its `@`
// references point at, turned into one user message once, here, for every surface. Images go to the
// attachment store before the message exists (the message, logged afterwards, holds only their refs);
// text files and `@path` references are copied into the message with their version, so the log keeps
// exactly what the model saw even after the file changes. `@session:ID` adds a digest of that session.
// A reference never carries a secret store (the sandbox policy's secret paths, in every mode): a secret
// file or directory becomes a note, and a listing leaves its secret entries out and says so.
import { isAbsolute, join, resolve, sep } from 'node:path'
import { sniffType } from '@dsh/attachments'
import { type Context, HarnessError } from '@dsh/kernel'
import type { UserContent, UserMessage } from '@dsh/llm'
import { isEvent, type Session } from '@dsh/session'
import type {} from '@dsh/session/store/query'
import type { FileSystem } from '@dsh/world/fs'
import { canonicalPath, isWithin } from '@dsh/world/sandbox'

/** A file given with a prompt: a path the host reads, or the bytes themselves (base64). */
export type AttachmentInput = { path: string; name?: string } | { data: string; mimeType?: string; name?: string }

/** What a surface hands over for one prompt. */
export interface PromptInput {
  text: string
  attachments?: readonly AttachmentInput[]
}

export interface ComposeOptions {
  /** Relative paths and `@path` resolve here (the session's workspace). */
  cwd: string
  sessionId?: string
  /** Whether `{ path }` attachments are read (false for clients on another machine, such as a browser). */
  allowPaths?: boolean
}

/** Text copied into a message from one file or listing, at most. */
const MAX_TEXT_CHARS = 100_000
/** Entries of a directory listing, at most. */
const MAX_LISTING = 500
/** Characters of a `@session:` digest, at most. */
const MAX_DIGEST_CHARS = 8_000

/**
 * Attachments as a wire delivered them (unknown JSON), checked: an array of `{ path, name? }` or
 * `{ data: <base64>, mimeType?, name? }`. Throws ATTACHMENT_INVALID naming the bad item.
 */
export function parseAttachments(value: unknown): AttachmentInput[] {
  if (value === undefined || value === null) return []
  if (!Array.isArray(value)) throw invalid('"attachments" must be an array', value)
  return value.map((item, index) => {
    if (typeof item !== 'object' || item === null) throw invalid(`attachments[${index}] must be an object`, item)
    const { path, data, mimeType, name } = item as Record<string, unknown>
    const optional = (field: unknown, label: string) => {
      if (field !== undefined && typeof field !== 'string')
        throw invalid(`attachments[${index}].${label} must be a string`, item)
      return field as string | undefined
    }
    const extras = { ...(optional(name, 'name') ? { name: name as string } : {}) }
    if (typeof path === 'string' && path && data === undefined) return { path, ...extras }
    if (typeof data === 'string' && path === undefined) {
      if (!/^[A-Za-z0-9+/\r\n]*={0,2}\s*$/.test(data))
        throw invalid(`attachments[${index}].data must be base64`, undefined)
      const type = optional(mimeType, 'mimeType')
      return { data, ...(type ? { mimeType: type } : {}), ...extras }
    }
    throw invalid(
      `attachments[${index}] needs exactly one of "path" (a file) or "data" (base64 bytes)`,
      Object.keys(item),
    )
  })
}

function invalid(message: string, got: unknown): HarnessError {
  return new HarnessError(
    'ATTACHMENT_INVALID',
    `${message}; an attachment is { path } or { data: <base64>, mimeType?, name? }`,
    {
      got: got === undefined ? null : JSON.stringify(got).slice(0, 200),
    },
  )
}

/** `@session:ID` or `@path` at the start or after whitespace; a path may be quoted `@"a b.txt"`. */
const REFERENCE = /(?<=^|\s)@(?:"([^"]+)"|(\S+))/g

/** The `@` references of a prompt, in order, without duplicates (what completion and tests can check). */
export function referencesIn(text: string): string[] {
  const found = new Set<string>()
  for (const match of text.matchAll(REFERENCE)) found.add((match[1] ?? match[2]) as string)
  return [...found]
}

/**
 * The message a prompt becomes. Plain text stays a string when nothing was attached or referenced,
 * so existing sessions and wires see no change. Throws HarnessError (ATTACHMENT_*, FS_*) with the fix.
 */
export async function composePrompt(
  ctx: Context,
  input: PromptInput,
  options: ComposeOptions,
): Promise<string | UserMessage> {
  const extra: UserContent[] = []
  for (const attachment of input.attachments ?? []) extra.push(...(await attach(ctx, attachment, options)))
  for (const reference of referencesIn(input.text)) extra.push(...(await resolveReference(ctx, reference, options)))
  if (extra.length === 0) return input.text
  return { role: 'user', content: [{ type: 'text', text: input.text }, ...extra] }
}

function requireFs(ctx: Context): FileSystem {
  const fs = ctx.get('fs')
  if (!fs)
    throw new HarnessError(
      'ATTACHMENT_NO_FS',
      'attaching files needs the fs row (ctx.fs); enable it in the profile',
      {},
    )
  return fs
}

function fsOptions(options: ComposeOptions) {
  return { cwd: options.cwd, ...(options.sessionId ? { sessionId: options.sessionId } : {}) }
}

async function attach(ctx: Context, input: AttachmentInput, options: ComposeOptions): Promise<UserContent[]> {
  if ('path' in input && typeof input.path === 'string') {
    if (options.allowPaths === false) {
      throw new HarnessError(
        'ATTACHMENT_PATH_REFUSED',
        `this surface sends attachments as data, not paths (${input.path}); send { data: <base64>, name }`,
        { path: input.path },
      )
    }
    const fs = requireFs(ctx)
    const path = fs.resolvePath(input.path, fsOptions(options))
    const max = ctx.get('attachments')?.limits.maxBytes ?? 20 * 1024 * 1024
    const read = await fs.readBytes(path, { ...fsOptions(options), maxBytes: max + 1 }).catch((error: unknown) => {
      const reason = error instanceof Error ? error.message : String(error)
      throw new HarnessError('ATTACHMENT_UNREADABLE', `cannot attach ${input.path}: ${reason}`, {
        path,
        cause: error instanceof HarnessError ? error.code : null,
      })
    })
    return fileContent(ctx, read.bytes, input.name ?? input.path, read.size)
  }
  if ('data' in input && typeof input.data === 'string') {
    const bytes = Buffer.from(input.data, 'base64')
    return fileContent(
      ctx,
      new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength),
      input.name ?? 'attachment',
      bytes.byteLength,
      input.mimeType,
    )
  }
  throw new HarnessError(
    'ATTACHMENT_INVALID',
    'an attachment is { path } or { data: <base64>, mimeType?, name? }; got neither',
    { keys: Object.keys(input ?? {}) },
  )
}

/** An image is stored and referenced; anything else must be UTF-8 text and is copied in. */
async function fileContent(
  ctx: Context,
  bytes: Uint8Array,
  name: string,
  size: number,
  mimeType?: string,
): Promise<UserContent[]> {
  const attachments = ctx.get('attachments')
  if (sniffType(bytes) || mimeType?.startsWith('image/')) {
    if (!attachments) {
      throw new HarnessError(
        'ATTACHMENT_NO_STORE',
        `${name} is an image and the attachments row is disabled; enable it to attach images`,
        {
          name,
        },
      )
    }
    const blob = await attachments.put(bytes, { name, ...(mimeType ? { mimeType } : {}) })
    const scaled = blob.original ? `, scaled down from ${blob.original.width}x${blob.original.height}` : ''
    return [
      { type: 'text', text: `[attached image ${name}: ${blob.mimeType}, ${blob.width}x${blob.height}${scaled}]` },
      { type: 'image', ref: blob.ref, mimeType: blob.mimeType },
    ]
  }
  if (bytes.includes(0)) {
    throw new HarnessError(
      'ATTACHMENT_TYPE_UNSUPPORTED',
      `${name} is neither an image (png, jpeg, gif, webp) nor text; convert it or describe it in the prompt`,
      { name },
    )
  }
  let text: string
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes)
  } catch {
    throw new HarnessError('ATTACHMENT_TYPE_UNSUPPORTED', `${name} is not UTF-8 text nor an image; convert it first`, {
      name,
    })
  }
  return [{ type: 'text', text: fileBlock(`attachment=${JSON.stringify(name)}`, text, size) }]
}

function fileBlock(attributes: string, text: string, size: number, version?: string): string {
  const clipped = text.length > MAX_TEXT_CHARS
  const body = clipped ? text.slice(0, MAX_TEXT_CHARS) : text
  const note = clipped
    ? `\n[cut at ${MAX_TEXT_CHARS} of ${text.length} characters; read the rest with the read tool]`
    : ''
  return `<context ${attributes} bytes="${size}"${version ? ` version="${version}"` : ''}>\n${body}${note}\n</context>`
}

/**
 * A client on another machine (the browser) names files of the session's workspace only: an absolute,
 * `~` or `..`-escaping `@` reference is refused whether or not it names a file, so the answer tells
 * nothing about what exists outside.
 */
function refuseForeignPath(reference: string, cwd: string): void {
  const inside = (path: string) => path === cwd || path.startsWith(cwd.endsWith(sep) ? cwd : cwd + sep)
  if (!reference.startsWith('~') && !isAbsolute(reference) && inside(resolve(cwd, reference))) return
  throw new HarnessError(
    'ATTACHMENT_PATH_REFUSED',
    `@${reference} is outside the session's folder; from this surface @ names a file relative to ${cwd}, or attach the file's bytes`,
    { reference, cwd },
  )
}

async function resolveReference(ctx: Context, reference: string, options: ComposeOptions): Promise<UserContent[]> {
  if (reference.startsWith('session:')) return [{ type: 'text', text: await sessionDigest(ctx, reference.slice(8)) }]
  if (options.allowPaths === false) refuseForeignPath(reference, options.cwd)
  const fs = ctx.get('fs')
  if (!fs) return []
  const secrets = secretPathsOf(ctx, options)
  // Trailing punctuation belongs to the sentence ("see @a.ts."), unless the file really has it.
  for (const candidate of new Set([reference, reference.replace(/[.,;:!?)\]]+$/, '')])) {
    if (!candidate) continue
    const path = fs.resolvePath(candidate, fsOptions(options))
    const stat = await fs.stat(path, fsOptions(options)).catch(() => undefined)
    if (!stat) continue
    const secret = secretOf(path, secrets)
    if (secret !== undefined) {
      const text = `<context path=${JSON.stringify(candidate)} kind="hidden">\n[not attached: ${secret} holds credentials and is hidden from the model (the sandbox policy's secret paths)]\n</context>`
      return [{ type: 'text', text }]
    }
    if (stat.kind === 'directory') {
      return [{ type: 'text', text: await listing(fs, path, candidate, options, secrets) }]
    }
    const head = await fs.readBytes(path, { ...fsOptions(options), maxBytes: 16 })
    if (sniffType(head.bytes)) return attach(ctx, { path, name: candidate }, { ...options, allowPaths: true })
    const file = await fs.readText(path, fsOptions(options))
    ctx.emit('fs/observed', {
      ...(options.sessionId ? { sessionId: options.sessionId } : {}),
      path,
      version: file.version,
    })
    return [{ type: 'text', text: fileBlock(`path=${JSON.stringify(candidate)}`, file.text, file.size, file.version) }]
  }
  // Not a file here: an e-mail address, a handle, a decorator. The text stays as the person wrote it.
  return []
}

/**
 * The secret paths no reference may attach: the sandbox policy's list as a confined call sees it, also
 * in danger-full-access (a person's `@~` still goes to the model and into the log).
 */
function secretPathsOf(ctx: Context, options: ComposeOptions): readonly string[] {
  const policy = ctx.get('sandboxPolicy')
  if (!policy) return []
  return policy.resolve(options.sessionId, 'workspace-write').secretPaths
}

/** The secret path `path` is in (its links resolved), if any. */
function secretOf(path: string, secrets: readonly string[]): string | undefined {
  if (secrets.length === 0) return undefined
  const target = canonicalPath(path)
  return secrets.find((secret) => isWithin(path, secret) || isWithin(target, secret))
}

async function listing(
  fs: FileSystem,
  path: string,
  name: string,
  options: ComposeOptions,
  secrets: readonly string[],
): Promise<string> {
  const all = await fs.list(path, fsOptions(options))
  const entries = all.filter((entry) => secretOf(join(path, entry.name), secrets) === undefined)
  const hidden = all.length - entries.length
  const lines = entries
    .slice(0, MAX_LISTING)
    .map((entry) => (entry.kind === 'directory' ? `${entry.name}/` : entry.name))
  const more = entries.length > MAX_LISTING ? `\n[${entries.length - MAX_LISTING} more entries; use ls or glob]` : ''
  const note =
    hidden > 0
      ? `\n[${hidden} ${hidden === 1 ? 'entry' : 'entries'} not listed: ${hidden === 1 ? 'it holds' : 'they hold'} credentials hidden from the model (the sandbox policy's secret paths)]`
      : ''
  return `<context path=${JSON.stringify(name)} kind="directory" entries="${entries.length}">\n${lines.join('\n')}${more}${note}\n</context>`
}

/** The user prompts and final answers of another session, for `@session:ID` (no model call). */
async function sessionDigest(ctx: Context, id: string): Promise<string> {
  const query = ctx.get('sessionQuery')
  if (!query) {
    throw new HarnessError('SESSION_REFERENCE_UNAVAILABLE', `@session:${id} needs the session-query row; enable it`, {
      id,
    })
  }
  const session: Session = await query.read(id)
  const lines: string[] = []
  for (const event of session.events) {
    if (isEvent(event, 'user/message') && event.data.origin !== 'context') {
      lines.push(`user: ${textOf(event.data.message.content)}`)
    } else if (isEvent(event, 'assistant/message')) {
      const text = textOf(event.data.message.content)
      if (text) lines.push(`assistant: ${text}`)
    }
  }
  let body = lines.join('\n')
  if (body.length > MAX_DIGEST_CHARS) body = `[earlier part cut]\n${body.slice(-MAX_DIGEST_CHARS)}`
  return `<context session="${session.id}" cwd=${JSON.stringify(session.header.cwd)} events="${session.events.length}">\n${body}\n</context>`
}

function textOf(content: readonly { type: string; text?: string }[]): string {
  return content
    .flatMap((block) => (block.type === 'text' && block.text ? [block.text] : []))
    .join('\n')
    .trim()
}
