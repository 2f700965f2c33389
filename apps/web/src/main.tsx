// The dsh browser client: session list, one open conversation, composer, settings. The host owns
// every entity; this page keeps projections fed by the downlink streams and sends unary calls.
import { render } from 'preact'
import { useMemo, useState } from 'preact/hooks'
import { api, exportedSession } from './connection'
import { failed, host, showErrorsWith, useRoute } from './host-state'
import { NavToggle } from './layout'
import { projections } from './session-stream'
import './subagent-view'
import { type ShortcutActions, useShortcuts } from './shortcuts'
import { CompareView } from './views/compare'
import { ExportedView } from './views/exported'
import { SessionView } from './views/session'
import { ConfigBanner, SettingsPage } from './views/settings'
import { Sidebar } from './views/sidebar'
import { StepsView } from './views/steps'
import { TrustBanner } from './views/trust'
import './style.css'

/**
 * Alt+N: creates a session, or, pressed before the host's baseline says where sessions start (the
 * button is still disabled), as soon as it does; a press is never lost to the page still loading.
 */
function newSession(): void {
  const deadline = Date.now() + 10_000
  const attempt = () => {
    const button = document.getElementById('new-session') as HTMLButtonElement | null
    if (button && !button.disabled) button.click()
    else if (Date.now() < deadline) setTimeout(attempt, 50)
  }
  attempt()
}

/** What the keyboard shortcuts do, for the open session (if any). */
function shortcutActions(sessionId: string | undefined): ShortcutActions {
  return {
    newSession,
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
  showErrorsWith(setError)
  const session = /^#\/s\/([A-Za-z0-9_.-]+)/.exec(route)?.[1]
  const stepping = /^#\/steps\/([A-Za-z0-9_.-]+)/.exec(route)?.[1]
  const comparing = /^#\/compare\/([A-Za-z0-9_.-]+)/.exec(route)?.[1]
  useShortcuts(useMemo(() => shortcutActions(session), [session]))
  return (
    <div class="app">
      <ConfigBanner />
      <TrustBanner />
      <NavToggle />
      <Sidebar current={session} />
      {session ? (
        <SessionView key={session} sessionId={session} />
      ) : stepping ? (
        <StepsView key={stepping} sessionId={stepping} />
      ) : comparing ? (
        <CompareView key={comparing} sessionId={comparing} />
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

const exported = exportedSession()
render(exported ? <ExportedView data={exported} /> : <App />, document.getElementById('app') as HTMLElement)
