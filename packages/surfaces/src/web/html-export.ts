// A session as one self-contained HTML file (issue 39, share): the built web client (its script and
// styles inlined) with the session's header and events embedded, so the page renders the transcript as
// `dsh web` does (Markdown, tool cards, diffs, subagent calls) with no server and no network. Tool
// outputs can be left out. Attached images are not embedded (their blobs stay on this machine).
import { readdirSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { HarnessError } from '@dsh/kernel'
import { isEvent, type Session } from '@dsh/session'

export interface HtmlExportOptions {
  /** Replace every tool result's text with a note (the calls stay). */
  dropToolOutput?: boolean
  /** The web client's build directory (default: `@dsh/web`'s `dist`). */
  clientDir?: string
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
