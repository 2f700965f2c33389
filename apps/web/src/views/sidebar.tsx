// The session list: a new-session form, title and full-text search, the sessions, the running agents, workspaces, the
// sidebar items of client modules and the keyboard shortcuts.

import type { SessionSummary } from '@dsh/surfaces/wire'
import { useState } from 'preact/hooks'
import { Agents } from '../agents'
import { api } from '../connection'
import { failed, useHost } from '../host-state'
import { LeaseBadge } from '../lease'
import { SessionSearch } from '../search'
import { SHORTCUTS } from '../shortcuts'
import { InSlot, slots, useSlots } from '../slots'
import { Workspaces } from '../workspaces'

export function Sidebar({ current }: { current: string | undefined }) {
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
                {row.cwd} ·{' '}
                {row.messageCount !== undefined
                  ? `${row.messageCount} message${row.messageCount === 1 ? '' : 's'}`
                  : `${row.eventCount} events`}
                {row.parentSessionId ? ' · fork' : ''}
              </span>
            </a>
          </li>
        ))}
      </ul>
      <Agents failed={failed} />
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
