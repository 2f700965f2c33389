// The page of one open session: its header, lease notice, conversation, todos, jobs, queue and composer.
import { failed, useHost } from '../host-state'
import { Jobs } from '../jobs-view'
import { LeaseNotice } from '../lease'
import type { SessionProjection } from '../projection'
import { useSession } from '../session-stream'
import { Composer, Queue } from './composer'
import { Conversation } from './conversation'
import { SessionHead } from './header'

export function SessionView({ sessionId }: { sessionId: string }) {
  const projection = useSession(sessionId)
  return (
    <main class="session" data-status={projection.status}>
      <SessionHead projection={projection} />
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
