// Rewind through a real in-process dsh: checkpoints around each turn (real shadow git), files back,
// conversation back, /undo and /redo, a concurrent edit refused, and the log as the record.
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { defineTool } from '@dsh/agent/tools'
import type { ScriptedResponse } from '@dsh/llm/scripted'
import { calls, dataOf, startInProcess, text } from '@dsh/test-support/in-process'
import ShadowGitSnapshots from '@dsh/world/snapshots/shadow-git'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import builtin from '../src/builtin-commands.js'
import { CommandsService } from '../src/commands.js'
import rewind from '../src/rewind/index.js'

let ws: string
let home: string

beforeEach(() => {
  ws = mkdtempSync(join(tmpdir(), 'dsh-rewind-ws-'))
  home = mkdtempSync(join(tmpdir(), 'dsh-rewind-home-'))
})
afterEach(() => {
  rmSync(ws, { recursive: true, force: true })
  rmSync(home, { recursive: true, force: true })
})

/** A tool standing in for bash: writes or deletes files directly, outside the fs tools. */
const shell = defineTool<{ write?: Record<string, string>; remove?: string[] }>({
  name: 'shell',
  description: 'changes files',
  parameters: { type: 'object', properties: { write: { type: 'object' }, remove: { type: 'array' } } },
  execute: async ({ write = {}, remove = [] }) => {
    for (const [path, content] of Object.entries(write)) writeFileSync(join(ws, path), content)
    for (const path of remove) unlinkSync(join(ws, path))
    return 'done'
  },
})

async function boot(script: ScriptedResponse[]) {
  const dsh = await startInProcess({
    script,
    cwd: ws,
    invariants: false,
    before: (root) => {
      root.plugin(CommandsService)
      root.plugin(builtin)
      root.plugin(ShadowGitSnapshots, { dir: join(home, 'checkpoints') })
      root.plugin(rewind)
    },
  })
  dsh.root.tools.register(shell)
  return dsh
}

const turn = (id: string, change: { write?: Record<string, string>; remove?: string[] }) => [
  calls([id, 'shell', change]),
  text('ok'),
]

describe('rewind', () => {
  it('takes files back to a message, keeps what others changed, and /redo gives it back', async () => {
    writeFileSync(join(ws, 'a.txt'), 'original\n')
    writeFileSync(join(ws, 'b.txt'), 'b\n')
    const { root } = await boot([
      ...turn('c1', { write: { 'a.txt': 'first\n', 'new.txt': 'new\n' } }),
      ...turn('c2', { write: { 'b.txt': 'second\n' }, remove: ['a.txt'] }),
    ])
    const agent = await root.agents.create()
    const baseline = mkdtempSync(join(tmpdir(), 'dsh-rewind-copy-'))
    cpSync(ws, baseline, { recursive: true })
    agent.followup('one')
    await agent.whenIdle()
    agent.followup('two')
    await agent.whenIdle()
    await root.rewind.settled(agent.session)

    const points = root.rewind.points(agent.session)
    expect(points.map((p) => [p.number, p.text, p.changed])).toEqual([
      [1, 'one', 2],
      [2, 'two', 2],
    ])
    expect(dataOf(agent.session, 'checkpoint/taken').map((c) => c.at)).toEqual([
      'turn-start',
      'turn-end',
      'turn-start',
      'turn-end',
    ])

    const diff = await root.commands.dispatch('/diff 2', { session: agent.session, agent })
    expect(diff.data).toEqual({ source: 'checkpoint' })
    expect(diff.text).toContain('+second')
    expect(diff.text).toContain('deleted file mode')

    // Someone else edits a file the session never touched: it stays as they left it.
    writeFileSync(join(ws, 'theirs.txt'), 'mine\n')
    const outcome = await root.commands.dispatch('/rewind 1 files', { session: agent.session, agent })
    expect(outcome.ok).toBe(true)
    for (const name of ['a.txt', 'b.txt'])
      expect(readFileSync(join(ws, name), 'utf8')).toBe(readFileSync(join(baseline, name), 'utf8'))
    expect(existsSync(join(ws, 'new.txt'))).toBe(false)
    expect(readFileSync(join(ws, 'theirs.txt'), 'utf8')).toBe('mine\n')
    const applied = dataOf(agent.session, 'rewind/applied')
    expect(applied).toHaveLength(1)
    expect(applied[0]).toMatchObject({ kind: 'rewind', point: 1, deleted: ['new.txt'] })
    expect([...(applied[0]?.written ?? [])].sort()).toEqual(['a.txt', 'b.txt'])
    expect(root.rewind.points(agent.session).map((p) => p.undone)).toEqual([true, true])

    await root.commands.dispatch('/redo', { session: agent.session, agent })
    expect(readFileSync(join(ws, 'b.txt'), 'utf8')).toBe('second\n')
    expect(readFileSync(join(ws, 'new.txt'), 'utf8')).toBe('new\n')
    expect(existsSync(join(ws, 'a.txt'))).toBe(false)
    expect(root.rewind.points(agent.session).map((p) => p.undone)).toEqual([false, false])
    rmSync(baseline, { recursive: true })
  })

  it('/undo takes back the newest turn only, and refuses to overwrite a concurrent edit', async () => {
    writeFileSync(join(ws, 'a.txt'), 'v0\n')
    const { root } = await boot([
      ...turn('c1', { write: { 'a.txt': 'v1\n' } }),
      ...turn('c2', { write: { 'a.txt': 'v2\n', 'b.txt': 'b\n' } }),
    ])
    const agent = await root.agents.create()
    agent.followup('one')
    await agent.whenIdle()
    agent.followup('two')
    await agent.whenIdle()
    const target = { session: agent.session, agent }

    writeFileSync(join(ws, 'a.txt'), 'user edit\n')
    const refused = await root.commands.dispatch('/undo', target)
    expect(refused.data).toMatchObject({ ok: false, code: 'REWIND_CONFLICT', conflicts: ['a.txt'] })
    expect(readFileSync(join(ws, 'a.txt'), 'utf8')).toBe('user edit\n')
    expect(readFileSync(join(ws, 'b.txt'), 'utf8')).toBe('b\n')
    expect(dataOf(agent.session, 'rewind/started')).toHaveLength(0)

    await root.commands.dispatch('/undo overwrite', target)
    expect(readFileSync(join(ws, 'a.txt'), 'utf8')).toBe('v1\n')
    expect(existsSync(join(ws, 'b.txt'))).toBe(false)
    await root.commands.dispatch('/undo', target)
    expect(readFileSync(join(ws, 'a.txt'), 'utf8')).toBe('v0\n')
    const nothing = await root.commands.dispatch('/undo', target)
    expect(nothing.data).toMatchObject({ code: 'REWIND_NOTHING' })
    await root.commands.dispatch('/redo', target)
    expect(readFileSync(join(ws, 'a.txt'), 'utf8')).toBe('v1\n')
    await root.commands.dispatch('/redo', target)
    expect(readFileSync(join(ws, 'a.txt'), 'utf8')).toBe('user edit\n')
    expect(readFileSync(join(ws, 'b.txt'), 'utf8')).toBe('b\n')
  })

  it('a conversation rewind forks before the message, drops its queued input and gives the text back', async () => {
    const { root, adapter } = await boot([text('first answer'), text('second answer'), text('again')])
    const agent = await root.agents.create()
    agent.followup('one')
    await agent.whenIdle()
    agent.followup('two')
    await agent.whenIdle()
    // Turns that called no tool changed nothing: the end checkpoint is the start one, not taken again.
    const taken = dataOf(agent.session, 'checkpoint/taken')
    expect(taken.map((c) => c.at)).toEqual(['turn-start', 'turn-end', 'turn-start', 'turn-end'])
    expect(taken[1]).toMatchObject({ snapshot: taken[0]?.snapshot, ms: 0, changed: 0 })
    const fork = root.rewind.fork(agent.session, 2)
    expect(fork.text).toBe('two')
    const child = await root.agents.create({ session: fork.child })
    child.followup('two, differently')
    await child.whenIdle()
    const request = adapter.dispatches.at(-1)
    const said = JSON.stringify(request)
    expect(said).toContain('one')
    expect(said).toContain('two, differently')
    expect(said).not.toContain('second answer')
    expect(agent.session.events.length).toBeGreaterThan(0)
  })

  it('two sessions in one workspace: a rewind of one never reverts the other', async () => {
    writeFileSync(join(ws, 'shared.txt'), 'v0\n')
    const { root } = await boot([
      ...turn('a1', { write: { 'a.txt': 'from a\n' } }),
      ...turn('b1', { write: { 'b.txt': 'from b\n', 'shared.txt': 'b was here\n' } }),
      ...turn('a2', { write: { 'shared.txt': 'a was here\n' } }),
    ])
    const a = await root.agents.create()
    const b = await root.agents.create()
    a.followup('a one')
    await a.whenIdle()
    b.followup('b one')
    await b.whenIdle()
    // A rewinds its first message: its own a.txt goes; B's b.txt and shared.txt stay as B left them.
    const first = await root.rewind.files(a.session, 1)
    expect(first).toMatchObject({ ok: true, deleted: ['a.txt'], written: [] })
    expect(readFileSync(join(ws, 'b.txt'), 'utf8')).toBe('from b\n')
    expect(readFileSync(join(ws, 'shared.txt'), 'utf8')).toBe('b was here\n')
    // A now changes shared.txt; B's rewind of its message finds A's later change and refuses.
    a.followup('a two')
    await a.whenIdle()
    const refused = await root.rewind.files(b.session, 1)
    expect(refused).toMatchObject({ ok: false, code: 'REWIND_CONFLICT', conflicts: ['shared.txt'] })
    expect(readFileSync(join(ws, 'shared.txt'), 'utf8')).toBe('a was here\n')
    expect(readFileSync(join(ws, 'b.txt'), 'utf8')).toBe('from b\n')
  })
})
