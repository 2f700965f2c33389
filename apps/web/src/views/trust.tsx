// The folder-trust banner: when the host's folder has configuration that can run code or reach the
// network (.mcp.json, hooks, presets with rows) and it is not trusted as it is now, the page says
// what it would enable and lets the person trust it. Nothing of it loaded before they do.
import type { FolderTrustView } from '@dsh/surfaces/wire'
import { useEffect, useState } from 'preact/hooks'
import { api } from '../connection'
import { failed } from '../host-state'

export function TrustBanner() {
  const [view, setView] = useState<FolderTrustView | undefined>()
  const [granted, setGranted] = useState(false)
  useEffect(() => {
    api<FolderTrustView>('GET', '/api/trust').then(setView, () => {})
  }, [])
  const pending = view?.items.filter((item) => !item.admitted) ?? []
  if (granted)
    return (
      <div class="config-banner trust-banner" role="status">
        <strong>Trusted {view?.folder}.</strong> Presets and settings apply to new sessions now; restart dsh web to
        start its MCP servers and hooks.
        <button type="button" onClick={() => setGranted(false)}>
          Dismiss
        </button>
      </div>
    )
  if (!view || pending.length === 0) return null
  const trust = () =>
    api<FolderTrustView>('POST', '/api/trust', {}).then((next) => {
      setView(next)
      setGranted(true)
    }, failed)
  return (
    <div class="config-banner trust-banner" role="alert">
      <strong>
        {view.folder} has configuration that can run code or reach the network, and it is not trusted
        {view.trusted ? ' as it is now' : ''}. None of it is loaded:
      </strong>
      <ul>
        {pending.map((item) => (
          <li key={item.path}>
            <code>{item.path}</code>: {item.summary}
          </li>
        ))}
      </ul>
      <button type="button" onClick={trust}>
        Trust this folder
      </button>
    </div>
  )
}
