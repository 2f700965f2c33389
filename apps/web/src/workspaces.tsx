// The sidebar's workspace list: the directories sessions ran in, most recent first (`GET
// /api/workspaces`, derived from the sessions' cwd). Starting a session in one is loopback-only, like
// typing a directory: the host says whether this client may, and refuses it otherwise.

import type { WorkspacesView } from '@dsh/surfaces/wire'
import { useEffect, useState } from 'preact/hooks'
import { api } from './connection'

export function Workspaces(props: {
  /** Changes when the session list does (the list is fetched again). */
  version: string
  start: (cwd: string) => void
  failed: (error: unknown) => void
}) {
  const [view, setView] = useState<WorkspacesView | undefined>()
  const { version, failed } = props
  useEffect(() => {
    void api<WorkspacesView>('GET', '/api/workspaces').then(setView).catch(failed)
  }, [version, failed])
  if (!view?.workspaces.length) return null
  return (
    <details class="workspaces" open>
      <summary>Workspaces</summary>
      <ul aria-label="recent workspaces">
        {view.workspaces.map((workspace) => (
          <li key={workspace.cwd} data-cwd={workspace.cwd}>
            <span class="cwd" title={workspace.cwd}>
              {workspace.cwd}
            </span>
            <span class="meta">
              {workspace.sessions} {workspace.sessions === 1 ? 'session' : 'sessions'}
            </span>
            {view.canChoose ? (
              <button
                type="button"
                class="link start-here"
                aria-label={`new session in ${workspace.cwd}`}
                onClick={() => props.start(workspace.cwd)}
              >
                new session here
              </button>
            ) : null}
          </li>
        ))}
      </ul>
      {view.canChoose ? null : <p class="meta">Choosing a directory is loopback-only on this host.</p>}
    </details>
  )
}
