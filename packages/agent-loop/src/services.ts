// The services a turn calls on every step, read without Cordis's per-call tracing proxies (decision
// 351). Each follows its provider through a live config edit; a missing one is asked for the usual way,
// so the error is Cordis's own.
import { type Context, directService, eventsOf } from '@dsh/kernel'

export interface TurnServices {
  events: Context['events']
  sessions(): Context['sessions']
  llm(): Context['llm']
  tools(): Context['tools']
  systemPrompt(): Context['systemPrompt']
}

const byRoot = new WeakMap<Context, TurnServices>()

export function turnServices(root: Context): TurnServices {
  let services = byRoot.get(root)
  if (!services) {
    const sessions = directService(root, 'sessions')
    const llm = directService(root, 'llm')
    const tools = directService(root, 'tools')
    const systemPrompt = directService(root, 'systemPrompt')
    services = {
      events: eventsOf(root),
      sessions: () => sessions() ?? root.sessions,
      llm: () => llm() ?? root.llm,
      tools: () => tools() ?? root.tools,
      systemPrompt: () => systemPrompt() ?? root.systemPrompt,
    }
    byRoot.set(root, services)
  }
  return services
}
