// Per-message actions: copy the message's text, and "fork from here". A fork copies a closed prefix
// of the log (no open turn), so the point is a turn boundary: after an answer, the end of its turn;
// before a person's message, the end of the turn before it (an empty fork before the first one).
import { useState } from 'preact/hooks'
import { forkPoint } from './navigation'
import type { ConversationNode } from './projection'

export function MessageActions(props: {
  text: string
  node: ConversationNode
  /** The conversation's nodes now (read at the click: the turn's end may arrive after this renders). */
  nodes(): readonly ConversationNode[]
  fork(seq: number): void
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
      <button
        type="button"
        class="link fork-message"
        title={user ? 'Start a new session before this message' : 'Start a new session after this answer'}
        onClick={() => {
          const at = forkPoint(props.nodes(), props.node)
          if (at !== undefined) props.fork(at)
        }}
      >
        {user ? 'fork before' : 'fork from here'}
      </button>
    </div>
  )
}
