// The page of an exported session (`dsh sessions export ID --format html`, `/share`): the transcript
// folded from the embedded events by the same projection and renderers as the live page, read-only
// (no composer, no message actions), with no host and no network.
import { useMemo } from 'preact/hooks'
import type { ExportedSession } from '../connection'
import { SessionProjection } from '../projection'
import { Conversation } from './conversation'

/** A session an export carries (the page's own, or a subagent's), folded as the live page folds a stream. */
export function foldExported(session: Pick<ExportedSession, 'header' | 'events'>): SessionProjection {
  const folded = new SessionProjection(session.header.id)
  folded.applyFrame({
    type: 'session/baseline',
    header: session.header,
    since: 0,
    events: session.events,
    status: 'detached',
    inbox: { 'next-step': [], 'next-turn': [] },
    jobs: [],
  })
  return folded
}

export function ExportedView({ data }: { data: ExportedSession }) {
  const projection = useMemo(() => foldExported(data), [data])
  const created = new Date(data.header.createdAt).toISOString().replace('T', ' ').slice(0, 16)
  return (
    <div class="app exported">
      <main class="session">
        <header class="session-head">
          <span class="cwd" title={data.header.cwd}>
            {data.header.cwd}
          </span>
          <span class="exported-note">
            session {data.header.id.slice(0, 8)} · started {created} · exported{' '}
            {data.exportedAt.slice(0, 16).replace('T', ' ')}
            {data.toolOutput ? '' : ' · tool outputs left out'}
          </span>
        </header>
        <Conversation projection={projection} />
      </main>
    </div>
  )
}
