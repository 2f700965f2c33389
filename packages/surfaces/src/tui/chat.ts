// The terminal chat row: `ctx.tui.run()` opens a session on a `SessionHost` (new, `--resume ID`,
// `--continue`, or picked from a list), renders it inline with pi-tui, and closes the host (cancel,
// flush, release) however the chat ends.
import type { Agent } from '@dsh/agent'
import { type Context, HarnessError } from '@dsh/kernel'
import type {} from '@dsh/session/store/coordinator'
import type {} from '@dsh/world/sandbox'
import { SessionHost } from '../host/index.js'
import { Conversation } from './conversation.js'
import { type ChatRequest, type ChatResult, TerminalChat } from './index.js'
import { pickSession } from './picker.js'
import { type ChatScreen, openScreen } from './screen.js'

const BELL = '\x07'

export class TerminalChatService extends TerminalChat {
  static readonly provide = 'tui'
  static readonly inject = ['agents', 'sessions']

  constructor(ctx: Context) {
    super(ctx, 'tui')
  }

  async run(request: ChatRequest): Promise<ChatResult> {
    const screen = request.screen ?? openScreen(Boolean(request.noColor))
    let conversation: Conversation | undefined
    const host = new SessionHost(this.ctx, {
      name: 'the terminal chat',
      closeReason: 'the terminal chat closed',
      cwd: request.cwd,
      on: {
        // A question the session's grants cover never gets here: the approval service answers it.
        // The bell calls a person who looked away (terminals flash or beep, as they are set up to).
        approvalRequested: () => {
          screen.tui.terminal.write(BELL)
          conversation?.changed()
        },
        approvalSettled: () => conversation?.changed(),
        questionRequested: () => {
          screen.tui.terminal.write(BELL)
          conversation?.changed()
        },
        questionSettled: () => conversation?.changed(),
        stateChanged: () => conversation?.changed(),
      },
    })
    try {
      if (screen.leaving) return { durable: false }
      screen.adopt()
      let agent = await this.attach(host, screen, request)
      if (!agent) return { durable: false }
      let notice: string | undefined
      const typedMeanwhile: string[] = []
      for (let first = true; ; first = false) {
        conversation = new Conversation(this.ctx, screen, host, agent)
        if (first) screen.release()
        const view = conversation
        if (request.permissionMode) {
          // The chosen mode is a durable fact of the session (`sandbox/mode`).
          host.setMode(agent.session.id, request.permissionMode)
        }
        if (notice) view.note(notice)
        const subscription = await host.subscribe(agent.session.id, 0, (event) => view.event(event))
        for (const event of subscription.events) view.baseline(event)
        view.measure()
        view.changed()
        const onAbort = () => view.close()
        request.signal?.addEventListener('abort', onAbort, { once: true })
        if (first && request.prompt) await host.prompt(agent.session.id, { text: request.prompt })
        view.sendEarly(first ? screen.early : typedMeanwhile.splice(0))
        await view.done
        const switching = view.next === 'switch' && view.switchTo !== undefined && !request.signal?.aborted
        const renewing = (view.next === 'new-session' || switching) && !request.signal?.aborted
        if (renewing) {
          view.detach()
          // Lines entered while the new session is created go to it, in order.
          screen.editor.onSubmit = (text) => {
            if (text.trim()) typedMeanwhile.push(text.trim())
          }
        }
        request.signal?.removeEventListener('abort', onAbort)
        subscription.dispose()
        // Cancel a running turn first: its end is then part of what is flushed.
        await agent.cancel('the terminal chat closed')
        if (!renewing) {
          return { sessionId: agent.session.id, durable: await this.ctx.sessions.flush(agent.session) }
        }
        const previous = agent
        const durable = await this.ctx.sessions.flush(previous.session)
        if (switching && view.switchTo) {
          // A conversation rewind: the fork before the message is attached already; the message comes
          // back into the editor to be edited and sent again.
          agent = host.agent(view.switchTo.sessionId)
          await host.release(previous.session.id)
          notice = `rewound: this is session ${agent.session.id}, the conversation before that message; the previous one stays resumable: dsh --resume ${previous.session.id}`
          screen.editor.setText(view.switchTo.text)
          continue
        }
        // /new or /clear: a fresh session in the same workspace, with the same model and preset; the
        // old one is flushed and let go (it stays resumable).
        agent = await host.create({
          model: { ...previous.model },
          ...(previous.preset ? { preset: previous.preset } : {}),
          cwd: previous.session.header.cwd,
        })
        await host.release(previous.session.id)
        notice = durable
          ? `new session ${agent.session.id}; the previous one stays resumable: dsh --resume ${previous.session.id}`
          : `new session ${agent.session.id} (the previous one was not saved: no persistence row)`
      }
    } finally {
      conversation?.close()
      screen.stop()
      await host.close()
    }
  }

  /** The session the chat opens: a fresh one, the one named, the latest of the directory, or a picked one. */
  private async attach(host: SessionHost, screen: ChatScreen, request: ChatRequest): Promise<Agent | undefined> {
    const options = {
      ...(request.model ? { model: request.model } : {}),
      ...(request.preset ? { preset: request.preset } : {}),
    }
    if (!request.resume && !request.continue && !request.pick) return host.create({ ...options, cwd: request.cwd })
    // Without persistence the host's resume says so (NO_PERSISTENCE).
    let id = request.resume
    if (!id) {
      const sessions = (await host.list()).filter((session) => session.cwd === request.cwd)
      if (sessions.length === 0) {
        throw new HarnessError('SESSION_NOT_FOUND', `no session to resume in ${request.cwd}; start one with dsh`, {
          cwd: request.cwd,
        })
      }
      id = request.continue ? sessions[0]?.sessionId : await pickSession(screen, sessions)
      if (!id) return undefined
    }
    return host.resume(id, options)
  }
}

export default TerminalChatService
