// Keyboard shortcuts of the page. Letters go with Alt (matched on `code`, so layouts and macOS's
// Option characters do not matter) and work while typing; `/` focuses the composer only when the
// focus is not already in a field; Escape cancels a running turn.
import { useEffect } from 'preact/hooks'

export interface ShortcutActions {
  newSession(): void
  focusComposer(): void
  /** Focuses the full-text search over every session. */
  focusSearch(): void
  /** Returns false when nothing is running (the key is then left to the page). */
  cancel(): boolean
  /** Answers the open session's oldest pending approval; false when there is none. */
  answerApproval(decision: 'allowed-once' | 'rejected'): boolean
}

/** What the sidebar lists, so the shortcuts can be found. */
export const SHORTCUTS: Array<[keys: string, what: string]> = [
  ['Alt+N', 'new session'],
  ['/', 'focus the composer'],
  ['Alt+S', 'search all sessions'],
  ['Esc', 'cancel the running turn'],
  ['Alt+A', 'allow the pending tool call once'],
  ['Alt+R', 'reject it'],
]

function typing(target: EventTarget | null): boolean {
  const element = target as HTMLElement | null
  return !!element && (element.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(element.tagName))
}

export function useShortcuts(actions: ShortcutActions): void {
  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      let handled = false
      if (event.altKey && !event.ctrlKey && !event.metaKey) {
        if (event.code === 'KeyN') {
          actions.newSession()
          handled = true
        } else if (event.code === 'KeyS') {
          actions.focusSearch()
          handled = true
        } else if (event.code === 'KeyA') handled = actions.answerApproval('allowed-once')
        else if (event.code === 'KeyR') handled = actions.answerApproval('rejected')
      } else if (event.key === '/' && !event.ctrlKey && !event.metaKey && !typing(event.target)) {
        actions.focusComposer()
        handled = true
      } else if (event.key === 'Escape') handled = actions.cancel()
      if (handled) event.preventDefault()
    }
    addEventListener('keydown', onKey)
    return () => removeEventListener('keydown', onKey)
  }, [actions])
}
