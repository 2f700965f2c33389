// The web wire of one listening host: the session host (@dsh/surfaces/host) does the session work;
// this maps it onto the two downlink streams and their frames. Every stream starts with a baseline
// taken in the same tick as the subscription, so a client converges without gaps or duplicates.
import type { InboxState } from '@dsh/agent'
import type {} from '@dsh/composition'
import type { Context } from '@dsh/kernel'
import { SessionHost } from '../host/index.js'
import { pendingApproval, pendingQuestion } from '../wire/pending.js'
import type { SessionSummary } from '../wire/types.js'
import type { ClientModules } from './client-modules.js'
import type { ConfigNotice, EventEnvelope, HostFrame, InboxView, JobView, SessionFrame } from './protocol.js'

/** One downlink socket as the state sees it. */
export interface Downlink {
  send(frame: string): void
  /** Closes the socket (e.g. the client fell too far behind and must reconnect with `since`). */
  drop(reason: string): void
  readonly buffered: number
}

/** A subscriber further behind than this many bytes is dropped; it reconnects from its last seq. */
const MAX_BUFFERED = 32 * 1024 * 1024

export class WebStreams {
  readonly host: SessionHost
  private readonly hostLinks = new Set<Downlink>()
  private readonly sessionLinks = new Map<string, Set<Downlink>>()
  private listTimer: NodeJS.Timeout | undefined
  private listRuns = 0
  /** Re-reads the list of a store other hosts write too (see `SessionHost.sharedStore`). */
  private refreshTimer: NodeJS.Timeout | undefined
  /** The list last broadcast, so an unchanged re-read sends nothing. */
  private lastList = ''
  private readonly log: (line: string) => void
  /** The last config report, replayed in every host baseline so a page opened later shows it too. */
  private config: ConfigNotice | undefined
  private readonly stopConfig: () => void
  private readonly stopModules: () => void

  constructor(
    ctx: Context,
    defaultCwd: string | undefined,
    log: (line: string) => void,
    readonly clientModules: ClientModules,
    /** How often the list of a shared store is re-read while a page is open. */
    private readonly listRefreshMs = 2000,
  ) {
    this.host = new SessionHost(ctx, {
      name: 'the web host',
      closeReason: 'the web host is shutting down',
      ...(defaultCwd ? { cwd: defaultCwd } : {}),
      log,
      on: {
        approvalRequested: (pending) =>
          this.broadcastHost({ type: 'approval/requested', approval: pendingApproval(pending) }),
        approvalSettled: (requestId, answer) =>
          this.broadcastHost({ type: 'approval/settled', requestId, decision: answer.decision }),
        questionRequested: (pending) =>
          this.broadcastHost({ type: 'question/requested', question: pendingQuestion(pending) }),
        questionSettled: (questionId, answer) =>
          this.broadcastHost({ type: 'question/settled', questionId, status: answer.status }),
        stateChanged: (sessionId) => this.pushState(sessionId),
        listChanged: () => this.scheduleList(),
      },
    })
    this.log = log
    this.stopConfig = ctx.on('config/changed', (report) => {
      const config: ConfigNotice = report.ok
        ? { ok: true, added: report.added, removed: report.removed }
        : { ok: false, error: report.error }
      this.config = config
      this.broadcastHost({ type: 'host/config', config })
    })
    this.stopModules = clientModules.onChange((modules) => this.broadcastHost({ type: 'host/client-modules', modules }))
  }

  async list(): Promise<SessionSummary[]> {
    return this.host.list()
  }

  jobsOf(sessionId: string): JobView[] {
    return this.host.jobsOf(sessionId).map((job) => ({
      id: job.id,
      title: job.title,
      status: job.status,
      ...(job.summary ? { summary: job.summary } : {}),
      startedAt: job.startedAt,
    }))
  }

  inboxOf(sessionId: string): InboxView {
    const inbox = this.host.inboxOf(sessionId)
    return inbox ? inboxView(inbox) : { 'next-step': [], 'next-turn': [] }
  }

  /** The session's permission mode and agent preset, each when the profile has the row for it. */
  private modeField(sessionId: string): { mode?: string; preset?: string } {
    const mode = this.host.modeOf(sessionId)
    const preset = this.host.presetOf(sessionId)
    return { ...(mode === undefined ? {} : { mode }), ...(preset === undefined ? {} : { preset }) }
  }

  // ---- streams ----

  /** Subscribes a host stream: the baseline (session list, pending approvals) first, then changes. */
  async subscribeHost(link: Downlink): Promise<() => void> {
    const sessions = await this.list()
    this.hostLinks.add(link)
    // The new page has the newest list; the next read is sent to every page whatever it holds.
    this.lastList = ''
    this.sendHost(link, {
      type: 'host/baseline',
      sessions,
      approvals: this.host.approvals().map(pendingApproval),
      questions: this.host.questions().map(pendingQuestion),
      modes: this.host.modes(),
      presets: await this.host.presets(),
      ...(this.host.defaultPreset() === undefined ? {} : { defaultPreset: this.host.defaultPreset() }),
      defaultCwd: this.host.cwd,
      ...(this.config ? { config: this.config } : {}),
      clientModules: this.clientModules.manifest(),
    })
    if (this.host.sharedStore && !this.refreshTimer && this.listRefreshMs > 0) {
      this.refreshTimer = setInterval(() => this.scheduleList(), this.listRefreshMs)
      this.refreshTimer.unref()
    }
    return () => {
      this.hostLinks.delete(link)
      if (this.hostLinks.size === 0) this.stopRefresh()
    }
  }

  private stopRefresh(): void {
    if (this.refreshTimer) clearInterval(this.refreshTimer)
    this.refreshTimer = undefined
  }

  /** Subscribes a session stream from `since` (see `SessionHost.subscribe`). */
  async subscribeSession(sessionId: string, since: number, link: Downlink): Promise<() => void> {
    let dropped = false
    // Events committed before the baseline frame is written wait for it (the baseline is cut earlier).
    let early: EventEnvelope[] | undefined = []
    const send = (event: EventEnvelope) => {
      if (dropped) return
      if (link.buffered > MAX_BUFFERED) {
        dropped = true
        link.drop('the client fell behind; reconnect with since')
        return
      }
      link.send(JSON.stringify({ type: 'session/event', event } satisfies SessionFrame))
    }
    const subscription = await this.host.subscribe(sessionId, since, (event) => {
      if (early) early.push(event as EventEnvelope)
      else send(event as EventEnvelope)
    })
    const header = subscription.header
    const frame: SessionFrame = {
      type: 'session/baseline',
      header: {
        id: header.id,
        cwd: header.cwd,
        createdAt: header.createdAt,
        ...(header.parentSession ? { parentSession: header.parentSession } : {}),
        ...(header.seedLength !== undefined ? { seedLength: header.seedLength } : {}),
      },
      since: subscription.since,
      events: subscription.events as EventEnvelope[],
      status: this.host.statusOf(sessionId),
      inbox: this.inboxOf(sessionId),
      ...this.modeField(sessionId),
      jobs: this.jobsOf(sessionId),
    }
    const links = this.sessionLinks.get(sessionId) ?? new Set<Downlink>()
    this.sessionLinks.set(sessionId, links)
    links.add(link)
    link.send(JSON.stringify(frame))
    for (const event of early) send(event)
    early = undefined
    return () => {
      subscription.dispose()
      links.delete(link)
      if (links.size === 0 && this.sessionLinks.get(sessionId) === links) this.sessionLinks.delete(sessionId)
    }
  }

  private pushState(sessionId: string): void {
    const links = this.sessionLinks.get(sessionId)
    if (!links?.size) return
    const frame = JSON.stringify({
      type: 'session/state',
      status: this.host.statusOf(sessionId),
      inbox: this.inboxOf(sessionId),
      ...this.modeField(sessionId),
      jobs: this.jobsOf(sessionId),
    } satisfies SessionFrame)
    for (const link of links) link.send(frame)
  }

  private scheduleList(): void {
    if (this.listTimer || this.host.closed || this.hostLinks.size === 0) return
    this.listTimer = setTimeout(() => {
      this.listTimer = undefined
      // Reads of the store can finish out of order: only the newest list is sent.
      const run = ++this.listRuns
      void this.list()
        .then((sessions) => {
          const json = JSON.stringify(sessions)
          if (run !== this.listRuns || json === this.lastList) return
          this.lastList = json
          this.broadcastHost({ type: 'host/sessions', sessions })
        })
        .catch((error) => this.log(`session list failed: ${String(error)}`))
    }, 50)
  }

  /** Sends a frame to every host stream (also used for host-wide notices such as a config change). */
  broadcastHost(frame: HostFrame): void {
    for (const link of this.hostLinks) this.sendHost(link, frame)
  }

  private sendHost(link: Downlink, frame: HostFrame): void {
    link.send(JSON.stringify(frame))
  }

  /** Cancels pending questions, disposes the agents, flushes and closes their sessions. Idempotent. */
  close(): Promise<void> {
    if (this.listTimer) clearTimeout(this.listTimer)
    this.stopRefresh()
    this.stopConfig()
    this.stopModules()
    return this.host.close()
  }
}

function inboxView(state: InboxState): InboxView {
  const items = (queue: InboxState['next-turn']) =>
    queue.map((item) => ({
      id: item.id,
      kind: item.kind,
      text: item.message.content.map((block) => (block.type === 'text' ? block.text : '[image]')).join(''),
    }))
  return { 'next-step': items(state['next-step']), 'next-turn': items(state['next-turn']) }
}
