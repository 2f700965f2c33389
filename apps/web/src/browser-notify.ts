// The browser's notifications, when the person allowed them: an approval or a question that waits
// while the page is hidden (another tab, a minimized window) shows a system notification that brings
// the page back to that session. Asked for only by a click (browsers refuse a prompt out of nowhere).

/** Whether this browser can notify, and what the person said so far. */
export function notifyPermission(): NotificationPermission | 'unsupported' {
  return typeof Notification === 'undefined' ? 'unsupported' : Notification.permission
}

export async function askToNotify(): Promise<NotificationPermission | 'unsupported'> {
  if (typeof Notification === 'undefined') return 'unsupported'
  return Notification.requestPermission()
}

/** Notifies when allowed and the page is not in view; a click opens the session. */
export function notifyWaiting(title: string, body: string, sessionId: string | undefined): void {
  if (notifyPermission() !== 'granted' || document.visibilityState === 'visible') return
  try {
    const note = new Notification(title, { body, tag: sessionId ?? title })
    note.onclick = () => {
      window.focus()
      if (sessionId) location.hash = `#/s/${sessionId}`
      note.close()
    }
  } catch {
    // A browser that lists the API but refuses construction (some mobile ones): the page still shows it.
  }
}
