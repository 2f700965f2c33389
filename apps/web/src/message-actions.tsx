// Per-message actions: copy the message's text; on a person's message "rewind to here" (the files, the
// conversation or both, see rewind-control.tsx); on an answer "fork from here". A fork copies a closed
// prefix of the log (no open turn), so the point is the end of the answer's turn.
import { useState } from 'preact/hooks'
import { forkPoint } from './navigation'
import type { ConversationNode } from './projection'
import { RewindControl } from './rewind-control'

export function MessageActions(props: {
  text: string
  node: ConversationNode
  /** The conversation's nodes now (read at the click: the turn's end may arrive after this renders). */
  nodes(): readonly ConversationNode[]
  fork(seq: number): void
  sessionId: string
}) {
  const [copied, setCopied] = useState(false)
  const user = props.node.kind === 'user'
  return (
    <div class="message-actions">
      <button
        type="button"
        class="link copy"
        aria-label="copy message"
        onClick={() =>
          void navigator.clipboard.writeText(props.text).then(
            () => setCopied(true),
            () => setCopied(false),
          )
        }
      >
        {copied ? 'copied' : 'copy'}
      </button>
      {user ? (
        <RewindControl sessionId={props.sessionId} node={props.node} />
      ) : (
        <button
          type="button"
          class="link fork-message"
          title="Start a new session after this answer"
          onClick={() => {
            const at = forkPoint(props.nodes(), props.node)
            if (at !== undefined) props.fork(at)
          }}
        >
          fork from here
        </button>
      )}
    </div>
  )
}
