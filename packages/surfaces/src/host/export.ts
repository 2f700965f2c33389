// A session as a file a person takes away: the Markdown transcript or the JSONL log (header line,
// then one event a line, as the store writes it). `dsh sessions export` and the web page's download
// both print these lines.
import type { Session } from '@dsh/session'
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
