// The base rows in the real product: the built `dsh run` (headless profile, scripted model through a
// patch) delegates with `task`, writes a todo list and asks a question nobody can answer.
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect, it } from 'vitest'

const bin = fileURLToPath(new URL('../../../../apps/cli/bin/dsh.js', import.meta.url))

const PATCH = `- id: llm-scripted
  use: "@dsh/llm/scripted"
  config:
    script:
      - role: assistant
        content:
          - { type: tool-call, id: c1, name: todo_write, arguments: { todos: [{ content: "count files", status: in_progress }] } }
          - { type: tool-call, id: c2, name: task, arguments: { prompt: "say hello", description: "greeter" } }
          - { type: tool-call, id: c3, name: ask_user, arguments: { question: "colour?" } }
        finishReason: tool-calls
      - role: assistant
        content: [{ type: text, text: "child says hello" }]
        finishReason: stop
      - role: assistant
        content: [{ type: text, text: "all done" }]
        finishReason: stop
`

it('dsh run uses task, todo_write and ask_user from the base rows with no key and no network', () => {
  const home = mkdtempSync(join(tmpdir(), 'dsh-sub-cli-'))
  try {
    writeFileSync(join(home, 'patch.yml'), PATCH)
    const result = spawnSync(
      process.execPath,
      [bin, '--patch', join(home, 'patch.yml'), 'run', '--provider', 'scripted', '--output', 'json', 'do the thing'],
      { cwd: home, env: { PATH: process.env.PATH, DSH_HOME: home }, encoding: 'utf8', timeout: 60_000 },
    )
    expect(result.status, result.stderr).toBe(0)
    const summary = JSON.parse(result.stdout) as { sessionId: string; reason: string; text: string }
    expect(summary).toMatchObject({ reason: 'completed', text: 'all done' })

    const dir = join(home, 'sessions')
    const read = (id: string) =>
      readFileSync(join(dir, `${id}.jsonl`), 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line))
    const parent = read(summary.sessionId)
    const finished = parent.find((event) => event.type === 'subagent/finished')?.data
    expect(finished).toMatchObject({ outcome: 'completed', text: 'child says hello' })
    expect(parent.find((event) => event.type === 'todo/write')?.data).toEqual({
      todos: [{ content: 'count files', status: 'in_progress' }],
    })
    const results = parent.filter((event) => event.type === 'tool/result').map((event) => event.data.code ?? 'ok')
    expect(results).toEqual(['ok', 'ok', 'USER_UNAVAILABLE'])
    const child = readdirSync(dir).find((name) => name.startsWith('sub-') && name.endsWith('.jsonl'))
    expect(child).toBe(`${finished.childSession}.jsonl`)
    expect(read(finished.childSession)[0]).toMatchObject({ parentSession: summary.sessionId, seedLength: 0 })
  } finally {
    rmSync(home, { recursive: true, force: true })
  }
}, 90_000)
