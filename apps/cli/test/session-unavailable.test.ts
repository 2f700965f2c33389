// A session dsh cannot open says why and what to do, with its own exit code: busy in another process
// (10), damaged (11); `dsh sessions repair` keeps the readable prefix and the session resumes.
import { spawn } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { acquireLease } from '@dsh/session-store'
import { completionResponse, type MockLlmServer, startMockLlmServer } from '@dsh/test-support'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ExitCode } from '../src/exit-codes.js'

const bin = fileURLToPath(new URL('../bin/dsh.js', import.meta.url))
let home: string
let server: MockLlmServer
let id: string

function dsh(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const proc = spawn(process.execPath, [bin, ...args], {
    cwd: home,
    env: { PATH: process.env.PATH, DSH_HOME: home, DEEPSEEK_API_KEY: 'sk-test', DEEPSEEK_BASE_URL: server.url },
  })
  let stdout = ''
  let stderr = ''
  proc.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk
  })
  proc.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk
  })
  return new Promise((resolve) => proc.on('close', (code) => resolve({ code, stdout, stderr })))
}

const logPath = () => join(home, 'sessions', `${id}.jsonl`)

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), 'dsh-unavailable-'))
  server = await startMockLlmServer({ respond: () => completionResponse({ text: 'ok' }) })
  for (const task of ['first', 'second']) {
    const run = await dsh('run', '--output', 'json', ...(id ? ['--resume', id] : []), task)
    expect(run.code).toBe(0)
    id = JSON.parse(run.stdout).sessionId
  }
})
afterAll(async () => {
  await server.close()
  rmSync(home, { recursive: true, force: true })
})

describe('a session dsh cannot open', () => {
  it('busy in another process: exit 10, naming the holder', async () => {
    const lease = acquireLease(join(home, 'sessions'), id)
    try {
      const result = await dsh('run', '--resume', id, 'more')
      expect(result.code).toBe(ExitCode.SESSION_BUSY)
      expect(result.stderr).toContain(`is open in another process (pid ${process.pid}`)
    } finally {
      lease.release()
    }
  })

  it('damaged: exit 11 with the repair command; repair keeps every good line; the session resumes', async () => {
    const original = readFileSync(logPath(), 'utf8')
    const lines = original.trimEnd().split('\n')
    const bad = lines.findIndex((line) => line.includes('"second"'))
    expect(bad).toBeGreaterThan(1)
    const damaged = [...lines]
    damaged[bad] = (damaged[bad] as string).replace('"second"', '"sekond"')
    writeFileSync(logPath(), `${damaged.join('\n')}\n`)

    const refused = await dsh('run', '--resume', id, 'more')
    expect(refused.code).toBe(ExitCode.SESSION_CORRUPT)
    expect(refused.stderr).toContain(`line ${bad + 1} was changed after it was written`)
    expect(refused.stderr).toContain(`dsh sessions repair ${id}`)

    const repaired = await dsh('sessions', 'repair', id)
    expect(repaired.code).toBe(0)
    expect(readFileSync(logPath(), 'utf8')).toBe(`${lines.slice(0, bad).join('\n')}\n`)
    const side = readdirSync(join(home, 'sessions')).find((name) => name.startsWith(`${id}.jsonl.damaged-`))
    expect(readFileSync(join(home, 'sessions', side as string), 'utf8')).toBe(`${damaged.slice(bad).join('\n')}\n`)

    const resumed = await dsh('run', '--resume', id, 'again')
    expect(resumed.code).toBe(0)
    expect(readFileSync(logPath(), 'utf8').startsWith(`${lines.slice(0, bad).join('\n')}\n`)).toBe(true)
  })
})
