// The client's keyed slots: conversation node renderers by node kind, tool cards by tool name
// (falling back to `generic`). Built-ins register here like any plugin would; the conversation view
// only looks renderers up, it never switches over kinds.

import { contextChip } from '@dsh/attachments/chip'
import type { EventEnvelope, PendingApproval } from '@dsh/surfaces/wire'
import type { ComponentChildren, VNode } from 'preact'
import { blobSrc } from './connection'
import { Markdown } from './markdown'
import { MessageActions } from './message-actions'
import type { ConversationNode, ToolNode } from './projection'
import { InSlot, slots } from './slots'
import { AllowSimilar, type KeptRule } from './views/allow-similar'

export interface RenderContext {
  sessionId: string
  /** Pending approval questions of this session, by tool call id. */
  approvalFor(toolCallId: string): PendingApproval | undefined
  /**
   * `grant: 'session'` with `allowed-once`: "allow for this chat" (a logged session grant); `rule`:
   * "allow similar", the suggested rule kept where the person chose.
   */
  respond(requestId: string, decision: 'allowed-once' | 'rejected', grant?: 'session', rule?: KeptRule): void
  fork(seq: number): void
  /** The open conversation's nodes at the moment of the call. */
  nodes(): readonly ConversationNode[]
}

export type NodeRenderer = (node: ConversationNode, ctx: RenderContext) => VNode | null
export type ToolCard = (node: ToolNode) => ComponentChildren

export const nodeRenderers = new Map<string, NodeRenderer>()
export const toolCards = new Map<string, ToolCard>()

export function registerNodeRenderer(kind: string, renderer: NodeRenderer): () => void {
  nodeRenderers.set(kind, renderer)
  return () => nodeRenderers.get(kind) === renderer && nodeRenderers.delete(kind)
}

export function registerToolCard(toolName: string, card: ToolCard): () => void {
  toolCards.set(toolName, card)
  return () => toolCards.get(toolName) === card && toolCards.delete(toolName)
}

// ---- built-in node renderers ----

registerNodeRenderer('user', (node, ctx) => {
  const images = (node.images ?? []) as { ref: string; mimeType: string }[]
  return (
    <div class="node user" data-seq={node.seq}>
      <div class="bubble">{String(node.text)}</div>
      {images.length > 0 ? (
        <div class="thumbs">
          {images.map((image) => {
            const src = blobSrc(image.ref)
            return src ? (
              <a key={image.ref} href={src} target="_blank" rel="noreferrer">
                <img class="thumb" src={src} alt={`attached ${image.mimeType}`} />
              </a>
            ) : (
              <span key={image.ref} class="thumb missing">
                attached {image.mimeType} (not in this export)
              </span>
            )
          })}
        </div>
      ) : null}
      {Array.isArray(node.attached)
        ? (node.attached as string[]).map((block, index) => {
            // A file, directory or session the prompt attached: a chip, its content one click away.
            const chip = contextChip(block.trim())
            return (
              <details class="attached" key={index}>
                <summary>{chip ? `${chip.name} (${chip.detail})` : 'attached context'}</summary>
                <div class="context-text">{chip ? chip.body : block}</div>
              </details>
            )
          })
        : null}
      <MessageActions
        text={String(node.text)}
        node={node}
        nodes={ctx.nodes}
        fork={ctx.fork}
        sessionId={ctx.sessionId}
      />
    </div>
  )
})

registerNodeRenderer('context', (node) => (
  <details class="node context" data-seq={node.seq}>
    <summary>context added by the harness ({String(node.origin)})</summary>
    <div class="context-text">{String(node.text)}</div>
  </details>
))

function Reasoning({ text }: { text: string }) {
  if (!text) return null
  return (
    <details class="reasoning">
      <summary>Reasoning</summary>
      <div class="reasoning-text">{text}</div>
    </details>
  )
}

registerNodeRenderer('assistant', (node, ctx) => (
  <div class="node assistant" data-seq={node.seq}>
    <Reasoning text={String(node.reasoning ?? '')} />
    {node.text ? <Markdown text={String(node.text)} /> : null}
    {node.text ? (
      <MessageActions
        text={String(node.text)}
        node={node}
        nodes={ctx.nodes}
        fork={ctx.fork}
        sessionId={ctx.sessionId}
      />
    ) : null}
  </div>
))

registerNodeRenderer('streaming', (node) => (
  <div class="node assistant streaming" data-seq={node.seq}>
    <Reasoning text={String(node.reasoning ?? '')} />
    <Markdown text={String(node.text ?? '')} />
    <span class="cursor">▍</span>
  </div>
))

registerNodeRenderer('error', (node) => (
  <div class="node error" role="alert">
    <strong>Model error {String(node.code)}</strong>: {String(node.text)}
  </div>
))

const TURN_END: Record<string, string> = {
  completed: '',
  aborted: 'Turn cancelled',
  interrupted: 'Turn interrupted (the host stopped while it ran)',
  blocked: 'Turn stopped: step limit reached',
  error: 'Turn ended with an error',
  'max-tokens': 'Turn ended: output token limit',
}

registerNodeRenderer('turn-end', (node, ctx) => {
  const label = TURN_END[String(node.reason)] ?? `Turn ended: ${String(node.reason)}`
  return (
    <div class={`node turn-end reason-${String(node.reason)}`}>
      {label ? (
        <span class="turn-label">
          {label}
          {node.text ? `: ${String(node.text)}` : ''}
          {node.next ? ` — ${String(node.next)}` : ''}
        </span>
      ) : null}
      <button
        type="button"
        class="link fork"
        title="Start a new session from this point"
        onClick={() => ctx.fork(node.seq)}
      >
        fork here
      </button>
    </div>
  )
})

/** An event a client module renders (`registerEventRenderer`); nothing when its module is gone. */
registerNodeRenderer('event', (node, ctx) => {
  const event = node.event as EventEnvelope
  const plugin = slots.events.get(event.type)
  if (!plugin) return null
  return (
    <div class="node plugin-event" data-event={event.type} data-seq={node.seq}>
      <InSlot entry={plugin} slot={`event ${event.type}`} props={{ sessionId: ctx.sessionId, event }} />
    </div>
  )
})

registerNodeRenderer('notice', (node) => <div class="node notice">{String(node.text)}</div>)

const OUTCOME: Record<string, string> = {
  TOOL_OUTCOME_UNKNOWN: 'outcome unknown: the host stopped while this ran; it may or may not have taken effect',
  TOOL_NOT_STARTED: 'not started: the host stopped before this ran',
  ABORTED: 'cancelled while running',
  ABORTED_BEFORE_DISPATCH: 'cancelled before it ran',
}

registerNodeRenderer('tool', (node, ctx) => {
  const tool = node as ToolNode
  // A client module's renderer for this tool wins over the built-in card.
  const plugin = slots.tools.get(tool.call.name)
  const card = plugin ? undefined : (toolCards.get(tool.call.name) ?? toolCards.get('generic'))
  const pending = ctx.approvalFor(tool.call.id)
  const result = tool.result
  const cancelled = result && (result.code?.startsWith('ABORTED') || /^\[aborted: /m.test(result.text))
  const status = !result
    ? pending
      ? 'waiting'
      : 'running'
    : cancelled
      ? 'cancelled'
      : result.isError
        ? 'failed'
        : 'done'
  return (
    <div class={`node tool status-${status}`} data-tool={tool.call.name}>
      <div class="tool-head">
        <span class="tool-name">{tool.call.name}</span>
        <span class="tool-status">{status}</span>
      </div>
      {plugin ? (
        <InSlot
          entry={plugin}
          slot={`tool ${tool.call.name}`}
          props={{
            sessionId: ctx.sessionId,
            call: tool.call,
            ...(result
              ? {
                  result: { text: result.text, isError: result.isError, ...(result.code ? { code: result.code } : {}) },
                }
              : {}),
            status,
          }}
        />
      ) : (
        card?.(tool)
      )}
      {result?.code && OUTCOME[result.code] ? <div class="outcome">{OUTCOME[result.code]}</div> : null}
      {tool.decision ? <div class="decision">approval: {decisionLabel(tool.decision)}</div> : null}
      {pending ? (
        <fieldset class="approval" aria-label="approval">
          <div class="approval-summary">
            {pending.summary}
            {pending.reason ? <div class="approval-reason">why: {pending.reason}</div> : null}
          </div>
          <button
            type="button"
            class="allow"
            aria-keyshortcuts="Alt+A"
            onClick={() => ctx.respond(pending.requestId, 'allowed-once')}
          >
            Allow once
          </button>
          <button
            type="button"
            class="allow-session"
            title={`Allow ${tool.call.name} calls of this kind for the rest of this chat (logged)`}
            onClick={() => ctx.respond(pending.requestId, 'allowed-once', 'session')}
          >
            Allow for this chat
          </button>
          {pending.suggestedRule ? (
            <AllowSimilar
              rule={pending.suggestedRule}
              onAllow={(rule) => ctx.respond(pending.requestId, 'allowed-once', undefined, rule)}
            />
          ) : null}
          <button
            type="button"
            class="reject"
            aria-keyshortcuts="Alt+R"
            onClick={() => ctx.respond(pending.requestId, 'rejected')}
          >
            Reject
          </button>
        </fieldset>
      ) : null}
    </div>
  )
})

function decisionLabel(decision: NonNullable<ToolNode['decision']>): string {
  const text =
    decision.decision !== 'allowed-once'
      ? decision.decision
      : decision.rule
        ? `allowed, with ${decision.rule.text} kept ${{ session: 'for this chat', user: 'in your settings', project: 'in this project' }[decision.rule.scope] ?? ''}`
        : decision.grant
          ? 'allowed for this chat'
          : decision.by === 'grant'
            ? "allowed by this chat's grant"
            : 'allowed once'
  return decision.reason ? `${text} (${decision.reason})` : text
}

// ---- built-in tool cards ----

function ResultText({ node }: { node: ToolNode }) {
  if (!node.result) return null
  return <pre class={`result${node.result.isError ? ' is-error' : ''}`}>{clip(node.result.text)}</pre>
}

function clip(text: string, max = 20000): string {
  return text.length > max ? `${text.slice(0, max)}\n[... ${text.length - max} more characters]` : text
}

registerToolCard('generic', (node) => (
  <>
    <pre class="args">{clip(JSON.stringify(node.call.arguments, null, 2), 4000)}</pre>
    <ResultText node={node} />
  </>
))

/** Terminal: the command, then its output. */
registerToolCard('bash', (node) => (
  <div class="terminal">
    <div class="command">$ {String(node.call.arguments.command ?? '')}</div>
    {node.result ? <pre class="output">{clip(node.result.text)}</pre> : null}
  </div>
))

function DiffLines({ text }: { text: string }) {
  return (
    <pre class="diff">
      {text.split('\n').map((line) => (
        <div class={line.startsWith('+') ? 'add' : line.startsWith('-') ? 'del' : line.startsWith('@@') ? 'hunk' : ''}>
          {line || ' '}
        </div>
      ))}
    </pre>
  )
}

/** Diff: a write shows the new content as added lines; an edit shows the unified diff it returned. */
registerToolCard('write', (node) => (
  <>
    <div class="path">{String(node.call.arguments.path ?? '')}</div>
    <DiffLines
      text={String(node.call.arguments.content ?? '')
        .replace(/\n$/, '')
        .split('\n')
        .map((line) => `+${line}`)
        .join('\n')}
    />
    {node.result ? <pre class={`result${node.result.isError ? ' is-error' : ''}`}>{clip(node.result.text)}</pre> : null}
  </>
))

registerToolCard('edit', (node) => (
  <>
    <div class="path">{String(node.call.arguments.path ?? '')}</div>
    {node.result && !node.result.isError ? (
      <DiffLines text={node.result.text} />
    ) : (
      <DiffLines
        text={`-${String(node.call.arguments.old_string ?? '')}\n+${String(node.call.arguments.new_string ?? '')}`}
      />
    )}
    {node.result?.isError ? <pre class="result is-error">{node.result.text}</pre> : null}
  </>
))

registerToolCard('read', (node) => (
  <>
    <div class="path">{String(node.call.arguments.path ?? '')}</div>
    {node.result ? (
      <details class="file">
        <summary>{node.result.isError ? 'failed' : `${node.result.text.split('\n').length} lines`}</summary>
        <pre class={`result${node.result.isError ? ' is-error' : ''}`}>{clip(node.result.text)}</pre>
      </details>
    ) : null}
  </>
))
