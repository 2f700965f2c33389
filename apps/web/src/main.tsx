// The dsh browser client: session list, one open conversation, composer, settings. The host owns
// every entity; this page keeps projections fed by the downlink streams and sends unary calls.
import { Component, render } from 'preact'
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks'
import type {
  ApprovalView,
  ConfigNotice,
  HostFrame,
  PresetSummary,
  PromptResult,
  QuestionView,
  SessionFrame,
  SessionSummary,
} from '../../../packages/surfaces/src/web/protocol.js'
import { ApiFailure, api, openStream } from './connection'
import { Jobs } from './jobs-view'
import { NavToggle } from './layout'
import { LeaseBadge, LeaseNotice, leasedElsewhere } from './lease'
import { modelChoices, useModels } from './models'
import { jumpTarget, nodeIndexFor } from './navigation'
import { applyManifest } from './plugins'
import { type ConversationNode, SessionProjection, type ToolNode } from './projection'
import { nodeRenderers, type RenderContext } from './registry'
import { SessionSearch, useJumpHighlight } from './search'
import { SessionActions } from './session-actions'
import { Settings } from './settings'
import './subagent-view'
import { SHORTCUTS, type ShortcutActions, useShortcuts } from './shortcuts'
import { InSlot, SlotBoundary, slots, useSlots } from './slots'
import { Workspaces } from './workspaces'
import './style.css'

// ---- host projection (session list + pending approvals) ----

const host = {
  sessions: [] as SessionSummary[],
  approvals: new Map<string, ApprovalView>(),
  questions: new Map<string, QuestionView>(),
  modes: [] as string[],
  /** Agent presets a new session can take, and the one it gets when none is picked. */
  presets: [] as PresetSummary[],
  defaultPreset: undefined as string | undefined,
  /** Where new sessions start unless a directory is typed (the host's own). */
  defaultCwd: '',
  /** The last report of a watched config edit (`--watch-config`); a refused one shows as a banner. */
  config: undefined as ConfigNotice | undefined,
  connected: false,
  listeners: new Set<() => void>(),
  changed() {
    for (const listener of this.listeners) listener()
  },
}

openStream<HostFrame>(
  () => '/api/streams/host',
  (frame) => {
    if (frame.type === 'host/baseline') {
      host.sessions = frame.sessions
      host.approvals = new Map(frame.approvals.map((approval) => [approval.requestId, approval]))
      host.questions = new Map(frame.questions.map((question) => [question.questionId, question]))
      host.modes = frame.modes
      host.presets = frame.presets ?? []
      host.defaultPreset = frame.defaultPreset
      host.defaultCwd = frame.defaultCwd
      host.config = frame.config
      applyManifest(frame.clientModules ?? [])
    } else if (frame.type === 'host/client-modules') applyManifest(frame.modules)
    else if (frame.type === 'host/sessions') host.sessions = frame.sessions
    else if (frame.type === 'host/config') host.config = frame.config
    else if (frame.type === 'approval/requested') host.approvals.set(frame.approval.requestId, frame.approval)
    else if (frame.type === 'approval/settled') host.approvals.delete(frame.requestId)
    else if (frame.type === 'question/requested') host.questions.set(frame.question.questionId, frame.question)
    else if (frame.type === 'question/settled') host.questions.delete(frame.questionId)
    host.changed()
  },
  (connected) => {
    host.connected = connected
    // A call that failed while the host was away is stale once it is back: the toast would only cover
    // the composer (and the send button under it) until clicked.
    if (connected && unreachableShown) {
      unreachableShown = false
      reportError('')
    }
    host.changed()
  },
)

function useHost() {
  const [, setTick] = useState(0)
  useEffect(() => {
    const listener = () => setTick((tick) => tick + 1)
    host.listeners.add(listener)
    return () => void host.listeners.delete(listener)
  }, [])
  return host
}

function useRoute(): string {
  const [hash, setHash] = useState(location.hash)
  useEffect(() => {
    const onHash = () => setHash(location.hash)
    addEventListener('hashchange', onHash)
    return () => removeEventListener('hashchange', onHash)
  }, [])
  return hash
}

/** Shows a failed call to the person instead of swallowing it. */
let reportError: (message: string) => void = () => {}
/** Whether the toast shows a call that never reached the host (fetch's TypeError), not an answer. */
let unreachableShown = false
function failed(error: unknown) {
  unreachableShown = error instanceof TypeError
  reportError(error instanceof ApiFailure ? `${error.code}: ${error.message}` : String(error))
}

// ---- session list ----

function Sidebar({ current }: { current: string | undefined }) {
  const state = useHost()
  const [query, setQuery] = useState('')
  const [cwd, setCwd] = useState('')
  const [preset, setPreset] = useState('')
  const rows = state.sessions.filter((row) =>
    `${row.title ?? ''} ${row.cwd} ${row.sessionId}`.toLowerCase().includes(query.toLowerCase()),
  )
  const create = async (event?: Event, where?: string) => {
    event?.preventDefault()
    try {
      const created = await api<{ sessionId: string }>('POST', '/api/sessions', {
        cwd: where ?? (cwd.trim() || state.defaultCwd),
        ...(preset ? { preset } : {}),
      })
      location.hash = `#/s/${created.sessionId}`
    } catch (error) {
      failed(error)
    }
  }
  return (
    <aside class="sidebar" id="sidebar">
      <header>
        <strong>dsh</strong>
        <span class={`dot ${state.connected ? 'on' : 'off'}`} title={state.connected ? 'connected' : 'reconnecting'} />
        <a href="#/settings" class="link">
          settings
        </a>
      </header>
      <form class="new-session" onSubmit={create}>
        <input
          placeholder={`working directory (default: ${state.defaultCwd || 'host cwd'})`}
          value={cwd}
          onInput={(e) => setCwd(e.currentTarget.value)}
          aria-label="working directory"
        />
        {state.presets.length > 0 && (
          <select
            id="new-session-preset"
            aria-label="preset"
            value={preset || state.defaultPreset || ''}
            onChange={(e) => setPreset(e.currentTarget.value)}
          >
            {state.presets.map((item) => (
              <option key={item.name} value={item.name} title={item.description}>
                {item.name}
              </option>
            ))}
          </select>
        )}
        {/* Until the host baseline names its directory there is nothing to create a session in. */}
        <button type="submit" id="new-session" disabled={!cwd.trim() && !state.defaultCwd}>
          New session
        </button>
      </form>
      <input
        class="search"
        placeholder="search titles"
        value={query}
        onInput={(e) => setQuery(e.currentTarget.value)}
        aria-label="search sessions"
      />
      <SessionSearch failed={failed} />
      <ul class="sessions">
        {rows.map((row) => (
          <li key={row.sessionId} class={row.sessionId === current ? 'current' : ''}>
            <a href={`#/s/${row.sessionId}`} data-session={row.sessionId}>
              <span class="title">{row.title ?? '(untitled)'}</span>
              <span class={`status ${row.status}`}>{row.status === 'running' ? 'running' : ''}</span>
              <LeaseBadge row={row} />
              <span class="meta">
                {row.cwd} · {row.eventCount} events{row.parentSessionId ? ' · fork' : ''}
              </span>
            </a>
          </li>
        ))}
      </ul>
      <Workspaces
        version={state.sessions.map((row) => row.sessionId).join()}
        start={(where) => void create(undefined, where)}
        failed={failed}
      />
      <SidebarSlots current={current} sessions={state.sessions} />
      <details class="shortcuts">
        <summary>Keyboard shortcuts</summary>
        <dl>
          {SHORTCUTS.map(([keys, what]) => (
            <div key={keys}>
              <dt>
                <kbd>{keys}</kbd>
              </dt>
              <dd>{what}</dd>
            </div>
          ))}
        </dl>
      </details>
    </aside>
  )
}

/** Sidebar items of client modules, and the modules that failed to load (never a blank page). */
function SidebarSlots({ current, sessions }: { current: string | undefined; sessions: SessionSummary[] }) {
  useSlots()
  return (
    <>
      {[...slots.failures].map(([id, message]) => (
        <div key={id} class="slot-error" role="alert" data-owner={id}>
          client module {id} failed to load: {message}
        </div>
      ))}
      {[...slots.sidebar.values()].map((entry) => (
        <section key={entry.value.id} class="sidebar-item" data-item={entry.value.id} aria-label={entry.value.title}>
          <h3>{entry.value.title}</h3>
          <InSlot
            entry={{ owner: entry.owner, value: entry.value.render }}
            slot={`sidebar ${entry.value.id}`}
            props={{ ...(current ? { currentSessionId: current } : {}), sessions }}
          />
        </section>
      ))}
    </>
  )
}

/** Header badges of client modules for the open session. */
function HeaderBadges({ sessionId }: { sessionId: string }) {
  useSlots()
  return (
    <>
      {[...slots.badges.values()].map((entry) => (
        <span key={entry.value.id} class="badge" data-badge={entry.value.id}>
          <InSlot
            entry={{ owner: entry.owner, value: entry.value.render }}
            slot={`badge ${entry.value.id}`}
            props={{ sessionId }}
          />
        </span>
      ))}
    </>
  )
}

// ---- one conversation ----

const projections = new Map<string, SessionProjection>()

function useSession(sessionId: string): SessionProjection {
  const projection = useMemo(() => {
    const existing = projections.get(sessionId)
    if (existing) return existing
    const created = new SessionProjection(sessionId)
    projections.set(sessionId, created)
    return created
  }, [sessionId])
  const [, setTick] = useState(0)
  useSlots()
  // Event types a client module renders are folded into nodes: a change folds the log again from 0.
  const eventTypes = [...slots.events.keys()].sort().join(',')
  useEffect(() => {
    if (projection.foldedTypes !== eventTypes) {
      projection.foldedTypes = eventTypes
      if (projection.nextSeq > 0) projection.reset()
    }
    let frame = 0
    const schedule = () => {
      if (frame) return
      frame = requestAnimationFrame(() => {
        frame = 0
        setTick((tick) => tick + 1)
      })
    }
    let stream: { close(): void } | undefined
    let cancelled = false
    // Attach an agent (cold resume after a host restart), then follow the log from what we lack.
    api('POST', `/api/sessions/${sessionId}/resume`)
      // Open on another host: the lease notice says so; the stream follows the durable log.
      .catch((error) => leasedElsewhere(error) || failed(error))
      .finally(() => {
        if (cancelled) return
        stream = openStream<SessionFrame>(
          () => `/api/streams/session/${sessionId}?since=${projection.nextSeq}`,
          (message) => {
            if (projection.applyFrame(message)) schedule()
          },
        )
      })
    return () => {
      cancelled = true
      stream?.close()
      if (frame) cancelAnimationFrame(frame)
    }
  }, [projection, eventTypes])
  return projection
}

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

function Conversation({ projection }: { projection: SessionProjection }) {
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
  const respond = (requestId: string, decision: 'allowed-once' | 'rejected', grant?: 'session') =>
    void api('POST', `/api/approvals/${encodeURIComponent(requestId)}`, {
      decision,
      ...(grant ? { grant } : {}),
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
          <div class="approval-summary">{approval.summary}</div>
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

function Meter({ projection }: { projection: SessionProjection }) {
  const usage = projection.usage
  if (!usage) return null
  const window = projection.contextWindow
  const share = window ? ` (${Math.round((usage.inputTokens / window) * 100)}% of ${window})` : ''
  return (
    <span class="meter" title="tokens of the last request">
      {usage.inputTokens} in / {usage.outputTokens} out{share}
    </span>
  )
}

function ModePicker({ projection }: { projection: SessionProjection }) {
  const state = useHost()
  if (!state.modes.length || !projection.mode) return null
  return (
    <select
      aria-label="permission mode"
      value={projection.mode}
      onChange={(e) =>
        void api('POST', `/api/sessions/${projection.sessionId}/mode`, { mode: e.currentTarget.value }).catch(failed)
      }
    >
      {state.modes.map((mode) => (
        <option key={mode} value={mode}>
          {mode}
        </option>
      ))}
    </select>
  )
}

function Todos({ projection }: { projection: SessionProjection }) {
  if (!projection.todos.length) return null
  const done = projection.todos.filter((todo) => todo.status === 'completed').length
  return (
    <details class="todos">
      <summary>
        Todo {done}/{projection.todos.length}
      </summary>
      <ul>
        {projection.todos.map((todo) => (
          <li key={todo.content} class={`todo ${todo.status}`}>
            {todo.content}
          </li>
        ))}
      </ul>
    </details>
  )
}

function Queue({ projection }: { projection: SessionProjection }) {
  const [editing, setEditing] = useState<{ id: string; text: string } | undefined>()
  const queue = projection.inbox['next-turn']
  const steering = projection.inbox['next-step']
  if (!queue.length && !steering.length) return null
  const splice = (target: 'next-step' | 'next-turn', start: number, deleteCount: number, texts: string[] = []) =>
    void api('POST', `/api/sessions/${projection.sessionId}/inbox`, { target, start, deleteCount, texts }).catch(failed)
  return (
    <div class="queue">
      {steering.map((item) => (
        <div class="queued steer" key={item.id}>
          <span class="kind">steer</span> {item.text}
        </div>
      ))}
      {queue.map((item, index) => (
        <div class="queued" key={item.id} data-queued={item.id}>
          <span class="kind">queued</span>
          {editing?.id === item.id ? (
            <>
              <input value={editing.text} onInput={(e) => setEditing({ id: item.id, text: e.currentTarget.value })} />
              <button
                type="button"
                onClick={() => {
                  splice('next-turn', index, 1, [editing.text])
                  setEditing(undefined)
                }}
              >
                save
              </button>
            </>
          ) : (
            <>
              <span class="text">{item.text}</span>
              <button type="button" class="link" onClick={() => setEditing({ id: item.id, text: item.text })}>
                edit
              </button>
              <button type="button" class="link" onClick={() => splice('next-turn', index, 1)}>
                remove
              </button>
            </>
          )}
        </div>
      ))}
    </div>
  )
}

/** Shows the answer of the last /command (it is not part of the log). */
let showCommand: (text: string) => void = () => {}

/** Sends a line as typed: the host runs a registered /command, or queues the message. */
/** A file picked, dropped or pasted into the composer, read as base64 for the prompt request. */
interface PendingFile {
  name: string
  mimeType: string
  data: string
  /** An object URL for the chip's preview (images only). */
  preview?: string
}

function readFile(file: File): Promise<PendingFile> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader()
    reader.onerror = () => reject(reader.error ?? new Error(`cannot read ${file.name}`))
    reader.onload = () => {
      const url = String(reader.result)
      resolve({
        name: file.name || 'pasted image',
        mimeType: file.type,
        data: url.slice(url.indexOf(',') + 1),
        ...(file.type.startsWith('image/') ? { preview: URL.createObjectURL(file) } : {}),
      })
    }
    reader.readAsDataURL(file)
  })
}

function submit(sessionId: string, kind: 'prompt' | 'steer', text: string, files: PendingFile[] = []) {
  const attachments = files.map(({ name, mimeType, data }) => ({ name, data, ...(mimeType ? { mimeType } : {}) }))
  void api<PromptResult>('POST', `/api/sessions/${sessionId}/${kind}`, files.length ? { text, attachments } : { text })
    .then((result) => {
      if (result.command) showCommand(`/${result.command.name}: ${result.command.text}`)
    })
    .catch(failed)
}

/** The session's model: any `provider:model` (runs `/model` on the host), suggesting what `dsh models` lists. */
function ModelPicker({ projection }: { projection: SessionProjection }) {
  const [value, setValue] = useState('')
  const choices = modelChoices(useModels(failed))
  return (
    <form
      class="model"
      onSubmit={(e) => {
        e.preventDefault()
        if (value.trim()) submit(projection.sessionId, 'prompt', `/model ${value.trim()}`)
        setValue('')
      }}
    >
      <input
        aria-label="model"
        list="model-choices"
        placeholder={projection.model ?? 'model (provider:model)'}
        value={value}
        onInput={(e) => setValue(e.currentTarget.value)}
      />
      <datalist id="model-choices">
        {choices.map((choice) => (
          <option key={choice} value={choice} />
        ))}
      </datalist>
    </form>
  )
}

/** Buttons client modules add to the composer; a failing action is reported like a failed call. */
function ComposerActions(props: { sessionId: string; text: string; setText: (text: string) => void }) {
  useSlots()
  return (
    <>
      {[...slots.composer.values()].map(({ owner, value: action }) => (
        <SlotBoundary key={action.id} owner={owner} slot={`composer ${action.id}`}>
          <button
            type="button"
            class="composer-action"
            data-action={action.id}
            title={action.title}
            onClick={() => {
              try {
                void Promise.resolve(action.run({ ...props })).catch(failed)
              } catch (error) {
                failed(error)
              }
            }}
          >
            {action.label}
          </button>
        </SlotBoundary>
      ))}
    </>
  )
}

function Composer({ projection }: { projection: SessionProjection }) {
  const [text, setText] = useState('')
  const [output, setOutput] = useState('')
  const [files, setFiles] = useState<PendingFile[]>([])
  const [dragging, setDragging] = useState(false)
  showCommand = setOutput
  const running = projection.status === 'running'
  const send = (kind: 'prompt' | 'steer') => {
    const value = text.trim()
    if (!value && files.length === 0) return
    setText('')
    setOutput('')
    setFiles([])
    submit(projection.sessionId, kind, value || 'See the attached files.', files)
  }
  const add = (list: FileList | File[] | null | undefined) => {
    const picked = [...(list ?? [])]
    if (picked.length === 0) return
    void Promise.all(picked.map(readFile))
      .then((read) => setFiles((current) => [...current, ...read]))
      .catch(failed)
  }
  return (
    <>
      {output ? (
        <button type="button" class="command-output" title="dismiss" onClick={() => setOutput('')}>
          {output}
        </button>
      ) : null}
      <form
        class={dragging ? 'composer dragging' : 'composer'}
        onSubmit={(e) => {
          e.preventDefault()
          send(running ? 'steer' : 'prompt')
        }}
        onDragOver={(e) => {
          e.preventDefault()
          setDragging(true)
        }}
        onDragLeave={() => setDragging(false)}
        onDrop={(e) => {
          e.preventDefault()
          setDragging(false)
          add(e.dataTransfer?.files)
        }}
      >
        {files.length > 0 ? (
          <ul class="attachments" aria-label="attachments">
            {files.map((file, index) => (
              <li key={`${file.name}-${index}`} class="attachment">
                {file.preview ? <img class="thumb" src={file.preview} alt={file.name} /> : null}
                <span class="name">{file.name}</span>
                <button
                  type="button"
                  class="remove"
                  aria-label={`remove ${file.name}`}
                  onClick={() => setFiles((current) => current.filter((_, i) => i !== index))}
                >
                  ×
                </button>
              </li>
            ))}
          </ul>
        ) : null}
        <textarea
          value={text}
          aria-label="message"
          placeholder={
            running ? 'Steer the running turn, or queue a follow-up' : 'Ask dsh (drop or paste files to attach)'
          }
          onPaste={(e) => {
            const pasted = e.clipboardData?.files
            if (pasted && pasted.length > 0) {
              e.preventDefault()
              add(pasted)
            }
          }}
          onInput={(e) => setText(e.currentTarget.value)}
          onKeyDown={(e) => {
            if (e.key === 'Enter' && !e.shiftKey) {
              e.preventDefault()
              send(running ? 'steer' : 'prompt')
            }
          }}
        />
        <div class="actions">
          <ComposerActions sessionId={projection.sessionId} text={text} setText={setText} />
          <label class="attach">
            Attach
            <input
              type="file"
              multiple
              aria-label="attach files"
              onChange={(e) => {
                add(e.currentTarget.files)
                e.currentTarget.value = ''
              }}
            />
          </label>
          {running ? (
            <>
              <button type="submit" class="steer">
                Steer
              </button>
              <button type="button" class="queue-followup" onClick={() => send('prompt')}>
                Queue
              </button>
              <button
                type="button"
                class="cancel"
                onClick={() => void api('POST', `/api/sessions/${projection.sessionId}/cancel`).catch(failed)}
              >
                Cancel
              </button>
            </>
          ) : (
            <button type="submit" class="send">
              Send
            </button>
          )}
        </div>
      </form>
    </>
  )
}

function SessionView({ sessionId }: { sessionId: string }) {
  const projection = useSession(sessionId)
  return (
    <main class="session" data-status={projection.status}>
      <header class="session-head">
        <span class="cwd">{projection.header?.cwd ?? ''}</span>
        <span class={`status ${projection.status}`}>{projection.status}</span>
        {projection.preset && (
          <span class="preset" data-preset={projection.preset} title="agent preset (fixed once the session has a turn)">
            {projection.preset}
          </span>
        )}
        <ModePicker projection={projection} />
        <ModelPicker projection={projection} />
        <Meter projection={projection} />
        <HeaderBadges sessionId={sessionId} />
        <SessionActions
          sessionId={sessionId}
          title={useHost().sessions.find((row) => row.sessionId === sessionId)?.title}
          failed={failed}
        />
        <span class="id">{sessionId}</span>
      </header>
      <SessionLease sessionId={sessionId} />
      <Conversation projection={projection} />
      <Todos projection={projection} />
      <Jobs sessionId={sessionId} jobs={projection.jobs} failed={failed} />
      <Queue projection={projection} />
      <Composer projection={projection} />
    </main>
  )
}

/** Whether another host holds the open session (its own component: host list changes re-render only it). */
function SessionLease({ sessionId }: { sessionId: string }) {
  const row = useHost().sessions.find((session) => session.sessionId === sessionId)
  return <LeaseNotice row={row} failed={failed} />
}

function SettingsPage() {
  const state = useHost()
  return (
    <Settings
      presets={state.presets}
      failed={failed}
      onSaved={(key, value) => {
        // New sessions that pick no preset get the new default: show it in the new-session form.
        if (key === 'preset' && typeof value === 'string') state.defaultPreset = value
        state.changed()
      }}
    >
      <SettingsSections />
    </Settings>
  )
}

/** Settings sections of client modules, after the page's own. */
function SettingsSections() {
  useSlots()
  return (
    <>
      {[...slots.settings.values()].map((entry) => (
        <section key={entry.value.id} class="settings-section" data-section={entry.value.id}>
          <h2>{entry.value.title}</h2>
          <InSlot
            entry={{ owner: entry.owner, value: entry.value.render }}
            slot={`settings ${entry.value.id}`}
            props={{}}
          />
        </section>
      ))}
    </>
  )
}

/** A refused edit of a watched patch file: the host kept the last good configuration. */
function ConfigBanner() {
  const { config } = useHost()
  if (!config || config.ok) return null
  return (
    <div class="config-banner" role="alert">
      <strong>Configuration change rejected; the last good configuration is still running.</strong>
      <button
        type="button"
        onClick={() => {
          host.config = undefined
          host.changed()
        }}
      >
        Dismiss
      </button>
      <pre>{config.error}</pre>
    </div>
  )
}

/** What the keyboard shortcuts do, for the open session (if any). */
function shortcutActions(sessionId: string | undefined): ShortcutActions {
  return {
    newSession: () => document.getElementById('new-session')?.click(),
    focusComposer: () => document.querySelector<HTMLTextAreaElement>('textarea[aria-label=message]')?.focus(),
    focusSearch: () => document.getElementById('full-search')?.focus(),
    cancel: () => {
      const projection = sessionId ? projections.get(sessionId) : undefined
      if (projection?.status !== 'running') return false
      void api('POST', `/api/sessions/${projection.sessionId}/cancel`).catch(failed)
      return true
    },
    answerApproval: (decision) => {
      const pending = [...host.approvals.values()].find((approval) => approval.sessionId === sessionId)
      if (!pending) return false
      void api('POST', `/api/approvals/${encodeURIComponent(pending.requestId)}`, { decision }).catch(failed)
      return true
    },
  }
}

function App() {
  const route = useRoute()
  const [error, setError] = useState('')
  reportError = setError
  const session = /^#\/s\/([A-Za-z0-9_.-]+)/.exec(route)?.[1]
  useShortcuts(useMemo(() => shortcutActions(session), [session]))
  return (
    <div class="app">
      <ConfigBanner />
      <NavToggle />
      <Sidebar current={session} />
      {session ? (
        <SessionView key={session} sessionId={session} />
      ) : route === '#/settings' ? (
        <SettingsPage />
      ) : (
        <main class="empty">Open a session, or start a new one.</main>
      )}
      {error ? (
        <button type="button" class="toast" onClick={() => setError('')}>
          {error}
        </button>
      ) : null}
    </div>
  )
}

render(<App />, document.getElementById('app') as HTMLElement)
