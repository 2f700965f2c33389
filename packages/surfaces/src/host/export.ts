// A session as a file a person takes away: the Markdown transcript or the JSONL log (header line,
// then one event a line, as the store writes it). `dsh sessions export` and the web page's download
// both print these lines.
import { type Context, HarnessError } from '@dsh/kernel'
import type { Session } from '@dsh/session'
import type {} from '@dsh/session/store/query'
import { renderTranscript } from './transcript.js'

export type ExportFormat = 'md' | 'jsonl'

export const EXPORT_FORMATS: readonly ExportFormat[] = ['md', 'jsonl']

/** The lines of `session` exported as `format` (joined with newlines they are the file). */
export function exportLines(session: Session, format: ExportFormat): string[] {
  if (format === 'jsonl')
    return [JSON.stringify(session.header), ...session.events.map((event) => JSON.stringify(event))]
  const created = new Date(session.header.createdAt).toISOString().replace('T', ' ').slice(0, 16)
  return [
    `# Session ${session.id}\n\n- cwd: \`${session.header.cwd}\`\n- created: ${created}\n`,
    ...renderTranscript(session.events, 'md'),
  ]
}

/** The lines of a session given live, or by id read from the durable store (`NOT_AVAILABLE` without a query row). */
export async function exportSession(ctx: Context, session: Session | string, format: ExportFormat): Promise<string[]> {
  if (typeof session !== 'string') return exportLines(session, format)
  const query = ctx.get('sessionQuery')
  if (!query) throw new HarnessError('NOT_AVAILABLE', 'the profile has no session-query row to read sessions', {})
  return exportLines(await query.read(session), format)
}
