// The `task` tool card: the delegated prompt, a remote child's progress as it is logged, the report,
// and the child's own transcript on request. The transcript is read-only: it follows the child's
// session stream without resuming it (a child runs under its parent's agent, and the stream never
// takes the session's lease), so it can be watched while the parent runs (decision 365).

import type { SessionFrame } from '@dsh/surfaces/wire'
import { useEffect, useMemo, useState } from 'preact/hooks'
import { api, exportedSession, openStream } from './connection'
import { SessionProjection, type ToolNode } from './projection'
import { nodeRenderers, type RenderContext, registerToolCard } from './registry'
import { type SubagentView, subagentOf } from './subagent-fold'
import { foldExported } from './views/exported'
import './views.css'

/** The child transcript shows its newest nodes only; older ones are in the child's own session. */
const TRANSCRIPT_NODES = 300

registerToolCard('task', (node) => <TaskCard node={node} />)

function TaskCard({ node }: { node: ToolNode }) {
  const [open, setOpen] = useState(false)
  const view = subagentOf(node)
  const args = node.call.arguments
  const label = String(args.description ?? '') || String(args.prompt ?? '').slice(0, 80)
  return (
    <div class="task-card" data-child={view?.childSession}>
      <div class="task-label">
        {label}
        {view ? <span class="task-provider">{view.provider}</span> : null}
        {view?.outcome ? <span class={`task-outcome ${view.outcome}`}>{view.outcome}</span> : null}
      </div>
      {view?.progress.length ? <Progress view={view} /> : null}
      {view ? (
        <button
          type="button"
          class="link task-open"
          aria-expanded={open}
          aria-controls={`child-${view.childSession}`}
          onClick={() => setOpen(!open)}
        >
          {open ? 'hide subagent transcript' : 'subagent transcript'}
        </button>
      ) : null}
      {open && view ? <ChildTranscript childSession={view.childSession} /> : null}
      {node.result ? (
        <details class="task-report">
          <summary>report</summary>
          <pre class={`result${node.result.isError ? ' is-error' : ''}`}>{node.result.text}</pre>
        </details>
      ) : null}
    </div>
  )
}

/** What a child outside this process did (ACP agents log `subagent/progress` in the parent's log). */
function Progress({ view }: { view: SubagentView }) {
  return (
    <ol class="task-progress" aria-label="subagent progress">
      {view.progress.map((line, index) => (
        <li key={line.toolCallId ?? index} class={`progress-${line.kind}`} data-status={line.status}>
          {line.kind === 'tool' ? (
            <>
              <span class="progress-tool">{line.text}</span> <span class="progress-status">{line.status}</span>
            </>
          ) : (
            <span>{line.kind === 'thought' ? `(thinking) ${line.text}` : line.text}</span>
          )}
        </li>
      ))}
    </ol>
  )
}

/** The child's session as it is logged, followed live; nothing here can change it. */
function ChildTranscript({ childSession }: { childSession: string }) {
  // An exported page carries the child's log (when it could be read): folded once, nothing to follow.
  const embedded = exportedSession()?.children?.[childSession]
  const projection = useMemo(
    () => (embedded ? foldExported(embedded) : new SessionProjection(childSession)),
    [childSession, embedded],
  )
  const [, setTick] = useState(0)
  const [failure, setFailure] = useState('')
  useEffect(() => {
    if (exportedSession()) return
    let frame = 0
    const stream = openStream<SessionFrame>(
      () => `/api/streams/session/${childSession}?since=${projection.nextSeq}`,
      (message) => {
        if (!projection.applyFrame(message) || frame) return
        frame = requestAnimationFrame(() => {
          frame = 0
          setTick((tick) => tick + 1)
        })
      },
    )
    return () => {
      stream.close()
      if (frame) cancelAnimationFrame(frame)
    }
  }, [projection, childSession])
  const ctx: RenderContext = {
    sessionId: childSession,
    approvalFor: () => undefined,
    respond: () => {},
    // Forking the child is a new session of its own: the child itself stays untouched.
    fork: (seq) =>
      void api<{ sessionId: string }>('POST', `/api/sessions/${childSession}/fork`, { at: seq })
        .then((forked) => {
          location.hash = `#/s/${forked.sessionId}`
        })
        .catch((error: unknown) => setFailure(String(error))),
    nodes: () => projection.nodes,
  }
  const nodes = projection.nodes.slice(-TRANSCRIPT_NODES)
  return (
    <section class="child-transcript" id={`child-${childSession}`} aria-label="subagent transcript (read-only)">
      <div class="child-head">
        read-only · <code>{childSession}</code>
        {projection.error || failure ? <span class="child-error"> · {projection.error ?? failure}</span> : null}
        {exportedSession() && !embedded ? <span class="child-error"> · not in this export</span> : null}
      </div>
      {nodes.map((node) => {
        const render = nodeRenderers.get(node.kind)
        return render ? <div key={node.key}>{render(node, ctx)}</div> : null
      })}
    </section>
  )
}
