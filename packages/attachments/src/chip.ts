// What a surface shows for a file, directory or session a prompt attached (`@path`, `--attach`): one
// line, a chip, instead of the `<context ...>` block the model reads. The content stays in the log and
// one keypress (or click) away. Browser-safe: no Node imports.

export interface ContextChip {
  /** `file`, `directory`, `hidden`, `session`. */
  kind: string
  /** The path, attachment name or session id. */
  name: string
  /** "12.3 kB, version 4", "18 entries"... */
  detail: string
  /** What the block holds (the file's text, the listing). */
  body: string
}

function attribute(tag: string, name: string): string | undefined {
  const match = new RegExp(`${name}=("(?:[^"\\\\]|\\\\.)*"|[^\\s>]+)`).exec(tag)
  if (!match) return undefined
  const raw = match[1] as string
  try {
    return raw.startsWith('"') ? (JSON.parse(raw) as string) : raw
  } catch {
    return raw.replace(/^"|"$/g, '')
  }
}

function size(bytes: number): string {
  if (bytes < 1000) return `${bytes} B`
  if (bytes < 1_000_000) return `${(bytes / 1000).toFixed(1)} kB`
  return `${(bytes / 1_000_000).toFixed(1)} MB`
}

/** The chip of a `<context ...>...</context>` text block, or undefined for any other text. */
export function contextChip(text: string): ContextChip | undefined {
  const match = /^<context( [^>\n]*)>\n?([\s\S]*?)\n?<\/context>\s*$/.exec(text)
  if (!match) return undefined
  const tag = match[1] as string
  const body = match[2] as string
  const session = attribute(tag, 'session')
  if (session) return { kind: 'session', name: session, detail: `${attribute(tag, 'events') ?? '?'} events`, body }
  const name = attribute(tag, 'path') ?? attribute(tag, 'attachment') ?? 'attachment'
  const kind = attribute(tag, 'kind')
  if (kind === 'directory') return { kind, name, detail: `${attribute(tag, 'entries') ?? '?'} entries`, body }
  if (kind === 'hidden') return { kind, name, detail: 'not attached: a secret path', body }
  const bytes = Number(attribute(tag, 'bytes'))
  const version = attribute(tag, 'version')
  const detail = [Number.isFinite(bytes) ? size(bytes) : undefined, version ? `version ${version}` : undefined]
    .filter(Boolean)
    .join(', ')
  return { kind: 'file', name, detail, body }
}
