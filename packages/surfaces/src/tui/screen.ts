// The chat's screen, openable before the plugin tree boots: the CLI paints the editor at once, the
// person can type while dsh starts, and `ctx.tui.run({ screen })` takes the screen over. Lines sent
// before the chat is ready are kept and sent, in order, once it is. Not a provider: only pi-tui.
import { writeFileSync } from 'node:fs'
import { Editor, matchesKey, ProcessTerminal, TUI } from '@mariozechner/pi-tui'
import { Lines } from './live.js'
import { createTheme, type Theme } from './theme.js'

export interface ChatScreen {
  readonly tui: TUI
  readonly editor: Editor
  readonly theme: Theme
  /** Lines submitted before the chat took the screen over. */
  readonly early: string[]
  /** Whether the person asked to leave (Ctrl-C twice, Ctrl-D) before the chat was ready. */
  readonly leaving: boolean
  /** Hands the screen to the chat: the start-up footer and key handling go away (see `release`). */
  adopt(): void
  /** The chat takes the editor: lines typed until now are in `early`; the pending view goes. */
  release(): void
  /** Restores the terminal. Idempotent. */
  stop(): void
}

/**
 * `DSH_TUI_FRAMES=FILE` (for bench/tui.mjs): each frame as `<epoch ms> <ms to render and write it>`, one
 * per line, written to FILE when the process exits. Timed around pi-tui's render pass, which is not public
 * API: if a pi-tui release renames it, nothing is recorded and the bench says so.
 */
function recordFrames(tui: TUI, file: string): void {
  const target = tui as unknown as { doRender?: () => void }
  const render = target.doRender
  if (typeof render !== 'function') return
  const frames: string[] = []
  target.doRender = function timedRender(this: unknown) {
    const at = Date.now()
    const started = performance.now()
    render.call(this)
    frames.push(`${at} ${(performance.now() - started).toFixed(3)}`)
  }
  process.once('exit', () => writeFileSync(file, frames.join('\n')))
}

export function openScreen(noColor: boolean): ChatScreen {
  const theme = createTheme(noColor)
  const tui = new TUI(new ProcessTerminal())
  if (process.env.DSH_TUI_FRAMES) recordFrames(tui, process.env.DSH_TUI_FRAMES)
  const editor = new Editor(tui, theme.editor, { paddingX: 1 })
  const early: string[] = []
  let leaving = false
  let stopped = false
  const pending = new Lines(() => early.map((line) => theme.dim(`› ${line} (sent when dsh is ready)`)))
  const footer = new Lines(() => [theme.dim('starting dsh…')])
  editor.onSubmit = (text) => {
    if (!text.trim()) return
    editor.addToHistory(text.trim())
    early.push(text.trim())
    tui.requestRender()
  }
  const stopKeys = tui.addInputListener((data) => {
    if (matchesKey(data, 'ctrl+d') || matchesKey(data, 'ctrl+c')) {
      leaving = true
      return { consume: true }
    }
    return undefined
  })
  tui.addChild(pending)
  tui.addChild(editor)
  tui.addChild(footer)
  tui.setFocus(editor)
  tui.start()
  return {
    tui,
    editor,
    theme,
    early,
    get leaving() {
      return leaving
    },
    adopt() {
      stopKeys()
      // Lines entered while the session attaches still go to `early` (shown as pending) until the chat
      // sets its own submit handler: clearing it here dropped them.
      tui.removeChild(footer)
    },
    release() {
      tui.removeChild(pending)
    },
    stop() {
      if (stopped) return
      stopped = true
      tui.stop()
    },
  }
}
