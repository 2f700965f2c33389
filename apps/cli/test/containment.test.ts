// Tool processes die with dsh: `dsh run` under danger-full-access (no sandbox) starts a bash call with
// a TERM-ignoring background child, a `setsid` grandchild and a foreground child; dsh is SIGKILLed
// (no cleanup code runs) and every one of them must be gone.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { completionResponse, startMockLlmServer } from '@dsh/test-support'
import { describe, expect, it } from 'vitest'
import { spawnDsh } from './dsh-child.js'

/** Host pids of live (non-zombie) processes whose command line contains `token`. */
function processesWith(token: string): number[] {
  const found: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      if (!readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(token)) continue
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0]
      if (state !== 'Z' && state !== 'X') found.push(Number(entry))
    } catch {}
  }
  return found
}

function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0]
    return state !== 'Z' && state !== 'X'
  } catch {
    return false
  }
}

async function until(check: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms
  while (Date.now() < end) {
    if (check()) return true
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return check()
}

describe.skipIf(process.platform !== 'linux')('containment of tool processes', () => {
  it('SIGKILL of dsh under danger-full-access leaves none of its tool processes running', async () => {
    const home = mkdtempSync(join(tmpdir(), 'dsh-contain-'))
    await using server = await startMockLlmServer()
    const token = `dsh-contain-${process.pid}-${Date.now()}`
    // The marker is expanded at run time, so only the three processes carry `<token>-<role>` in
    // their command line (the outer bash and wrappers show `"$T"-role`).
    const roles = ['term', 'setsid', 'fg']
    const command = [
      `T=${token}`,
      `bash -c 'trap "" TERM; while :; do sleep 0.1; done' "$T"-term &`,
      `setsid bash -c 'while :; do sleep 0.1; done' "$T"-setsid &`,
      `bash -c 'while :; do sleep 0.1; done' "$T"-fg`,
    ].join('\n')
    const children = () => roles.flatMap((role) => processesWith(`${token}-${role}`))
    server.enqueue(
      completionResponse({ toolCalls: [{ id: 'c1', name: 'bash', arguments: JSON.stringify({ command }) }] }),
    )
    const dsh = spawnDsh(['run', '--permission-mode', 'danger-full-access', 'go'], {
      home,
      modelUrl: server.url,
      env: { HOME: home },
      stdio: 'ignore',
    })
    try {
      expect(await until(() => children().length === 3, 30_000)).toBe(true)
      const pids = children()
      dsh.kill('SIGKILL')
      await until(() => pids.every((pid) => !alive(pid)), 10_000)
      expect(pids.filter(alive)).toEqual([])
    } finally {
      dsh.kill('SIGKILL')
      for (const pid of children()) {
        try {
          process.kill(pid, 'SIGKILL')
        } catch {}
      }
      rmSync(home, { recursive: true, force: true })
    }
  })
})
