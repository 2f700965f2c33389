// The packages as users get them: every workspace package packed (`npm pack`), the CLI installed from
// those tarballs with `npm install -g --prefix` into a temp prefix, run from a directory outside the
// checkout, and the SDK installed into a temp Node project. `@dsh/*` comes from a local registry serving
// only the tarballs (registry.ts); third-party packages from npm's cache (`--prefer-offline`).
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import {
  cpSync,
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
import {
  type ChildExit,
  collectExit,
  completionResponse,
  type MockLlmServer,
  startMockLlmServer,
} from '@dsh/test-support'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { type ScopeRegistry, startScopeRegistry } from './registry.js'

const checkout = fileURLToPath(new URL('../..', import.meta.url))
const version = JSON.parse(readFileSync(join(checkout, 'package.json'), 'utf8')).version as string

let work: string
let registry: ScopeRegistry
let server: MockLlmServer
let prefix: string
let home: string
let elsewhere: string

/** Runs a command without blocking this process: the registry and the mock model answer from here. */
function exec(command: string, args: string[], options: { cwd: string; env: NodeJS.ProcessEnv }): Promise<ChildExit> {
  const proc = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] })
  return collectExit(proc)
}

/**
 * Stand-ins for the compilers and make on PATH: each records its call and fails, so an install that tries
 * to build native code is seen even when the package shrugs the failure off (ssh2 does). npm runs its own
 * node-gyp whatever PATH or `npm_config_node_gyp` say, and node-gyp always ends in make and the compiler.
 */
function nativeBuildTrap(dir: string): { env: NodeJS.ProcessEnv; calls(): string[] } {
  const log = join(dir, 'native-build-calls.log')
  const bin = join(dir, 'trap-bin')
  mkdirSync(bin, { recursive: true })
  const record = `#!/bin/sh\necho "$(basename "$0") $*" >> '${log}'\nexit 1\n`
  for (const name of ['cc', 'gcc', 'g++', 'c++', 'clang', 'clang++', 'make', 'cmake']) {
    writeFileSync(join(bin, name), record, { mode: 0o755 })
  }
  return {
    env: { PATH: `${bin}:${process.env.PATH}` },
    calls: () => (existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n') : []),
  }
}

let trap: ReturnType<typeof nativeBuildTrap>
let installMs = 0

/** npm with install scripts on, as users run it: nothing may compile (the trap records any try). */
async function npm(args: string[], cwd: string): Promise<void> {
  const env = { ...process.env, ...trap.env, 'npm_config_@dsh:registry': `${registry.url}/` }
  const flags = ['--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error']
  const result = await exec('npm', [...args, ...flags], { cwd, env })
  if (result.code !== 0) throw new Error(`npm ${args.join(' ')} failed (${result.code}): ${result.stderr}`)
}

/** The user's environment: the installed `dsh` first on PATH, DSH_HOME in a temp dir, the mock model. */
function userEnv(): NodeJS.ProcessEnv {
  return {
    PATH: `${join(prefix, 'bin')}:${process.env.PATH}`,
    HOME: home,
    DSH_HOME: home,
    DEEPSEEK_API_KEY: 'sk-test',
    DEEPSEEK_BASE_URL: server.url,
  }
}

const dsh = (args: string[]): Promise<ChildExit> =>
  exec(join(prefix, 'bin', 'dsh'), args, { cwd: elsewhere, env: userEnv() })

beforeAll(async () => {
  work = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-pack-')))
  for (const dir of ['tarballs', 'prefix', 'home', 'elsewhere']) mkdirSync(join(work, dir))
  ;[prefix, home, elsewhere] = ['prefix', 'home', 'elsewhere'].map((dir) => join(work, dir)) as [string, string, string]
  execFileSync('npm', ['pack', '--workspaces', '--pack-destination', join(work, 'tarballs'), '--loglevel=error'], {
    cwd: checkout,
    stdio: 'ignore',
  })
  registry = await startScopeRegistry(join(work, 'tarballs'))
  server = await startMockLlmServer()
  trap = nativeBuildTrap(work)
  const started = performance.now()
  await npm(['install', '--global', '--prefix', prefix, join(work, 'tarballs', `dsh-cli-${version}.tgz`)], elsewhere)
  installMs = performance.now() - started
})

afterAll(async () => {
  await server?.close()
  await registry?.close()
  if (work) rmSync(work, { recursive: true, force: true })
})

it('installs the CLI with its install scripts on, and nothing compiles native code', async () => {
  // The figure docs/performance.md quotes (a measurement, not a limit: the machine's load moves it).
  console.log(`npm install -g of the packed CLI: ${Math.round(installMs)} ms`)
  expect(trap.calls()).toEqual([])
  const modules = join(prefix, 'lib', 'node_modules', '@dsh', 'cli', 'node_modules')
  // The packages that would compile are optional peers, not installed (node:sqlite, or the user adds them).
  for (const name of ['better-sqlite3', 'ssh2', 'cpu-features'])
    expect(existsSync(join(modules, name)), name).toBe(false)
  expect(existsSync(join(modules, '@lydell', 'node-pty'))).toBe(true)
  // The trap itself: a package built by node-gyp on install (a binding.gyp and one C file) is seen.
  const probe = join(work, 'native-probe')
  mkdirSync(probe)
  writeFileSync(
    join(probe, 'package.json'),
    JSON.stringify({
      name: 'native-probe',
      version: '1.0.0',
      gypfile: true,
      scripts: { install: 'node-gyp rebuild || true' },
    }),
  )
  writeFileSync(join(probe, 'binding.gyp'), "{ 'targets': [ { 'target_name': 'probe', 'sources': [ 'probe.c' ] } ] }")
  writeFileSync(join(probe, 'probe.c'), 'int probe(void) { return 0; }\n')
  execFileSync('npm', ['pack', probe, '--pack-destination', work, '--loglevel=error'], { cwd: work, stdio: 'ignore' })
  const project = join(work, 'probe-project')
  mkdirSync(project)
  writeFileSync(join(project, 'package.json'), '{"name":"probe-project","version":"1.0.0"}')
  await npm(['install', join(work, 'native-probe-1.0.0.tgz')], project)
  expect(trap.calls()).toEqual(expect.arrayContaining([expect.stringMatching(/^(make|cc|gcc|g\+\+|c\+\+) /)]))
})

it('installs the CLI from the tarballs, outside the checkout, at the one version', async () => {
  expect((await dsh(['--version'])).stdout.trim()).toBe(version)
  // Every @dsh package came from the tarballs through the scope registry...
  const installed = readdirSync(join(prefix, 'lib', 'node_modules', '@dsh', 'cli', 'node_modules', '@dsh'))
  expect(installed).toEqual(expect.arrayContaining(['kernel', 'composition', 'bundle-base', 'coding-tools', 'web']))
  for (const name of installed) expect(registry.served.has(`@dsh/${name}`), name).toBe(true)
  // ...and nothing in the installed tree points back into the checkout.
  expect(realpathSync(join(prefix, 'lib', 'node_modules', '@dsh', 'cli')).startsWith(checkout)).toBe(false)
  const config = await dsh(['--dump-config'])
  expect(config.code, config.stderr).toBe(0)
  expect(config.stdout).not.toContain(checkout)
})

it('dsh demo runs keyless and the sample project tests pass', async () => {
  const result = await dsh(['demo'])
  expect(result.code, result.stderr).toBe(0)
})

it('dsh run answers through the mock model and leaves a durable session', async () => {
  server.enqueue(completionResponse({ text: ['All ', 'done.'] }))
  const result = await dsh(['run', 'say', 'done'])
  expect(result.code, result.stderr).toBe(0)
  expect(result.stdout).toBe('All done.\n')
  const sessions = readdirSync(join(home, 'sessions')).filter((name) => name.endsWith('.jsonl'))
  expect(sessions.length).toBeGreaterThan(0)
})

it('without the optional native peers: dsh doctor names the SQLite engine, and SQLite and SSH say what to install', async () => {
  // The engine follows the Node running this test (the installed dsh runs on it): its own node:sqlite
  // from 22.13; before that, none, since the install did not bring better-sqlite3.
  const [major = 0, minor = 0] = process.versions.node.split('.').map(Number)
  const nodeSqlite = major > 22 || (major === 22 && minor >= 13)
  const doctor = await dsh(['doctor'])
  expect(doctor.stdout).toMatch(
    nodeSqlite ? /^ok {4}sqlite +node:sqlite \(/m : /^ok {4}sqlite +none: .*the default JSONL store needs neither/m,
  )
  if (!nodeSqlite) {
    const sqlite = await exec(join(prefix, 'bin', 'dsh'), ['run', 'say', 'done'], {
      cwd: elsewhere,
      env: { ...userEnv(), DSH_SESSION_STORE: 'sqlite' },
    })
    expect(sqlite.code).not.toBe(0)
    expect(sqlite.stderr).toContain('needs SQLite: run dsh on Node 22.13 or later')
    expect(sqlite.stderr).toContain('npm install -g better-sqlite3@12')
  }
  // The SSH world loads ssh2 before it connects: no server is needed to meet its absence.
  const remote = await dsh(['run', '--remote', 'nobody@127.0.0.1:/tmp', 'say', 'done'])
  expect(remote.code).not.toBe(0)
  expect(remote.stderr).toContain('the SSH world needs the ssh2 package')
  expect(remote.stderr).toContain('npm install -g ssh2@1')
})

it('dsh plugin add installs an example plugin from its tarball; its tool runs on the installed dsh', async () => {
  execFileSync('npm', ['pack', join(checkout, 'examples', 'plugin-hello'), '--pack-destination', work], {
    cwd: work,
    stdio: 'ignore',
  })
  // A local tarball needs no registry: npm must not reach for one.
  const plugin = (args: string[]) =>
    exec(join(prefix, 'bin', 'dsh'), ['plugin', ...args], {
      cwd: work,
      env: { ...userEnv(), npm_config_offline: 'true', npm_config_update_notifier: 'false' },
    })
  const added = await plugin(['add', './dsh-plugin-hello-1.0.0.tgz'])
  expect(added.code, added.stderr).toBe(0)
  // The plugin's @dsh/agent is the installed dsh's copy.
  expect(realpathSync(join(home, 'node_modules', '@dsh', 'agent'))).toBe(
    realpathSync(join(prefix, 'lib', 'node_modules', '@dsh', 'cli', 'node_modules', '@dsh', 'agent')),
  )
  expect((await plugin(['ls'])).stdout).toBe('dsh-plugin-hello@1.0.0  enabled\n  hello  dsh-plugin-hello/hello\n')
  const config = await dsh(['--dump-config'])
  expect(config.stdout).toContain('# from bundle dsh-plugin-hello (named by home patch)\n- id: hello\n')

  server.enqueue(completionResponse({ toolCalls: [{ id: 'p1', name: 'hello', arguments: '{"name":"Grace"}' }] }))
  server.enqueue(completionResponse({ text: 'Greeted Grace.' }))
  const before = server.requests.length
  const run = await dsh(['run', '--output', 'json', 'greet Grace'])
  expect(run.code, run.stderr).toBe(0)
  expect(readFileSync(join(elsewhere, 'hello-Grace.txt'), 'utf8')).toBe('Hello, Grace!\n')
  const body = server.requests[before]?.body as { tools?: Array<{ function: { name: string } }> } | undefined
  const offered = body?.tools ?? []
  expect(offered.map((tool) => tool.function.name)).toContain('hello')
  const { sessionId } = JSON.parse(run.stdout) as { sessionId: string }
  const log = readFileSync(join(home, 'sessions', `${sessionId}.jsonl`), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line))
  expect(log.find((event) => event.type === 'tool/result')?.data.message).toMatchObject({
    toolName: 'hello',
    isError: false,
  })

  const removed = await plugin(['rm', 'dsh-plugin-hello'])
  expect(removed.code, removed.stderr).toBe(0)
  expect((await dsh(['--dump-config'])).stdout).not.toContain('dsh-plugin-hello')
})

it('dsh web serves the browser client from the installed @dsh/web package', async () => {
  let proc: ChildProcess | undefined
  try {
    proc = spawn(join(prefix, 'bin', 'dsh'), ['web', '--port', '0'], { cwd: elsewhere, env: userEnv() })
    let stderr = ''
    proc.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk
    })
    const url = await new Promise<string>((resolve, reject) => {
      let stdout = ''
      const timer = setTimeout(() => reject(new Error(`dsh web did not start: ${stderr}`)), 60_000)
      proc?.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
        stdout += chunk
        const match = /listening on (http:\/\/\S+)/.exec(stdout)
        if (match) {
          clearTimeout(timer)
          resolve(match[1] as string)
        }
      })
    })
    const page = await fetch(url)
    expect(page.status).toBe(200)
    const html = await page.text()
    const script = /src="([^"]+\.js)"/.exec(html)?.[1]
    expect(script, html).toBeDefined()
    const asset = await fetch(new URL(script as string, url))
    expect(asset.status).toBe(200)
  } finally {
    proc?.kill('SIGTERM')
  }
})

it('a Node project installs @dsh/sdk from its tarball and runs a prompt through it', async () => {
  const project = join(work, 'sdk-project')
  mkdirSync(project)
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'sdk-user', private: true, type: 'module' }))
  await npm(['install', join(work, 'tarballs', `dsh-sdk-${version}.tgz`)], project)
  writeFileSync(
    join(project, 'prompt.mjs'),
    [
      "import { DshClient } from '@dsh/sdk'",
      'const dsh = new DshClient({ cwd: process.cwd() })',
      "const result = await dsh.run('hello')",
      'await dsh.close()',
      'console.log(JSON.stringify({ text: result.text, reason: result.reason }))',
    ].join('\n'),
  )
  server.enqueue(completionResponse({ text: 'hi from the mock' }))
  const out = await exec(process.execPath, ['prompt.mjs'], { cwd: project, env: userEnv() })
  expect(out.code, out.stderr).toBe(0)
  expect(JSON.parse(out.stdout)).toEqual({ text: 'hi from the mock', reason: 'completed' })
})

it('pip installs the Python client into a fresh venv, and it runs a prompt through the installed dsh', async () => {
  // A copy, so no build files land in the checkout; --no-index: the client has no dependencies and its
  // in-tree backend (python/_build.py) needs none, so this runs without network.
  const source = join(work, 'python-src')
  cpSync(join(checkout, 'python'), source, { recursive: true })
  const venv = join(work, 'venv')
  const created = await exec('python3', ['-m', 'venv', venv], { cwd: work, env: process.env })
  expect(created.code, created.stderr).toBe(0)
  const pip = await exec(join(venv, 'bin', 'pip'), ['install', '--no-index', '--quiet', source], {
    cwd: work,
    env: process.env,
  })
  expect(pip.code, pip.stderr).toBe(0)
  server.enqueue(completionResponse({ text: 'hi from python' }))
  const script = [
    'import json, dsh_client',
    'from dsh_client import DshClient',
    'with DshClient(cwd=".") as dsh:',
    '    result = dsh.run("hello", timeout=60)',
    'print(json.dumps({"text": result.text, "reason": result.reason, "module": dsh_client.__file__}))',
  ].join('\n')
  const run = await exec(join(venv, 'bin', 'python'), ['-c', script], { cwd: elsewhere, env: userEnv() })
  expect(run.code, run.stderr).toBe(0)
  const out = JSON.parse(run.stdout)
  expect(out).toMatchObject({ text: 'hi from python', reason: 'completed' })
  expect(out.module.startsWith(venv)).toBe(true)
})
