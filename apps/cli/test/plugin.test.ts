// Out-of-tree plugins from the command line: the example plugin (examples/plugin-hello) packed to a
// tarball, `dsh plugin add` installs it into DSH_HOME (npm, offline: a local tarball needs no
// registry) and names it in the home patch; `dsh run` against the mock model calls its `hello` tool,
// whose file lands on disk and whose call is in the durable log; `dsh plugin rm` undoes both and the
// tool is no longer offered. The same story through the packed @dsh packages is in test/pack/.
import { execFileSync } from 'node:child_process'
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { type AnySessionEvent, eventData } from '@dsh/session'
import { completionResponse, type RecordedRequest, startMockLlmServer } from '@dsh/test-support'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { runDsh } from './dsh-child.js'

const checkout = fileURLToPath(new URL('../../..', import.meta.url))
let work: string
let home: string
let project: string

/** Each test runs npm several times (install, link, uninstall), each seconds long on a loaded machine. */
const NPM_TIMEOUT = 240_000

/** npm as the user has it, but never the network: every install here is from a local file. */
const npmEnv = { HOME: process.env.HOME, npm_config_offline: 'true', npm_config_update_notifier: 'false' }

beforeAll(() => {
  work = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-plugin-')))
  home = join(work, 'home')
  project = join(work, 'project')
  mkdirSync(project)
  execFileSync(
    'npm',
    ['pack', join(checkout, 'examples', 'plugin-hello'), '--pack-destination', work, '--loglevel=error'],
    {
      cwd: work,
      stdio: 'ignore',
    },
  )
})
afterAll(() => rmSync(work, { recursive: true, force: true }))

const toolNames = (request: RecordedRequest) =>
  ((request.body as { tools?: Array<{ function: { name: string } }> }).tools ?? []).map((tool) => tool.function.name)

function sessionEvents(id: string): AnySessionEvent[] {
  const lines = readFileSync(join(home, 'sessions', `${id}.jsonl`), 'utf8')
    .trim()
    .split('\n')
  return lines.slice(1).map((line) => JSON.parse(line) as AnySessionEvent)
}

it(
  'adds a plugin from a tarball, runs its tool, lists it, and removes it again',
  async () => {
    await using server = await startMockLlmServer()
    const dsh = (args: string[], cwd = work) => runDsh(args, { home, cwd, modelUrl: server.url, env: npmEnv })

    const added = await dsh(['plugin', 'add', './dsh-plugin-hello-1.0.0.tgz'])
    expect(added.stderr).toBe('')
    expect(added.code).toBe(0)
    expect(added.stdout).toContain('installed dsh-plugin-hello@1.0.0')
    expect(readFileSync(join(home, 'patch.yml'), 'utf8')).toMatch(/^- bundle: dsh-plugin-hello$/m)
    // The plugin's @dsh/agent is this dsh's own package, not a second copy.
    const linked = realpathSync(join(home, 'node_modules', '@dsh', 'agent'))
    expect(linked).toBe(realpathSync(join(checkout, 'packages', 'agent')))
    expect(existsSync(join(home, 'node_modules', 'dsh-plugin-hello', 'hello.js'))).toBe(true)

    // Adding it again (the same file) is no error and names it once.
    const again = await dsh(['plugin', 'add', './dsh-plugin-hello-1.0.0.tgz'])
    expect(again.code, again.stderr).toBe(0)
    expect(again.stdout).toContain('already enabled in')
    expect(readFileSync(join(home, 'patch.yml'), 'utf8').match(/dsh-plugin-hello/g)).toHaveLength(1)

    const listed = await dsh(['plugin', 'ls'])
    expect(listed.code).toBe(0)
    expect(listed.stdout).toBe('dsh-plugin-hello@1.0.0  enabled\n  hello  dsh-plugin-hello/hello\n')
    const dumped = await dsh(['--dump-config'])
    expect(dumped.stdout).toContain('# from bundle dsh-plugin-hello (named by home patch)\n- id: hello\n')

    server.enqueue(completionResponse({ toolCalls: [{ id: 'h1', name: 'hello', arguments: '{"name":"Ada"}' }] }))
    server.enqueue(completionResponse({ text: 'Greeted.' }))
    const run = await dsh(['run', '--output', 'json', 'greet Ada'], project)
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    expect(readFileSync(join(project, 'hello-Ada.txt'), 'utf8')).toBe('Hello, Ada!\n')
    expect(toolNames(server.requests[0] as RecordedRequest)).toContain('hello')
    const events = sessionEvents((JSON.parse(run.stdout) as { sessionId: string }).sessionId)
    expect(eventData(events, 'tool/call')).toMatchObject([{ call: { name: 'hello', arguments: { name: 'Ada' } } }])
    expect(eventData(events, 'tool/result')).toMatchObject([
      {
        message: {
          toolName: 'hello',
          isError: false,
          content: [{ type: 'text', text: `Wrote ${join(project, 'hello-Ada.txt')}.` }],
        },
      },
    ])

    const removed = await dsh(['plugin', 'rm', 'dsh-plugin-hello'])
    expect(removed.stderr).toBe('')
    expect(removed.code).toBe(0)
    expect(readFileSync(join(home, 'patch.yml'), 'utf8')).not.toContain('dsh-plugin-hello')
    expect(existsSync(join(home, 'node_modules', 'dsh-plugin-hello'))).toBe(false)
    expect(existsSync(join(home, 'node_modules', '@dsh', 'agent'))).toBe(false)
    expect(JSON.parse(readFileSync(join(home, 'package.json'), 'utf8')).dependencies ?? {}).toEqual({})
    expect((await dsh(['plugin', 'ls'])).stdout).toContain('no plugins in')

    server.enqueue(completionResponse({ text: 'No hello here.' }))
    const after = await dsh(['run', 'greet Ada again'], project)
    expect(after.code).toBe(0)
    const offered = toolNames(server.requests.at(-1) as RecordedRequest)
    expect(offered).toContain('read')
    expect(offered).not.toContain('hello')
  },
  NPM_TIMEOUT,
)

it(
  'refuses what is not a plugin it can load, leaving DSH_HOME as it was; a directory is installed as a copy',
  async () => {
    const errorsHome = join(work, 'errors-home')
    const dsh = (args: string[]) =>
      runDsh(args, { home: errorsHome, cwd: work, modelUrl: 'http://127.0.0.1:9', env: npmEnv })
    const fake = (name: string, manifest: Record<string, unknown>) => {
      const dir = join(work, name)
      mkdirSync(dir, { recursive: true })
      writeFileSync(join(dir, 'package.json'), JSON.stringify({ name, version: '2.0.0', ...manifest }))
      writeFileSync(join(dir, 'rows.yml'), `- id: ${name}\n  use: ./index.js\n`)
      writeFileSync(join(dir, 'index.js'), 'export default { name: "x", apply() {} }\n')
      return dir
    }
    const missing = await dsh(['plugin', 'add', './no-such-plugin.tgz'])
    expect(missing.code).toBe(3)
    expect(missing.stderr).toMatch(/^dsh: no such file or directory: .*no-such-plugin\.tgz/)

    const plain = await dsh(['plugin', 'add', fake('not-a-bundle', {})])
    expect(plain.code).toBe(3)
    expect(plain.stderr).toContain('not-a-bundle is not a dsh bundle: its package.json has no "dsh"')

    const newer = await dsh([
      'plugin',
      'add',
      fake('needs-newer-dsh', { dsh: { bundle: 'rows.yml' }, peerDependencies: { '@dsh/agent': '^9.0.0' } }),
    ])
    expect(newer.code).toBe(3)
    expect(newer.stderr).toContain('needs-newer-dsh@2.0.0 needs @dsh/agent@^9.0.0, but this dsh is 0.1.0')

    // Every refusal left the home as it was: here, not there at all.
    expect(existsSync(errorsHome)).toBe(false)
    const unknown = await dsh(['plugin', 'rm', 'never-installed'])
    expect(unknown.code).toBe(3)
    expect(unknown.stderr).toContain('never-installed is neither installed')

    // A package directory is packed and installed as a copy (a link would resolve @dsh/* from the
    // directory's own node_modules, not from this dsh).
    const fromDir = await dsh(['plugin', 'add', join(checkout, 'examples', 'plugin-hello')])
    expect(fromDir.code, fromDir.stderr).toBe(0)
    expect(lstatSync(join(errorsHome, 'node_modules', 'dsh-plugin-hello')).isSymbolicLink()).toBe(false)
    expect(existsSync(join(errorsHome, 'tarballs', 'dsh-plugin-hello-1.0.0.tgz'))).toBe(true)
    expect(readFileSync(join(errorsHome, 'patch.yml'), 'utf8')).toMatch(/^- bundle: dsh-plugin-hello$/m)
  },
  NPM_TIMEOUT,
)
