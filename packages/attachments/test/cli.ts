// The built `dsh` as a child process against the mock model server, in a private $DSH_HOME.
import { spawn } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

export const bin = fileURLToPath(new URL('../../../apps/cli/bin/dsh.js', import.meta.url))

export interface Ran {
  code: number | null
  stdout: string
  stderr: string
}

export async function dsh(args: string[], options: { cwd: string; home: string; url: string }): Promise<Ran> {
  const proc = spawn(process.execPath, [bin, ...args], {
    cwd: options.cwd,
    env: {
      PATH: process.env.PATH,
      DSH_HOME: options.home,
      DEEPSEEK_API_KEY: 'sk-test',
      DEEPSEEK_BASE_URL: options.url,
    },
  })
  let stdout = ''
  let stderr = ''
  proc.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk
  })
  proc.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk
  })
  const code = await new Promise<number | null>((resolve) => proc.on('close', resolve))
  return { code, stdout, stderr }
}

export interface LoggedEvent {
  type: string
  seq: number
  data: Record<string, unknown>
}

/** The events of the one durable session in `home` (or the one named `id`). */
export function sessionEvents(home: string, id?: string): LoggedEvent[] {
  const dir = join(home, 'sessions')
  const file = id ? `${id}.jsonl` : (readdirSync(dir).find((name) => name.endsWith('.jsonl')) as string)
  return readFileSync(join(dir, file), 'utf8')
    .trim()
    .split('\n')
    .slice(1)
    .map((line) => JSON.parse(line) as LoggedEvent)
}

/** Files in the blob store of `home`. */
export function blobFiles(home: string): string[] {
  const root = join(home, 'blobs', 'sha256')
  let prefixes: string[]
  try {
    prefixes = readdirSync(root)
  } catch {
    return []
  }
  return prefixes.flatMap((prefix) => readdirSync(join(root, prefix)))
}
