// The in-process child both providers share: a scope inside the parent agent's scope holding a durable
// child session (a fork of the parent's log: empty for spawn, the last closed turn for fork), an agent
// over it, and the child's composition: its preset (the requested one, else the parent's), its tool
// restrictions (the parent's, then the launch filter: a child never sees a tool its parent cannot use),
// its permission mode and network bound by the parent's (a preset may narrow them, never widen them),
// the persona section, approval policy `never`.
import { type Agent, foldInbox, type InboxSplice } from '@dsh/agent'
import type {} from '@dsh/agent/approval'
import type {} from '@dsh/agent/system-prompt'
import type {} from '@dsh/agent/tools'
import { type Context, HarnessError } from '@dsh/kernel'
import type { Session } from '@dsh/session'
import type {} from '@dsh/world/sandbox'
import { type ChildRunResult, outcomeOf, type SubagentChild, type SubagentLaunch } from './index.js'

/**
 * Where the child's log starts: `fresh` (no parent facts), `fork` (the parent's last closed turn), or
 * `{ resume }`: the child's own durable session, cold-resumed (reopening a continuable child).
 */
export type ChildSeed = 'fresh' | 'fork' | { resume: string }

/** The part of `ctx.sessionPersistence` a reopen needs (optional: without it nothing is durable). */
interface PersistenceLike {
  resume(id: string): Promise<Session>
}

/** The seq of the parent's last `turn/end` (the end of its last closed turn), or -1 for none. */
export function lastClosedTurn(session: Session): number {
  const events = session.events
  for (let seq = events.length - 1; seq >= 0; seq--) if (events[seq]?.type === 'turn/end') return seq
  return -1
}

function finalText(events: Session['events'], from: number): string {
  for (let seq = events.length - 1; seq >= from; seq--) {
    const event = events[seq]
    if (event?.type !== 'assistant/message') continue
    const text = event.data.message.content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('')
    if (text.trim()) return text
  }
  return ''
}

/**
 * Starts an in-process child. Everything lives in one scope under `launch.request.parent.ctx`, so a
 * disposed parent takes its children with it; on failure the scope is disposed before rethrowing.
 */
export async function startInProcess(launch: SubagentLaunch, seed: ChildSeed): Promise<SubagentChild> {
  const { id, request } = launch
  const parent = request.parent
  const fiber = parent.ctx.plugin({
    name: `subagent:${id}`,
    inject: ['sessions', 'agents', 'tools', 'systemPrompt'],
    apply: () => {},
  })
  await fiber
  const ctx: Context = fiber.ctx
  try {
    let session: Session
    if (typeof seed === 'object') {
      const persistence = (ctx.get as (name: string) => unknown)('sessionPersistence') as PersistenceLike | undefined
      if (!persistence) {
        throw new HarnessError('SUBAGENT_NOT_REOPENABLE', 'reopening a subagent needs a session persistence row', {})
      }
      // A session live in this process has a live owner already: never put a second agent on it.
      if (ctx.sessions.get(seed.resume)) {
        throw new HarnessError('SUBAGENT_NOT_REOPENABLE', `session ${seed.resume} is live in this process`, {
          id: seed.resume,
        })
      }
      session = await persistence.resume(seed.resume)
      dropQueued(session)
    } else {
      session = ctx.sessions.fork(
        parent.session,
        seed === 'fresh' ? -1 : lastClosedTurn(parent.session),
        id,
        request.cwd !== undefined ? { cwd: request.cwd } : {},
      )
    }
    compose(ctx, launch, session)
    bound(ctx, session, parent.session)
    // The restrictions go with the agent from its creation: a resumed child never takes a step without them.
    const preset = request.preset ?? parent.preset
    const agent = await ctx.agents.create({
      session,
      id,
      model: { ...parent.model, ...request.model },
      tools: [...parent.toolRestrictions, launch.restriction],
      ...(request.maxSteps !== undefined ? { maxSteps: request.maxSteps } : {}),
      ...(preset !== undefined ? { preset } : {}),
    })
    never(ctx, session)
    return new InProcessChild(ctx, fiber, agent)
  } catch (error) {
    await fiber.dispose()
    throw error
  }
}

/**
 * Input a resumed child still had queued belonged to runs that were closed `interrupted` on resume:
 * it is dropped (logged as an inbox edit), never re-run by the new activation.
 */
function dropQueued(session: Session): void {
  const queues = foldInbox(session.events)
  for (const target of ['next-step', 'next-turn'] as const) {
    const count = queues[target].length
    if (count === 0) continue
    const splice: InboxSplice = { target, start: 0, deleteCount: count, items: [], reason: 'edited' }
    session.append('agent/inbox/spliced', splice)
  }
}

/** The child's persona, registered on its scope so it goes when the child goes. */
function compose(ctx: Context, launch: SubagentLaunch, session: Session): void {
  const { persona } = launch
  ctx.systemPrompt.register({
    name: `subagent-persona:${launch.id}`,
    agentId: launch.id,
    order: 900,
    render: () => persona,
  })
  never(ctx, session)
}

/**
 * A delegated child cannot reach a person: nobody is ever asked on its behalf. Set before the agent is
 * created and again after, because its preset's permission mode (`setMode`) binds an approval policy too.
 */
function never(ctx: Context, session: Session): void {
  const approval = ctx.get('approval')
  if (!approval) return
  ctx.effect(() => {
    approval.setPolicy(session.id, 'never')
    return () => approval.setPolicy(session.id, undefined)
  }, `subagent.approval(${session.id})`)
}

/**
 * The child's permission mode and network never exceed its parent's: bound before the agent exists,
 * so the preset it is created with is clamped (and its log says so), and released with its scope.
 */
function bound(ctx: Context, session: Session, parent: Session): void {
  const policy = ctx.get('sandboxPolicy')
  if (!policy) return
  ctx.effect(() => policy.bind(session.id, parent.id).dispose, `subagent.sandbox(${session.id})`)
}

interface Pending {
  resolve: (result: ChildRunResult) => void
}

class InProcessChild implements SubagentChild {
  readonly childSession: string
  private readonly pending: Pending[] = []
  private turnStart = -1
  private disposing: Promise<void> | undefined

  constructor(
    ctx: Context,
    private readonly fiber: { dispose(): unknown },
    readonly agent: Agent,
  ) {
    this.childSession = agent.session.id
    ctx.sessions.watch((session, event) => {
      if (session !== agent.session) return
      if (event.type === 'turn/start') this.turnStart = event.seq
      if (event.type !== 'turn/end') return
      const data = event.data
      const result: ChildRunResult = {
        outcome: outcomeOf(data.reason),
        reason: data.reason,
        text: finalText(session.events, Math.max(this.turnStart, 0)),
      }
      if (data.message !== undefined) result.message = data.message
      this.pending.shift()?.resolve(result)
    })
  }

  prompt(text: string): Promise<ChildRunResult> {
    if (this.disposing) return Promise.resolve({ outcome: 'cancelled', text: '', message: 'the subagent was closed' })
    const done = new Promise<ChildRunResult>((resolve) => this.pending.push({ resolve }))
    this.agent.followup(text)
    return done
  }

  async cancel(reason: string): Promise<void> {
    // Queued runs that have not started are dropped (each resolves cancelled), then the running one aborts.
    const queued = this.agent.inbox()['next-turn'].length
    const running = this.agent.phase === 'idle' ? 0 : 1
    if (queued > 0 && !this.agent.disposed) this.agent.spliceInbox('next-turn', 0, queued)
    for (const dropped of this.pending.splice(running, queued)) {
      dropped.resolve({ outcome: 'cancelled', text: '', message: `cancelled before it ran: ${reason}` })
    }
    await this.agent.cancel(reason)
  }

  dispose(): Promise<void> {
    this.disposing ??= (async () => {
      if (!this.agent.disposed) await this.cancel('the subagent was closed')
      await this.fiber.dispose()
      for (const left of this.pending.splice(0)) {
        left.resolve({ outcome: 'cancelled', text: '', message: 'the subagent was closed' })
      }
    })()
    return this.disposing
  }
}
