// Full-text search across every session (the host's query service, `GET /api/search`), and the jump
// a hit makes: the route `#/s/<id>/at/<seq>` opens the session with that event's node in view and
// marked, so a person lands on the sentence they searched for.

import type { SearchHitView } from '@dsh/surfaces/wire'
import type { RefObject } from 'preact'
import { useLayoutEffect, useRef, useState } from 'preact/hooks'
import { api } from './connection'
import { eventRoute, nodeIndexFor } from './navigation'
import type { ConversationNode } from './projection'

/**
 * Scrolls the target event's node into view once it is rendered and marks it (`.hit`, with the event's
 * seq in `data-hit-seq`); the view then stops following the bottom (`stick`).
 */
export function useJumpHighlight(
  scroller: RefObject<HTMLDivElement | null>,
  stick: RefObject<boolean>,
  nodes: readonly ConversationNode[],
  seq: number | undefined,
): void {
  const shown = useRef<number | undefined>(undefined)
  useLayoutEffect(() => {
    const el = scroller.current
    if (!el || seq === undefined || shown.current === seq) return
    const node = nodes[nodeIndexFor(nodes, seq)]
    const target = node && el.querySelector<HTMLElement>(`[data-seq="${node.seq}"]`)
    if (!target) return
    shown.current = seq
    for (const old of el.querySelectorAll('.hit')) old.classList.remove('hit')
    target.classList.add('hit')
    target.dataset.hitSeq = String(seq)
    target.scrollIntoView({ block: 'center' })
    stick.current = false
  })
}

/** The snippet with the index's [match] markers drawn as <mark>. */
function Snippet({ text }: { text: string }) {
  const parts = text.split(/(\[[^\]]*\])/)
  return (
    <span class="snippet">
      {parts.map((part, index) =>
        part.startsWith('[') && part.endsWith(']') ? <mark key={index}>{part.slice(1, -1)}</mark> : part,
      )}
    </span>
  )
}

const KIND: Record<string, string> = {
  'user/message': 'you',
  'assistant/message': 'dsh',
  'tool/result': 'tool',
}

/** The sidebar's "search all sessions" box and its hits. */
export function SessionSearch({ failed }: { failed: (error: unknown) => void }) {
  const [text, setText] = useState('')
  const [hits, setHits] = useState<SearchHitView[] | undefined>()
  const run = (event: Event) => {
    event.preventDefault()
    const query = text.trim()
    if (!query) return setHits(undefined)
    void api<{ hits: SearchHitView[] }>('GET', `/api/search?q=${encodeURIComponent(query)}`)
      .then((result) => setHits(result.hits))
      .catch(failed)
  }
  return (
    <form class="full-search" aria-label="search all sessions" onSubmit={run}>
      <input
        id="full-search"
        class="full-search-input"
        type="search"
        placeholder="search all sessions (Alt+S)"
        aria-label="search all sessions"
        aria-keyshortcuts="Alt+S"
        value={text}
        onInput={(e) => setText(e.currentTarget.value)}
      />
      {hits === undefined ? null : hits.length === 0 ? (
        <p class="no-hits">No matches.</p>
      ) : (
        <ul class="hits" aria-label="search results">
          {hits.map((hit) => (
            <li key={`${hit.sessionId}:${hit.seq}`}>
              <a
                class="hit-link"
                href={eventRoute(hit.sessionId, hit.seq)}
                data-hit-session={hit.sessionId}
                data-hit-seq={hit.seq}
              >
                <span class="hit-title">
                  {hit.title ?? hit.sessionId} <span class="hit-kind">{KIND[hit.type] ?? hit.type}</span>
                </span>
                <Snippet text={hit.snippet} />
              </a>
            </li>
          ))}
        </ul>
      )}
    </form>
  )
}
