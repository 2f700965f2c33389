// ctx.terminals on a real pty inside the bubblewrap sandbox, without dsh's containment: closing the
// owning session ends the terminal's whole process tree while this process lives on; other sessions
// cannot see it; output past memory is spilled and named.
import { mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from '@dsh/kernel'
import SessionService from '@dsh/session'
import { until } from '@dsh/test-support/in-process'
import BwrapSandbox from '@dsh/world/sandbox/bwrap'
import LocalSandboxPolicy from '@dsh/world/sandbox/policy'
import { afterEach, describe, expect, it } from 'vitest'
import PtyTerminals from '../../src/terminal/pty.js'

const dirs: string[] = []
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

function processesWith(marker: string): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((entry) => {
      try {
        return readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(marker)
      } catch {
        return false
      }
    })
    .map(Number)
}

async function boot(config: Record<string, unknown> = {}) {
  const ws = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-term-')))
  dirs.push(ws)
  const root = new Context()
  await root.plugin(SessionService, { cwd: ws })
  await root.plugin(LocalSandboxPolicy, { mode: 'workspace-write', workspaceRoot: ws })
  await root.plugin(BwrapSandbox)
  const fiber = root.plugin(PtyTerminals, { graceMs: 200, ...config })
  await fiber
  return { root, ws, stop: () => fiber.dispose() }
}

describe('pty terminals', () => {
  it('closing the session ends the terminal tree; another session cannot reach it', async () => {
    const { root, ws, stop } = await boot()
    const session = root.sessions.create({ cwd: ws })
    const marker = `dsh-term-close-${process.pid}`
    const owner = { sessionId: session.id }
    const info = await root.terminals.open({ ...owner, cwd: ws, command: `sleep 300 # ${marker}` })
    await until(() => processesWith(marker).length > 0)
    expect(() => root.terminals.write(info.id, { sessionId: 'other' }, 'x')).toThrow(
      /no terminal term-1 in this session/,
    )
    expect(root.terminals.list({ sessionId: 'other' })).toEqual([])

    root.sessions.close(session)
    await until(() => processesWith(marker).length === 0 && root.terminals.list(owner)[0]?.status === 'exited')
    await stop()
  })

  it('keeps the tail of long output and names the spill file holding all of it', async () => {
    const { root, ws, stop } = await boot({ memoryBytes: 1000 })
    const owner = { sessionId: 's1' }
    const info = await root.terminals.open({ ...owner, cwd: ws, command: 'seq 1 3000; echo END; sleep 30' })
    const read = await root.terminals.read(info.id, owner, { view: 'new', waitMs: 20_000, until: 'END', maxBytes: 200 })
    expect(read.text).toMatch(/\n2999\n3000\nEND\s*$/)
    expect(read.omitted).toBeGreaterThan(10_000)
    const spilled = readFileSync(read.spillPath as string, 'utf8').replace(/\r/g, '')
    expect(spilled.startsWith('1\n2\n3\n')).toBe(true)
    await stop()
  })
})
