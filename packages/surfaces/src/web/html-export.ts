// A session as one self-contained HTML file (issue 39, share): the built web client (its script and
// styles inlined) with the session's header and events embedded, so the page renders the transcript as
// `dsh web` does (Markdown, tool cards, diffs, attached images as data: URLs, subagents with their own
// transcripts) with no server and no network. Tool outputs can be left out.
import { readdirSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { refsIn, sniffType } from '@dsh/attachments'
import { HarnessError } from '@dsh/kernel'
import { isEvent, type Session } from '@dsh/session'

export interface HtmlExportOptions {
  /** Replace every tool result's text with a note (the calls stay). */
  dropToolOutput?: boolean
  /** The web client's build directory (default: `@dsh/web`'s `dist`). */
  clientDir?: string
  /** Attached images by blob ref, as `data:` URLs (`embeddedImages`). */
  images?: Record<string, string>
  /** The subagents' own sessions by id (`embeddedChildren`), for their transcripts on the page. */
  children?: Record<string, Session>
}

/** How deep and how many subagent sessions a page carries (a workflow can start hundreds). */
const MAX_CHILD_DEPTH = 3
const MAX_CHILDREN = 50

/** The child sessions a log's `subagent/started` events name, in order. */
function childIds(session: Session): string[] {
  const ids: string[] = []
  for (const event of session.events) {
    if (event.type !== 'subagent/started') continue
    const data: unknown = event.data
    if (data && typeof data === 'object' && 'childSession' in data && typeof data.childSession === 'string')
      ids.push(data.childSession)
  }
  return ids
}

/**
 * The sessions of the subagents `session` started, and theirs (3 levels, 50 sessions at most), read
 * through `read`; one that cannot be read is left out (its card says the transcript is not in the page).
 */
export async function embeddedChildren(
  session: Session,
  read: (id: string) => Promise<Session | undefined>,
): Promise<Record<string, Session>> {
  const children: Record<string, Session> = {}
  let level = [session]
  for (let depth = 0; depth < MAX_CHILD_DEPTH && level.length > 0; depth++) {
    const next: Session[] = []
    for (const parent of level)
      for (const id of childIds(parent)) {
        if (children[id] || Object.keys(children).length >= MAX_CHILDREN) continue
        const child = await read(id).catch(() => undefined)
        if (!child) continue
        children[id] = child
        next.push(child)
      }
    level = next
  }
  return children
}

/** Past this many bytes of images, the rest are left out of a page (it says so where each one was). */
const MAX_IMAGE_BYTES = 16 * 1024 * 1024

/**
 * The session's attached images as `data:` URLs for `sessionHtml`, read through `get` (the
 * attachments service); a blob that cannot be read, or past the page's image budget, is left out.
 */
export async function embeddedImages(
  session: Session,
  get: (ref: string) => Promise<Uint8Array | undefined>,
): Promise<Record<string, string>> {
  const images: Record<string, string> = {}
  let bytes = 0
  for (const ref of refsIn(session.events)) {
    const data = await get(ref).catch(() => undefined)
    // The type from the bytes, as the web host serves a blob: a ref that is no image is not embedded.
    const mimeType = data && sniffType(data)
    if (!data || !mimeType?.startsWith('image/') || bytes + data.byteLength > MAX_IMAGE_BYTES) continue
    bytes += data.byteLength
    images[ref] = `data:${mimeType};base64,${Buffer.from(data).toString('base64')}`
  }
  return images
}

function clientDir(): string {
  try {
    return join(dirname(createRequire(import.meta.url).resolve('@dsh/web/package.json')), 'dist')
  } catch {
    throw new HarnessError(
      'NOT_AVAILABLE',
      'the web client (@dsh/web) is not installed; it renders the HTML export',
      {},
    )
  }
}

/** Text that may sit inside a `<script>` element: no `</script>` or `<!--` can end or bend it. */
function scriptSafe(text: string): string {
  return text.replace(/<(\/script|!--)/gi, '\\x3C$1')
}

/** Events as the page gets them, with tool outputs replaced when asked. */
function eventsOf(session: Session, dropToolOutput: boolean): unknown[] {
  return session.events.map((event) => {
    if (!dropToolOutput || !isEvent(event, 'tool/result')) return event
    const { data } = event
    return {
      ...event,
      data: {
        ...data,
        message: { ...data.message, content: [{ type: 'text', text: '(tool output left out of this export)' }] },
      },
    }
  })
}

/** The HTML file of `session`. */
export function sessionHtml(session: Session, options: HtmlExportOptions = {}): string {
  const dir = options.clientDir ?? clientDir()
  let index: string
  try {
    index = readFileSync(join(dir, 'index.html'), 'utf8')
  } catch {
    throw new HarnessError(
      'NOT_AVAILABLE',
      `the web client is not built (no ${join(dir, 'index.html')}); run \`npm run build -w @dsh/web\``,
      {},
    )
  }
  const assets = join(dir, 'assets')
  const files = readdirSync(assets)
  const script = files.find((name) => name.endsWith('.js'))
  const style = files.find((name) => name.endsWith('.css'))
  if (!script || !style) throw new HarnessError('NOT_AVAILABLE', `the web client build in ${dir} is incomplete`, {})
  const data = {
    header: session.header,
    events: eventsOf(session, options.dropToolOutput === true),
    exportedAt: new Date().toISOString(),
    toolOutput: options.dropToolOutput !== true,
    images: options.images ?? {},
    children: Object.fromEntries(
      Object.entries(options.children ?? {}).map(([id, child]) => [
        id,
        { header: child.header, events: eventsOf(child, options.dropToolOutput === true) },
      ]),
    ),
  }
  const title = `dsh session ${session.id.slice(0, 8)}`
  const head = [
    `<title>${title}</title>`,
    `<style>${readFileSync(join(assets, style), 'utf8').replace(/<\/style/gi, '<\\/style')}</style>`,
    `<script>window.__DSH_EXPORT__ = ${scriptSafe(JSON.stringify(data))}</script>`,
    `<script type="module">${scriptSafe(readFileSync(join(assets, script), 'utf8'))}</script>`,
  ].join('\n')
  return index
    .replace(/<title>[^<]*<\/title>/, '')
    .replace(/\s*<script type="module"[^>]*><\/script>/, '')
    .replace(/\s*<link rel="stylesheet"[^>]*>/, '')
    .replace('</head>', `${head}\n</head>`)
}
