// The narrow layout (a phone): the session list is a panel behind a toggle instead of a column. The
// state is a data attribute on <body>, so the sidebar and the rest of the page need no props for it;
// the panel closes when a session or page is opened (decision 367).
import { useEffect, useState } from 'preact/hooks'
import './views.css'

export function NavToggle() {
  const [open, setOpen] = useState(false)
  useEffect(() => {
    document.body.dataset.nav = open ? 'open' : 'closed'
  }, [open])
  useEffect(() => {
    const close = () => setOpen(false)
    addEventListener('hashchange', close)
    return () => removeEventListener('hashchange', close)
  }, [])
  return (
    <button
      type="button"
      class="nav-toggle"
      aria-label={open ? 'close the session list' : 'open the session list'}
      aria-expanded={open}
      aria-controls="sidebar"
      onClick={() => setOpen(!open)}
    >
      <span aria-hidden="true">{open ? '✕' : '☰'}</span>
    </button>
  )
}
