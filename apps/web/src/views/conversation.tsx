// One session's conversation: its nodes, rendered a page at a time from the newest (or down to a
// search hit), with the approvals and questions waiting on it.

import type { PendingQuestion as QuestionView } from '@dsh/surfaces/wire'
import { Component } from 'preact'
import { useLayoutEffect, useRef, useState } from 'preact/hooks'
import { api } from '../connection'
import { failed, useHost, useRoute } from '../host-state'
import { jumpTarget, nodeIndexFor } from '../navigation'
import type { ConversationNode, SessionProjection, ToolNode } from '../projection'
import { nodeRenderers, type RenderContext } from '../registry'
import { useJumpHighlight } from '../search'
import { useSlots } from '../slots'
import { AllowSimilar, type KeptRule } from './allow-similar'

class NodeView extends Component<{
  node: ConversationNode
  rev: number
  approval?: string
  /** The slots' version: a client module loaded or unloaded may change how this node renders. */
  slotsVersion: number
  ctx: RenderContext
}> {
  override shouldComponentUpdate(next: NodeView['props']) {
    return (
      next.node !== this.props.node ||
      next.rev !== this.props.rev ||
      next.approval !== this.props.approval ||
      next.slotsVersion !== this.props.slotsVersion
    )
  }
  override render() {
    const renderer = nodeRenderers.get(this.props.node.kind)
    return renderer ? renderer(this.props.node, this.props.ctx) : null
  }
}

const PAGE = 150

export function Conversation({ projection }: { projection: SessionProjection }) {
  const state = useHost()
  const slotsVersion = useSlots()
  const [limit, setLimit] = useState(PAGE)
  const scroller = useRef<HTMLDivElement>(null)
  const stick = useRef(true)
  /** Distance from the bottom before a page of older nodes was prepended (keeps the view still). */
  const anchor = useRef<number | undefined>(undefined)
  const loadEarlier = () => {
    const el = scroller.current
    // One page per render: a click and the scroll that brought the button into view count once.
    if (!el || anchor.current !== undefined) return
    anchor.current = el.scrollHeight - el.scrollTop
    setLimit((value) => value + PAGE)
  }
  const approvals = [...state.approvals.values()].filter((a) => a.sessionId === projection.sessionId)
  const byCall = new Map(approvals.filter((a) => a.toolCallId).map((a) => [a.toolCallId as string, a]))
  const loose = approvals.filter((a) => !a.toolCallId || !projection.toolNodes.has(a.toolCallId))
  const respond = (requestId: string, decision: 'allowed-once' | 'rejected', grant?: 'session', rule?: KeptRule) =>
    void api('POST', `/api/approvals/${encodeURIComponent(requestId)}`, {
      decision,
      ...(grant ? { grant } : {}),
      ...(rule ? { rule } : {}),
    }).catch(failed)
  const ctx: RenderContext = {
    sessionId: projection.sessionId,
    approvalFor: (id) => byCall.get(id),
    respond,
    fork: (seq) =>
      void api<{ sessionId: string }>('POST', `/api/sessions/${projection.sessionId}/fork`, { at: seq })
        .then((forked) => {
          location.hash = `#/s/${forked.sessionId}`
        })
        .catch(failed),
    nodes: () => projection.nodes,
  }
  const nodes = projection.nodes
  // A search hit opens the session at its event: the pages down to that node are rendered too.
  const target = jumpTarget(useRoute())
  const targetIndex = target === undefined ? -1 : nodeIndexFor(nodes, target)
  const start = Math.min(Math.max(0, nodes.length - limit), targetIndex < 0 ? nodes.length : targetIndex)
  // Incremental rendering: only the newest `limit` nodes are in the DOM; reaching the top adds a page
  // (the scroll position is restored after the prepend, so one scroll adds one page).
  useLayoutEffect(() => {
    const el = scroller.current
    if (!el) return
    if (anchor.current !== undefined) {
      el.scrollTop = el.scrollHeight - anchor.current
      anchor.current = undefined
    } else if (stick.current) el.scrollTop = el.scrollHeight
  })
  useJumpHighlight(scroller, stick, nodes, target)
  return (
    <div
      class="conversation"
      ref={scroller}
      onScroll={(e) => {
        const el = e.currentTarget
        stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < 80
        if (el.scrollTop < 40 && start > 0) loadEarlier()
      }}
    >
      {start > 0 ? (
        <div class="earlier">
          <button type="button" class="link" onClick={loadEarlier}>
            {start} earlier items
          </button>
        </div>
      ) : null}
      {nodes.slice(start).map((node) => (
        <NodeView
          key={node.key}
          node={node}
          rev={node.rev}
          approval={node.kind === 'tool' ? byCall.get((node as ToolNode).call.id)?.requestId : undefined}
          slotsVersion={slotsVersion}
          ctx={ctx}
        />
      ))}
      {loose.map((approval) => (
        <div class="node approval loose" key={approval.requestId}>
          <div class="approval-summary">
            {approval.summary}
            {approval.reason ? <div class="approval-reason">why: {approval.reason}</div> : null}
          </div>
          <button type="button" class="allow" onClick={() => respond(approval.requestId, 'allowed-once')}>
            Allow once
          </button>
          <button
            type="button"
            class="allow-session"
            onClick={() => respond(approval.requestId, 'allowed-once', 'session')}
          >
            Allow for this chat
          </button>
          {approval.suggestedRule ? (
            <AllowSimilar
              rule={approval.suggestedRule}
              onAllow={(rule) => respond(approval.requestId, 'allowed-once', undefined, rule)}
            />
          ) : null}
          <button type="button" class="reject" onClick={() => respond(approval.requestId, 'rejected')}>
            Reject
          </button>
        </div>
      ))}
      {[...state.questions.values()]
        .filter((question) => question.sessionId === projection.sessionId)
        .map((question) => (
          <QuestionPrompt key={question.questionId} question={question} />
        ))}
      {projection.error ? <div class="node error">{projection.error}</div> : null}
    </div>
  )
}

/** A question the model asked (`ask_user`): suggested answers as buttons, or free text. */
function QuestionPrompt({ question }: { question: QuestionView }) {
  const [text, setText] = useState('')
  const answer = (value: string) =>
    void api('POST', `/api/questions/${encodeURIComponent(question.questionId)}`, { answer: value }).catch(failed)
  return (
    <form
      class="node question"
      onSubmit={(e) => {
        e.preventDefault()
        if (text.trim()) answer(text.trim())
      }}
    >
      <div class="question-text">{question.question}</div>
      {question.options?.map((option) => (
        <button type="button" key={option} onClick={() => answer(option)}>
          {option}
        </button>
      ))}
      <input value={text} aria-label="answer" onInput={(e) => setText(e.currentTarget.value)} />
      <button type="submit">Answer</button>
    </form>
  )
}
