// A fork beside the session it was forked from (issue 37, what-if): each branch from the fork point on,
// folded from the logs on the host (`session/compare`): requests, tokens, cost, tool calls, files
// changed and the final answer, in two columns.
import type { CompareResult } from '@dsh/surfaces/wire'
import { useEffect, useState } from 'preact/hooks'
import { api } from '../connection'
import { failed } from '../host-state'

const list = (items: string[]) => (items.length === 0 ? '-' : items.join(', '))

export function CompareView({ sessionId }: { sessionId: string }) {
  const [result, setResult] = useState<CompareResult | undefined>()
  useEffect(() => {
    void api<CompareResult>('GET', `/api/sessions/${encodeURIComponent(sessionId)}/compare`)
      .then(setResult)
      .catch(failed)
  }, [sessionId])
  if (!result) return <main class="compare">reading both branches…</main>
  const { original, fork } = result
  const rows: Array<[string, string, string]> = [
    ['requests', String(original.requests), String(fork.requests)],
    [
      'tokens in / out',
      `${original.tokens.input} / ${original.tokens.output}`,
      `${fork.tokens.input} / ${fork.tokens.output}`,
    ],
    ['cost', original.cost, fork.cost],
    ['tool calls', list(original.toolCalls), list(fork.toolCalls)],
    ['files changed', list(original.filesChanged), list(fork.filesChanged)],
    ['final answer', original.answer || '-', fork.answer || '-'],
  ]
  return (
    <main class="compare">
      <header class="steps-head">
        <a class="link" href={`#/s/${sessionId}`}>
          back to the session
        </a>
        <span>two branches from event {result.from} on</span>
      </header>
      <table class="compare-table">
        <thead>
          <tr>
            <th />
            <th>
              original <a href={`#/s/${original.sessionId}`}>{original.sessionId.slice(0, 8)}</a>
            </th>
            <th>
              this fork <a href={`#/s/${fork.sessionId}`}>{fork.sessionId.slice(0, 8)}</a>
            </th>
          </tr>
        </thead>
        <tbody>
          {rows.map(([name, a, b]) => (
            <tr key={name} data-row={name}>
              <th scope="row">{name}</th>
              <td>{a}</td>
              <td>{b}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </main>
  )
}
