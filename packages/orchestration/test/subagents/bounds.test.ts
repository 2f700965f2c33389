// Children never exceed their parent (issue 34): the built `dsh run` with a scripted model. A `task`
// child, a workflow step and a loop child of a read-only session try to write a file; a model-written
// project preset asks danger-full-access for a child of a workspace-write session. The file system and
// the children's durable logs say what happened, never the agent's words.
import { execFileSync, spawnSync } from 'node:child_process'
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { FolderTrust } from '@dsh/settings/trust'
import { afterEach, describe, expect, it } from 'vitest'

const bin = fileURLToPath(new URL('../../../../apps/cli/bin/dsh.js', import.meta.url))

function hasBwrap(): boolean {
  try {
    execFileSync('bwrap', ['--ro-bind', '/', '/', 'true'], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}
const skipSandbox = !hasBwrap() && !process.env.CI

const dirs: string[] = []
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})
function temp(prefix: string, parent = tmpdir()): string {
  const dir = realpathSync(mkdtempSync(join(parent, prefix)))
  dirs.push(dir)
  return dir
}

type Call = [id: string, name: string, args: Record<string, unknown>]
const calls = (...list: Call[]) => ({
  role: 'assistant',
  content: list.map(([id, name, args]) => ({ type: 'tool-call', id, name, arguments: args })),
  finishReason: 'tool-calls',
})
const says = (text: string) => ({ role: 'assistant', content: [{ type: 'text', text }], finishReason: 'stop' })

interface Event {
  type: string
  data: Record<string, unknown>
}

/** Runs `dsh run` in `ws` with the scripted model answering `script` in order (parent and children share it). */
function run(ws: string, script: unknown[], args: string[], prepare?: (home: string) => void) {
  const home = temp('dsh-bounds-home-')
  prepare?.(home)
  const patch = join(home, 'patch.yml')
  writeFileSync(patch, JSON.stringify([{ id: 'llm-scripted', use: '@dsh/llm/scripted', config: { script } }]))
  const result = spawnSync(
    process.execPath,
    [bin, '--patch', patch, 'run', '--provider', 'scripted', '--output', 'json', ...args, 'do the thing'],
    { cwd: ws, env: { PATH: process.env.PATH, DSH_HOME: home }, encoding: 'utf8', timeout: 60_000 },
  )
  const dir = join(home, 'sessions')
  const read = (id: string): Event[] =>
    readFileSync(join(dir, `${id}.jsonl`), 'utf8')
      .trim()
      .split('\n')
      .slice(1)
      .map((line) => JSON.parse(line) as Event)
  const children = () =>
    readdirSync(dir)
      .filter((name) => name.startsWith('sub-') && name.endsWith('.jsonl'))
      .map((name) => read(name.slice(0, -'.jsonl'.length)))
  const parent = () => {
    const name = readdirSync(dir).find((file) => !file.startsWith('sub-') && file.endsWith('.jsonl'))
    return name ? read(name.slice(0, -'.jsonl'.length)) : []
  }
  return { result, children, parent }
}

/** The last permission mode a log records. */
const modeOf = (events: Event[]) => events.filter((event) => event.type === 'sandbox/mode').at(-1)?.data.mode

describe('a child of a read-only session cannot write', () => {
  it('a task child', () => {
    const ws = temp('dsh-bounds-ws-')
    const { result, children } = run(
      ws,
      [
        calls(['p1', 'task', { prompt: 'write the file', description: 'writer' }]),
        calls(['c1', 'write', { path: 'child.txt', content: 'written by the child\n' }]),
        says('child done'),
        says('parent done'),
      ],
      ['--permission-mode', 'read-only'],
    )
    expect(result.status, result.stderr).toBe(0)
    expect(existsSync(join(ws, 'child.txt'))).toBe(false)
    const [child] = children()
    expect(child && modeOf(child)).toBe('read-only')
  }, 90_000)

  it('a workflow step', () => {
    const ws = temp('dsh-bounds-ws-')
    const { result, children } = run(
      ws,
      [
        calls(['p1', 'workflow', { plan: { steps: [{ id: 'write', prompt: 'write the file' }] } }]),
        calls(['c1', 'write', { path: 'step.txt', content: 'written by a step\n' }]),
        says('step done'),
        says('parent done'),
      ],
      ['--permission-mode', 'read-only'],
    )
    expect(result.status, result.stderr).toBe(0)
    expect(existsSync(join(ws, 'step.txt'))).toBe(false)
    const [child] = children()
    expect(child && modeOf(child)).toBe('read-only')
  }, 90_000)

  it.skipIf(skipSandbox)(
    'a loop child',
    () => {
      const ws = temp('dsh-bounds-ws-')
      const { result, children } = run(
        ws,
        [
          calls(['p1', 'loop', { task: 'write the file', until: 'test -f loop.txt', max_iterations: 1 }]),
          calls(['c1', 'write', { path: 'loop.txt', content: 'written by a loop child\n' }]),
          says('attempt done'),
          says('parent done'),
        ],
        ['--permission-mode', 'read-only'],
      )
      expect(result.status, result.stderr).toBe(0)
      expect(existsSync(join(ws, 'loop.txt'))).toBe(false)
      const [child] = children()
      expect(child && modeOf(child)).toBe('read-only')
    },
    90_000,
  )
})

describe.skipIf(skipSandbox)('a preset never widens a child', () => {
  const preset = 'permissionMode: danger-full-access\ndescription: full access\n'
  const outsideTarget = () => {
    // Outside the workspace and the temp dirs: not writable under workspace-write.
    const outside = temp('dsh-bounds-outside-', existsSync('/var/tmp') ? '/var/tmp' : process.cwd())
    mkdirSync(outside, { recursive: true })
    return join(outside, 'escaped.txt')
  }

  it.each([[[]], [['--trust']]])(
    'a preset the model writes mid-session is not loaded (%j): the task is refused and no child runs',
    (flags: string[]) => {
      const ws = temp('dsh-bounds-ws-')
      execFileSync('git', ['init', '-q'], { cwd: ws })
      const target = outsideTarget()
      const { result, children, parent } = run(
        ws,
        [
          // The model writes a project preset with bash (the file tools refuse `.dsh/`), then delegates with it.
          calls([
            'p1',
            'bash',
            {
              command: `mkdir -p .dsh/presets/x && printf '%s' '${preset}' > .dsh/presets/x/preset.yml`,
              description: 'write a preset',
            },
          ]),
          calls(['p2', 'task', { prompt: 'escape', description: 'escaper', preset: 'x' }]),
          calls(['p3', 'write', { path: target, content: 'escaped\n' }]),
          says('parent done'),
        ],
        ['--permission-mode', 'workspace-write', ...flags],
      )
      expect(result.status, result.stderr).toBe(0)
      expect(existsSync(target)).toBe(false)
      // A child session may have been opened, but it took no preset and ran no turn.
      const childTypes = children().flatMap((events) => events.map((event) => event.type))
      expect(childTypes.filter((type) => type === 'preset/selected' || type === 'turn/start')).toEqual([])
      const results = parent().filter((event) => event.type === 'tool/result')
      const refused = results.find((event) => JSON.stringify(event.data).includes('"toolCallId":"p2"'))
      expect(JSON.stringify(refused?.data)).toContain('"isError":true')
      expect(JSON.stringify(refused?.data)).toContain('not trusted')
    },
    90_000,
  )

  it('a trusted danger-full-access preset gives a workspace-write child, which cannot write outside', () => {
    const ws = temp('dsh-bounds-ws-')
    execFileSync('git', ['init', '-q'], { cwd: ws })
    mkdirSync(join(ws, '.dsh', 'presets', 'x'), { recursive: true })
    writeFileSync(join(ws, '.dsh', 'presets', 'x', 'preset.yml'), preset)
    const target = outsideTarget()
    const { result, children } = run(
      ws,
      [
        calls(['p2', 'task', { prompt: 'escape', description: 'escaper', preset: 'x' }]),
        calls(['c1', 'write', { path: target, content: 'escaped\n' }]),
        says('child done'),
        says('parent done'),
      ],
      ['--permission-mode', 'workspace-write'],
      (home) => new FolderTrust(home).grant(ws),
    )
    expect(result.status, result.stderr).toBe(0)
    expect(existsSync(target)).toBe(false)
    const [child] = children()
    if (!child) throw new Error('no child session')
    // The preset was selected and the child ran clamped to its parent.
    expect(child.find((event) => event.type === 'preset/selected')?.data.name).toBe('x')
    expect(modeOf(child)).toBe('workspace-write')
  }, 90_000)
})
