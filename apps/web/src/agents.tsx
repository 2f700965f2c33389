// The sidebar's view of every running agent (`GET /api/agents`: the same listing as `dsh agents`):
// chats, runs, background runs, subagents, on this machine or the shared store, with state, where,
// model, cost and last activity. Polled while the page is open; a row opens its transcript.

import type { AgentRow } from '@dsh/surfaces/wire'
import { useEffect, useState } from 'preact/hooks'
import { askToNotify, notifyPermission } from './browser-notify'
import { api } from './connection'

const POLL_MS = 3000

function ago(ms: number | undefined, now: number): string {
  if (ms === undefined) return ''
  const seconds = Math.max(0, Math.round((now - ms) / 1000))
  if (seconds < 60) return `${seconds}s ago`
  if (seconds < 3600) return `${Math.round(seconds / 60)}m ago`
  return `${Math.round(seconds / 3600)}h ago`
}

export function Agents(props: { failed: (error: unknown) => void }) {
  const [rows, setRows] = useState<AgentRow[] | undefined>()
  const [permission, setPermission] = useState(notifyPermission())
  const [version, setVersion] = useState(0)
  const { failed } = props
  useEffect(() => {
    let stopped = false
    const load = () =>
      api<{ agents: AgentRow[] }>('GET', '/api/agents')
        .then((result) => {
          if (!stopped) setRows(result.agents)
        })
        .catch(failed)
    void load()
    const timer = setInterval(() => void load(), POLL_MS)
    return () => {
      stopped = true
      clearInterval(timer)
    }
  }, [failed, version])
  /** An action on another process's agent, then the list again. */
  const act = (path: string, body: Record<string, unknown>) =>
    void api('POST', path, body)
      .catch(failed)
      .finally(() => setVersion((n) => n + 1))
  if (!rows) return null
  const now = Date.now()
  return (
    <details class="agents" open>
      <summary>Agents ({rows.length})</summary>
      {permission === 'default' ? (
        <button
          type="button"
          class="link notify-me"
          onClick={() => void askToNotify().then(setPermission)}
          title="a system notification when an approval or a question waits while this page is hidden"
        >
          notify me when an agent needs me
        </button>
      ) : null}
      {rows.length === 0 ? (
        <p class="meta">No agent is running.</p>
      ) : (
        <ul aria-label="running agents">
          {rows.map((row) => (
            <li key={row.sessionId} data-agent={row.sessionId} data-state={row.state} data-kind={row.kind}>
              <a href={`#/s/${row.sessionId}`} title={`open the transcript of ${row.sessionId}`}>
                <span class={`agent-state ${row.state.replace(/ /g, '-')}`}>{row.state}</span>{' '}
                <span class="agent-kind">{row.kind}</span>{' '}
                <span class="agent-title">{row.title ?? row.sessionId.slice(0, 8)}</span>
              </a>
              <span class="meta" title={row.cwd}>
                {row.branch ? `${row.cwd} [${row.branch}]` : row.cwd}
              </span>
              <span class="meta">
                {[row.detail, row.model, row.cost, ago(row.lastActivity, now)].filter(Boolean).join(' · ')}
              </span>
              <AgentActions row={row} act={act} />
            </li>
          ))}
        </ul>
      )}
    </details>
  )
}

/** What the page can do to another process's agent: answer the approval a background run waits on, stop it. */
function AgentActions({ row, act }: { row: AgentRow; act: (path: string, body: Record<string, unknown>) => void }) {
  const id = encodeURIComponent(row.sessionId)
  const approval = row.attachable ? row.approval : undefined
  const stoppable = row.kind !== 'child' && (row.state === 'running' || row.state.startsWith('waiting'))
  if (!approval && !stoppable) return null
  return (
    <span class="agent-actions">
      {approval ? (
        <>
          <span class="agent-approval" title={approval.summary}>
            {approval.summary}
          </span>
          <button
            type="button"
            class="link agent-allow"
            onClick={() =>
              act(`/api/agents/${id}/approval`, { requestId: approval.requestId, decision: 'allowed-once' })
            }
          >
            allow once
          </button>
          <button
            type="button"
            class="link agent-reject"
            onClick={() => act(`/api/agents/${id}/approval`, { requestId: approval.requestId, decision: 'rejected' })}
          >
            reject
          </button>
        </>
      ) : null}
      {stoppable ? (
        <button type="button" class="link agent-stop" onClick={() => act(`/api/agents/${id}/stop`, {})}>
          stop
        </button>
      ) : null}
    </span>
  )
}
