// Child processes as tests see them from outside.

/** True while a process with `pid` exists (signal 0 probes without sending anything). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** How a child process ended, with everything it printed. */
export interface ChildExit {
  code: number | null
  stdout: string
  stderr: string
}

/** A child's output so far (piped stdout and stderr), and its exit with all of it. */
export interface WatchedChild {
  exited: Promise<ChildExit>
  stdout(): string
  stderr(): string
}

/** Collects a spawned child's stdout and stderr while it runs; `exited` resolves when it closes. */
export function watchOutput(proc: import('node:child_process').ChildProcess): WatchedChild {
  let stdout = ''
  let stderr = ''
  proc.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk
  })
  proc.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk
  })
  const exited = new Promise<ChildExit>((resolve) => proc.on('close', (code) => resolve({ code, stdout, stderr })))
  return { exited, stdout: () => stdout, stderr: () => stderr }
}

/** Collects a spawned child's stdout and stderr (piped) and resolves when it closes. */
export function collectExit(proc: import('node:child_process').ChildProcess): Promise<ChildExit> {
  return watchOutput(proc).exited
}
