// @dsh/surfaces/tui: the interactive terminal, `dsh` with no subcommand. An inline chat: the transcript
// is printed into the terminal's own scrollback and a live region at the bottom holds the running turn,
// pending approvals, the editor and a footer. The seam `ctx.tui` runs one chat; the row
// `@dsh/surfaces/tui/chat` does it on a `SessionHost`, like every other surface.
import { Service } from '@dsh/kernel'
import type { LlmCallConfig } from '@dsh/llm'
import type { ChatScreen } from './screen.js'

declare module 'cordis' {
  interface Context {
    tui: TerminalChat
  }
}

export interface ChatRequest {
  /** Working directory of a new session, and the directory `continue` and the picker look in. */
  cwd: string
  model?: Partial<LlmCallConfig>
  /** Resume this durable session. */
  resume?: string
  /** Let the person pick one of the recent sessions of `cwd` before the chat opens. */
  pick?: boolean
  /** Resume the most recently updated session of `cwd`. */
  continue?: boolean
  /**
   * The agent preset (`@dsh/presets`) of a new session; a resumed session keeps its own, and naming
   * another once it has turns is refused (`PRESET_LOCKED`).
   */
  preset?: string
  /** Permission mode of the session (recorded as `sandbox/mode`). */
  permissionMode?: string
  /** Sent as the first message once the chat is open. */
  prompt?: string
  /** A screen the caller opened before boot (`@dsh/surfaces/tui/screen`); default: one opened here. */
  screen?: ChatScreen
  /** Colours off (`NO_COLOR`), for a screen opened here. */
  noColor?: boolean
  /** Aborting closes the chat as if the person had exited (SIGTERM). */
  signal?: AbortSignal
}

export interface ChatResult {
  /** The session the chat ended on (undefined when the person left the picker without choosing). */
  sessionId?: string
  /** Whether the session's events were made durable. */
  durable: boolean
}

export type { ChatScreen }

/** The `ctx.tui` seam: runs one interactive chat until the person leaves it. */
export abstract class TerminalChat extends Service {
  /** Resolves when the chat is closed and its session flushed. Throws HarnessError for setup errors. */
  abstract run(request: ChatRequest): Promise<ChatResult>
}
