// The stdio provider against the real servers installed as dev dependencies (typescript-language-server,
// pyright): answers in model shapes, a killed server restarted with a note, a missing binary as one
// note, and no server process left once the sessions that used it are closed.
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from '@dsh/kernel'
import SessionService from '@dsh/session'
import { isAlive } from '@dsh/test-support'
import { until } from '@dsh/test-support/in-process'
import { afterEach, describe, expect, it } from 'vitest'
import StdioLanguageServers from '../src/stdio.js'

const dirs: string[] = []
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

function project(): string {
  const ws = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-lsp-')))
  dirs.push(ws)
  mkdirSync(join(ws, 'src'))
  writeFileSync(
    join(ws, 'tsconfig.json'),
    '{ "compilerOptions": { "strict": true, "module": "NodeNext" }, "include": ["src"] }\n',
  )
  writeFileSync(join(ws, 'src/math.ts'), 'export function add(a: number, b: number): number {\n  return a + b\n}\n')
  writeFileSync(join(ws, 'src/main.ts'), "import { add } from './math.js'\n\nexport const total: number = add(1, 2)\n")
  return ws
}

async function boot(ws: string, config: Record<string, unknown> = {}) {
  const root = new Context()
  await root.plugin(SessionService, { cwd: ws })
  const fiber = root.plugin(StdioLanguageServers, {
    diagnosticsTimeoutMs: 60_000,
    requestTimeoutMs: 60_000,
    restartBaseMs: 50,
    ...config,
  })
  await fiber
  return { root, stop: () => fiber.dispose() }
}

describe('language servers over stdio', () => {
  it('restarts a killed server on the next question and says so; closing the session stops it', async () => {
    const ws = project()
    const { root, stop } = await boot(ws)
    const session = root.sessions.create({ cwd: ws })
    const at = { root: ws, path: 'src/main.ts', line: 3, column: 30, sessionId: session.id }
    expect(await root.lsp.definition(at)).toEqual({
      server: 'typescript',
      answered: true,
      value: [{ path: 'src/math.ts', line: 1, column: 17 }],
      notes: [],
    })
    const first = root.lsp.status()[0]?.pid as number
    process.kill(first, 'SIGKILL')
    await until(() => root.lsp.status()[0]?.state === 'restarting')

    const again = await root.lsp.definition(at)
    expect(again.value).toEqual([{ path: 'src/math.ts', line: 1, column: 17 }])
    expect(again.notes).toEqual([
      'language server typescript had stopped (signal SIGKILL) and was restarted (restart 1 of at most 4)',
    ])
    const second = root.lsp.status()[0]?.pid as number
    expect(second).not.toBe(first)

    root.sessions.close(session)
    await until(() => !isAlive(second) && root.lsp.status()[0]?.state === 'stopped')
    await stop()
  })

  it('a missing server binary is one note per session, then silence, never an error', async () => {
    const ws = project()
    writeFileSync(join(ws, 'a.zz'), 'x\n')
    const { root, stop } = await boot(ws, {
      servers: { zed: { command: ['no-such-language-server'], extensions: ['.zz'] } },
    })
    const target = { root: ws, path: 'a.zz', sessionId: 's1' }
    const first = await root.lsp.diagnostics(target)
    expect(first).toEqual({
      server: 'zed',
      answered: false,
      value: [],
      notes: [
        expect.stringMatching(/^language server zed is not available: "no-such-language-server" is not installed/),
      ],
    })
    expect(await root.lsp.diagnostics(target)).toEqual({ server: 'zed', answered: false, value: [], notes: [] })
    expect(root.lsp.handles('b.md')).toBe(false)
    await stop()
  })

  it('a FIFO under a source name is refused at once with a note, not waited on', async () => {
    const ws = project()
    execFileSync('mkfifo', [join(ws, 'src/pipe.ts')])
    const { root, stop } = await boot(ws, { requestTimeoutMs: 30_000 })
    try {
      const started = Date.now()
      const answer = await root.lsp.diagnostics({ root: ws, path: 'src/pipe.ts' })
      expect(Date.now() - started).toBeLessThan(20_000)
      expect(answer).toMatchObject({ answered: false, value: [] })
      expect(answer.notes.join('\n')).toMatch(/not a regular file/)
    } finally {
      await stop()
    }
  })

  it('refuses a server row without command or extensions, naming the fix', async () => {
    const root = new Context()
    await root.plugin(SessionService, {})
    await expect(
      (async () => root.plugin(StdioLanguageServers, { servers: { go: { command: 'gopls' } as never } }))(),
    ).rejects.toThrow(/lsp server "go": give command \(a list of strings/)
  })
})
