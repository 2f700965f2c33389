// The open session's management controls in its header: rename (a logged `session/title`), export
// (the Markdown transcript or the JSONL log, the files `dsh sessions export` prints) and delete
// (the session and the attachment blobs no other session uses, as `dsh sessions rm`).
import { useState } from 'preact/hooks'
import { api } from './connection'

export function SessionActions(props: { sessionId: string; title?: string; failed: (error: unknown) => void }) {
  const { sessionId, failed } = props
  const [renaming, setRenaming] = useState<string | undefined>()
  const [confirming, setConfirming] = useState(false)
  const exportUrl = (format: 'md' | 'jsonl' | 'html') => `/api/sessions/${sessionId}/export?format=${format}`
  if (renaming !== undefined)
    return (
      <form
        class="session-actions rename"
        onSubmit={(e) => {
          e.preventDefault()
          void api('POST', `/api/sessions/${sessionId}/rename`, { title: renaming })
            .then(() => setRenaming(undefined))
            .catch(failed)
        }}
      >
        <input
          aria-label="session title"
          value={renaming}
          maxLength={120}
          ref={(el) => el?.focus()}
          onInput={(e) => setRenaming(e.currentTarget.value)}
          onKeyDown={(e) => e.key === 'Escape' && setRenaming(undefined)}
        />
        <button type="submit">Save</button>
        <button type="button" class="link" onClick={() => setRenaming(undefined)}>
          cancel
        </button>
      </form>
    )
  return (
    <span class="session-actions">
      <span class="session-title" title="session title">
        {props.title ?? '(untitled)'}
      </span>
      <button type="button" class="link rename" onClick={() => setRenaming(props.title ?? '')}>
        rename
      </button>
      <a class="link export" href={exportUrl('md')} download={`dsh-${sessionId}.md`}>
        export .md
      </a>
      <a class="link export" href={exportUrl('jsonl')} download={`dsh-${sessionId}.jsonl`}>
        .jsonl
      </a>
      <a
        class="link export share"
        href={exportUrl('html')}
        download={`dsh-${sessionId}.html`}
        title="one self-contained page to share: opens anywhere, no network"
      >
        .html
      </a>
      <a
        class="link steps"
        href={`#/steps/${sessionId}`}
        title="each model request as it was sent, its answer and tool calls"
      >
        step through
      </a>
      {confirming ? (
        <>
          <button
            type="button"
            class="link delete confirm"
            onClick={() =>
              void api('POST', `/api/sessions/${sessionId}/delete`)
                .then(() => {
                  location.hash = '#/'
                })
                .catch(failed)
            }
          >
            delete for good
          </button>
          <button type="button" class="link" onClick={() => setConfirming(false)}>
            keep
          </button>
        </>
      ) : (
        <button type="button" class="link delete" onClick={() => setConfirming(true)}>
          delete
        </button>
      )}
    </span>
  )
}
