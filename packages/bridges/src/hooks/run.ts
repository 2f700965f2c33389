// Running one command hook: `sh -c` in its own process group with the event JSON on stdin, bounded
// output, a timeout that kills the whole group, and the Claude Code reading of exit code and stdout.
import { spawn } from 'node:child_process'

/** What a hook's JSON stdout may say (Claude Code's common and hook-specific fields). */
export interface HookJsonOutput {
  continue?: boolean
  stopReason?: string
  suppressOutput?: boolean
  systemMessage?: string
  decision?: 'block' | 'approve' | undefined
  reason?: string
  hookSpecificOutput?: {
    hookEventName?: string
    permissionDecision?: 'allow' | 'deny' | 'ask'
    permissionDecisionReason?: string
    additionalContext?: string
    updatedInput?: unknown
  }
}

/** The raw run of one hook. */
export interface HookProcessResult {
  exitCode: number | null
  signal: string | null
  timedOut: boolean
  durationMs: number
  stdout: string
  stderr: string
  /** The parsed stdout when it was a JSON object. */
  json?: HookJsonOutput
  /** Spawn failure (command not runnable). */
  error?: string
}

const KEEP = 64 * 1024

/**
 * Runs `command` with `input` as JSON on stdin. Never throws: failures are in the result. The process
 * group gets SIGTERM at the timeout (or when `signal` aborts) and SIGKILL 500 ms later. `track`
 * registers the child's group so its owner can kill it on dispose.
 */
export function runHook(
  command: string,
  input: object,
  options: {
    cwd: string
    env: NodeJS.ProcessEnv
    timeoutMs: number
    signal?: AbortSignal
    track: (kill: () => void) => () => void
  },
): Promise<HookProcessResult> {
  const started = Date.now()
  return new Promise((resolve) => {
    let stdout = ''
    let stderr = ''
    let timedOut = false
    let settled = false
    const child = spawn('/bin/sh', ['-c', command], {
      cwd: options.cwd,
      env: options.env,
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    const killGroup = (sig: NodeJS.Signals) => {
      if (child.pid === undefined) return
      try {
        process.kill(-child.pid, sig)
      } catch {}
    }
    let hardKill: ReturnType<typeof setTimeout> | undefined
    const terminate = () => {
      killGroup('SIGTERM')
      hardKill ??= setTimeout(() => killGroup('SIGKILL'), 500)
    }
    const untrack = options.track(() => killGroup('SIGKILL'))
    const timer = setTimeout(() => {
      timedOut = true
      terminate()
    }, options.timeoutMs)
    const onAbort = () => terminate()
    options.signal?.addEventListener('abort', onAbort, { once: true })
    const finish = (result: Partial<HookProcessResult> & { exitCode: number | null; signal: string | null }) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      options.signal?.removeEventListener('abort', onAbort)
      untrack()
      // Anything the hook left behind in its group goes too.
      killGroup('SIGKILL')
      if (hardKill) clearTimeout(hardKill)
      let json: HookJsonOutput | undefined
      const trimmed = stdout.trim()
      if (trimmed.startsWith('{')) {
        try {
          const parsed = JSON.parse(trimmed) as unknown
          if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) json = parsed as HookJsonOutput
        } catch {}
      }
      resolve({ timedOut, durationMs: Date.now() - started, stdout, stderr, ...(json ? { json } : {}), ...result })
    }
    child.stdout.on('data', (chunk: Buffer) => {
      if (stdout.length < KEEP) stdout += chunk.toString('utf8')
    })
    child.stderr.on('data', (chunk: Buffer) => {
      if (stderr.length < KEEP) stderr += chunk.toString('utf8')
    })
    child.on('error', (error) => finish({ exitCode: null, signal: null, error: error.message }))
    child.on('close', (code, sig) => finish({ exitCode: code, signal: sig }))
    child.stdin.on('error', () => {})
    child.stdin.end(JSON.stringify(input))
  })
}
