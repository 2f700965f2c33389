// "Rewind to here" on a person's message (issue 32): the files the turns from that message on changed,
// and three choices: conversation and files, conversation only (a new session before the message,
// opened with the message back in the composer), files only. A file someone else changed since the
// session last saw it is listed, and written back only when the person says so.
import type { RewindPointView, SessionRewindResult } from '@dsh/surfaces/wire'
import { useState } from 'preact/hooks'
import { api } from './connection'
import { failed } from './host-state'
import type { ConversationNode } from './projection'
import { setDraft } from './views/composer'

type Mode = 'both' | 'conversation' | 'files'

/** The point whose turn holds this message: the newest point that began at or before it. */
function pointFor(points: RewindPointView[], node: ConversationNode): RewindPointView | undefined {
  return points.filter((point) => point.turnSeq <= node.seq).at(-1)
}

function changesFrom(points: RewindPointView[], point: RewindPointView): string[] {
  const lines = new Map<string, string>()
  for (const later of points.filter((candidate) => candidate.number >= point.number))
    for (const change of later.changes)
      lines.set(
        change.path,
        `${change.path} ${change.kind}${change.added !== undefined ? ` +${change.added} -${change.removed ?? 0}` : ''}`,
      )
  return [...lines.values()]
}

export function RewindControl(props: { sessionId: string; node: ConversationNode }) {
  const [open, setOpen] = useState(false)
  const [points, setPoints] = useState<RewindPointView[] | undefined>()
  const [notice, setNotice] = useState('')
  const [conflicts, setConflicts] = useState<{ mode: Mode; files: string[] } | undefined>()
  const point = points ? pointFor(points, props.node) : undefined
  const base = `/api/sessions/${encodeURIComponent(props.sessionId)}/rewind`

  const show = () => {
    setOpen(true)
    setNotice('')
    setConflicts(undefined)
    void api<{ points: RewindPointView[] }>('GET', base)
      .then((answer) => setPoints(answer.points))
      .catch(failed)
  }
  const go = (mode: Mode, overwrite = false) => {
    if (!point) return
    void api<SessionRewindResult>('POST', base, { point: point.number, mode, ...(overwrite ? { overwrite } : {}) })
      .then((result) => {
        if (result.files?.code === 'REWIND_CONFLICT') {
          setConflicts({ mode, files: result.files.conflicts })
          return
        }
        setConflicts(undefined)
        if (result.previousSessionId) {
          setDraft(result.sessionId, result.text ?? '')
          location.hash = `#/s/${result.sessionId}`
          return
        }
        setNotice(result.files?.text ?? 'done')
        setPoints(undefined)
      })
      .catch(failed)
  }

  if (!open)
    return (
      <button type="button" class="link rewind-message" title="Go back to before this message" onClick={show}>
        rewind to here
      </button>
    )
  const files = points && point ? changesFrom(points, point) : []
  return (
    <div class="rewind-panel" role="dialog" aria-label={`rewind to before message ${point?.number ?? ''}`}>
      {notice ? <p class="rewind-notice">{notice}</p> : null}
      {!points && !notice ? <p>reading the checkpoints…</p> : null}
      {points && !point ? <p>this message has no rewind point</p> : null}
      {point && !notice ? (
        <>
          <p>
            Back to before message {point.number}.{' '}
            {files.length > 0 ? 'Files changed since:' : 'No file was changed since.'}
          </p>
          {files.length > 0 ? (
            <ul class="rewind-files">
              {files.slice(0, 30).map((line) => (
                <li key={line}>{line}</li>
              ))}
            </ul>
          ) : null}
          {conflicts ? (
            <>
              <p class="rewind-conflict">
                Changed by someone else since this session last saw them (nothing was written):
              </p>
              <ul class="rewind-files">
                {conflicts.files.map((path) => (
                  <li key={path}>{path}</li>
                ))}
              </ul>
              <button type="button" onClick={() => go(conflicts.mode, true)}>
                Overwrite them
              </button>
            </>
          ) : point.snapshot ? (
            <>
              <button type="button" onClick={() => go('both')}>
                Conversation and files
              </button>
              <button type="button" onClick={() => go('conversation')}>
                Conversation only
              </button>
              <button type="button" onClick={() => go('files')}>
                Files only
              </button>
            </>
          ) : (
            <button type="button" onClick={() => go('conversation')}>
              Conversation only (no checkpoint of the files)
            </button>
          )}
        </>
      ) : null}
      <button type="button" class="link" onClick={() => setOpen(false)}>
        {notice ? 'close' : 'Cancel'}
      </button>
    </div>
  )
}
