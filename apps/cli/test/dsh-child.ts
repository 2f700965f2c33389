// `dsh` as a child process the way users start it: the built binary, DSH_HOME in a temp dir, the model
// behind DEEPSEEK_BASE_URL (the mock server), and the durable session log read back from disk.
import { spawn } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { AnySessionEvent } from '@dsh/session'
import { type ChildExit, collectExit } from '@dsh/test-support'

export const bin = fileURLToPath(new URL('../bin/dsh.js', import.meta.url))

export type { ChildExit as ChildRun } from '@dsh/test-support'

/** Runs `dsh ...args` with `cwd`, DSH_HOME `home` and the model at `modelUrl`; resolves when it exits. */
export function runDsh(
  args: string[],
  options: { home: string; cwd?: string; modelUrl: string; env?: Record<string, string | undefined> },
): Promise<ChildExit> {
  const proc = spawn(process.execPath, [bin, ...args], {
    cwd: options.cwd ?? options.home,
    env: {
      PATH: process.env.PATH,
      DSH_HOME: options.home,
      DEEPSEEK_API_KEY: 'sk-test',
      DEEPSEEK_BASE_URL: options.modelUrl,
      ...options.env,
    },
  })
  return collectExit(proc)
}

/** The events of the only session under `home`, read from its JSONL file (the per-line seal dropped). */
export function durableEvents(home: string): AnySessionEvent[] {
  const files = readdirSync(join(home, 'sessions')).filter((name) => name.endsWith('.jsonl'))
  if (files.length !== 1) throw new Error(`expected one session in ${home}, found ${files.length}`)
  const lines = readFileSync(join(home, 'sessions', files[0] as string), 'utf8')
    .trim()
    .split('\n')
  return lines.slice(1).map((line) => {
    const { crc: _crc, ...event } = JSON.parse(line)
    return event as AnySessionEvent
  })
}
