// Files a folder supplies that dsh reads at start, outside `ctx.fs` (issue 34): project instructions
// (AGENTS.md, CLAUDE.md), skills (SKILL.md) and presets (preset.yml and its prompt files). A FIFO under
// one of those names must not hang `dsh run`, and a huge one is cut or refused before it is read whole.
// Through the built `dsh` with the mock model; outcomes from the exit, the request the model saw and
// stderr.
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, truncateSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { completionResponse, type MockLlmServer, startMockLlmServer } from '@dsh/test-support'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { startDsh } from './dsh-child.js'

let home: string
let project: string
let server: MockLlmServer

beforeEach(async () => {
  home = mkdtempSync(join(tmpdir(), 'dsh-workspace-files-'))
  project = join(home, 'project')
  mkdirSync(project)
  server = await startMockLlmServer()
})
afterEach(async () => {
  await server.close()
  rmSync(home, { recursive: true, force: true })
})

/** `dsh run hello` in the project; a run still going after 15 s is killed (the hang this file tests). */
async function run() {
  const child = startDsh(['run', 'hello'], { home, cwd: project, modelUrl: server.url })
  const timer = setTimeout(() => child.proc.kill('SIGKILL'), 15_000)
  try {
    return await child.exited
  } finally {
    clearTimeout(timer)
  }
}
const systemPrompt = () => JSON.stringify(server.requests[0]?.body.messages[0])

function fifo(path: string): void {
  mkdirSync(join(path, '..'), { recursive: true })
  execFileSync('mkfifo', [path])
}

describe('a FIFO under a name dsh reads at start', () => {
  it.each([
    ['AGENTS.md', 'AGENTS.md'],
    ['CLAUDE.md', 'CLAUDE.md'],
    ['a skill', '.dsh/skills/stuck/SKILL.md'],
    ['a Claude skill', '.claude/skills/stuck/SKILL.md'],
    ['a preset', '.dsh/presets/stuck/preset.yml'],
  ])(
    '%s: dsh run finishes and answers',
    async (_name, file) => {
      fifo(join(project, file))
      server.enqueue(completionResponse({ text: 'hi' }))
      const started = Date.now()
      const exit = await run()
      expect(exit.code, exit.stderr).toBe(0)
      expect(exit.stdout).toContain('hi')
      expect(Date.now() - started).toBeLessThan(15_000)
    },
    30_000,
  )
})

describe('a huge file under a name dsh reads at start', () => {
  it('AGENTS.md of 3 GB (sparse) is cut to its limit with a note, not read whole', async () => {
    const file = join(project, 'AGENTS.md')
    writeFileSync(file, 'Always answer in French.\n')
    truncateSync(file, 3 * 1024 ** 3)
    server.enqueue(completionResponse({ text: 'bonjour' }))
    const exit = await run()
    expect(exit.code, exit.stderr).toBe(0)
    expect(systemPrompt()).toContain('Always answer in French.')
    expect(systemPrompt()).toMatch(/more bytes of .*AGENTS\.md not shown/)
  }, 30_000)

  it('a SKILL.md of 100 MB (sparse) is left out (not read), and the run answers', async () => {
    const file = join(project, '.dsh', 'skills', 'huge', 'SKILL.md')
    mkdirSync(join(file, '..'), { recursive: true })
    writeFileSync(file, '---\nname: huge\ndescription: a huge skill\n---\nbody\n')
    truncateSync(file, 100 * 1024 ** 2)
    server.enqueue(completionResponse({ text: 'hi' }))
    const exit = await run()
    expect(exit.code, exit.stderr).toBe(0)
    expect(systemPrompt()).not.toContain('a huge skill')
  }, 30_000)
})
