// `dsh config` and the settings layers as users meet them: the built binary, DSH_HOME in a temp dir,
// the model behind the mock SSE server. Outcomes are the files on disk and the requests the server saw.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { completionResponse, type MockLlmServer, startMockLlmServer } from '@dsh/test-support'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { runDsh } from './dsh-child.js'

let home: string
let project: string
let server: MockLlmServer

beforeEach(async () => {
  home = mkdtempSync(join(tmpdir(), 'dsh-config-'))
  project = join(home, 'project')
  mkdirSync(project)
  server = await startMockLlmServer()
})
afterEach(async () => {
  await server.close()
  rmSync(home, { recursive: true, force: true })
})

function dsh(args: string[], env: Record<string, string> = {}) {
  return runDsh(args, { home, cwd: project, modelUrl: server.url, env })
}

describe('dsh config', () => {
  it('set writes the user file keeping its comments, and the next run uses the model', async () => {
    writeFileSync(join(home, 'settings.yaml'), '# my defaults\n')
    const set = await dsh(['config', 'set', 'model', 'deepseek:deepseek-flash'])
    expect(set.code).toBe(0)
    expect(readFileSync(join(home, 'settings.yaml'), 'utf8')).toMatch(
      /^# my defaults\n+model: deepseek:deepseek-flash\n$/,
    )
    const get = await dsh(['config', 'get', 'model', '--json'])
    expect(JSON.parse(get.stdout)).toEqual({
      key: 'model',
      value: 'deepseek:deepseek-flash',
      source: 'user',
      location: join(home, 'settings.yaml'),
    })
    server.enqueue(completionResponse({ text: 'ok' }))
    expect((await dsh(['run', 'hi'])).code).toBe(0)
    expect(server.requests[0]?.body.model).toBe('deepseek-flash')
  })

  it('layers project < env < --set, and list says where each value came from', async () => {
    expect((await dsh(['config', 'set', '--project', 'model', 'deepseek:deepseek-v4-pro'])).code).toBe(0)
    expect(readFileSync(join(project, '.dsh', 'settings.yaml'), 'utf8')).toBe('model: deepseek:deepseek-v4-pro\n')
    const fromEnv = await dsh(['config', 'list', '--json'], { DSH_MODEL: 'deepseek-flash' })
    expect(JSON.parse(fromEnv.stdout).find((item: { key: string }) => item.key === 'model')).toMatchObject({
      value: 'deepseek-flash',
      source: 'env',
      location: 'DSH_MODEL',
    })
    const fromFlag = await dsh(['--set', 'model=deepseek:other', 'config', 'get', 'model', '--json'])
    expect(JSON.parse(fromFlag.stdout)).toMatchObject({
      value: 'deepseek:other',
      source: 'flag',
      location: '--set model',
    })
  })

  it('a bad value in settings.yaml is one error naming the file and the key, exit 3, before any request', async () => {
    writeFileSync(join(home, 'settings.yaml'), 'model: two words\n')
    const result = await dsh(['run', 'hi'])
    expect(result.code).toBe(3)
    expect(result.stderr).toContain(`${join(home, 'settings.yaml')}: setting "model"`)
    expect(result.stderr).toContain('allowed: provider:model')
    expect(server.requests).toHaveLength(0)
    // dsh config still works, so the value can be repaired.
    expect((await dsh(['config', 'set', 'model', 'deepseek:deepseek-flash'])).code).toBe(0)
    expect(readFileSync(join(home, 'settings.yaml'), 'utf8')).toBe('model: deepseek:deepseek-flash\n')
  })

  it('refuses to write an invalid value and names the providers it knows', async () => {
    const result = await dsh(['config', 'set', 'model', 'nosuch:model'])
    expect(result.code).toBe(3)
    expect(result.stderr).toContain('no loaded row serves')
    expect(result.stderr).toContain('nothing was written')
  })

  it('stores a credential name in the credentials file and never prints its value', async () => {
    const set = await dsh(['config', 'set', 'EXAMPLE_API_KEY', 'sk-secret-value'])
    expect(set.code).toBe(0)
    expect(readFileSync(join(home, '.credentials.yaml'), 'utf8')).toContain('EXAMPLE_API_KEY: sk-secret-value')
    const get = await dsh(['config', 'get', 'EXAMPLE_API_KEY'])
    expect(get.stdout).toContain('EXAMPLE_API_KEY is set (credentials-file')
    expect(get.stdout + get.stderr).not.toContain('sk-secret-value')
  })
})

describe('dsh config list and passwords inside URLs', () => {
  it('masks the password of a URL setting in the table and in --json', async () => {
    // Any URL setting: an endpoint here, `session.store` in the next test.
    writeFileSync(
      join(home, 'settings.yaml'),
      'endpoints:\n  local:\n    baseUrl: http://alice:s3cret@127.0.0.1:9/v1\n',
    )
    for (const args of [
      ['config', 'list'],
      ['config', 'list', '--json'],
    ]) {
      const list = await dsh(args)
      expect(list.code).toBe(0)
      expect(list.stdout).not.toContain('s3cret')
      expect(list.stdout).toContain('http://alice:***@127.0.0.1:9/v1')
    }
    // The file keeps the real value: the mask is on output only.
    expect(readFileSync(join(home, 'settings.yaml'), 'utf8')).toContain('alice:s3cret@')
  })

  it('works while the PostgreSQL store it names is down, and get/set mask its password', async () => {
    // Port 1 on loopback refuses at once: the store is configured and unreachable.
    const url = 'postgres://bob:hunter2@127.0.0.1:1/sessions'
    writeFileSync(join(home, 'settings.yaml'), `session.store: ${url}\n`)
    const get = await dsh(['config', 'get', 'session.store'])
    expect(get.code, get.stderr).toBe(0)
    expect(get.stdout.trim()).toBe('postgres://bob:***@127.0.0.1:1/sessions')
    const json = await dsh(['config', 'get', 'session.store', '--json'])
    expect(json.code, json.stderr).toBe(0)
    expect(JSON.parse(json.stdout)).toMatchObject({ value: 'postgres://bob:***@127.0.0.1:1/sessions', source: 'user' })
    const list = await dsh(['config', 'list'])
    expect(list.code, list.stderr).toBe(0)
    expect(list.stdout).toContain('session.store = postgres://bob:***@127.0.0.1:1/sessions')
    const set = await dsh(['config', 'set', 'session.store', 'postgres://bob:other-pw@127.0.0.1:1/sessions'])
    expect(set.code, set.stderr).toBe(0)
    for (const run of [get, json, list, set]) {
      expect(run.stdout + run.stderr).not.toMatch(/hunter2|other-pw|ECONNREFUSED/)
    }
    expect(readFileSync(join(home, 'settings.yaml'), 'utf8')).toBe(
      'session.store: postgres://bob:other-pw@127.0.0.1:1/sessions\n',
    )
    // Back to files: the repair itself needs no store either.
    expect((await dsh(['config', 'set', 'session.store', 'jsonl'])).code).toBe(0)
    expect(readFileSync(join(home, 'settings.yaml'), 'utf8')).toBe('session.store: jsonl\n')
  })
})

describe('dsh config list and dsh models agree on the model and its keys', () => {
  /** The lines after config list's `# where ...` heading, and dsh models' same lines on stderr. */
  const fromList = (stdout: string) => stdout.slice(stdout.indexOf('# where the default model')).split('\n').slice(1)
  const fromModels = (stderr: string) =>
    stderr
      .split('\n')
      .filter((line) => line.startsWith('dsh: ') && !line.includes('dsh config set model'))
      .map((line) => line.slice('dsh: '.length))

  it('name the same default model, where each key comes from and where requests go', async () => {
    const env = { ANTHROPIC_API_KEY: 'sk-ant-test', DEEPSEEK_BASE_URL: server.url }
    const set = await runDsh(['config', 'set', 'DEEPSEEK_API_KEY', 'sk-stored'], { home, cwd: project, env })
    expect(set.code, set.stderr).toBe(0)
    const list = await runDsh(['config', 'list'], { home, cwd: project, env })
    const models = await runDsh(['models'], { home, cwd: project, env })
    expect(list.code, list.stderr).toBe(0)
    expect(models.code, models.stderr).toBe(0)
    expect(list.stdout).toMatch(/^model = \(unset: runs use deepseek:deepseek-v4-pro\)/m)
    const lines = fromList(list.stdout).filter(Boolean)
    expect(lines).toEqual(fromModels(models.stderr))
    expect(lines[0]).toBe("default model deepseek:deepseek-v4-pro (model is unset: deepseek's default)")
    expect(lines).toContain(
      `  deepseek: usable; key: DEEPSEEK_API_KEY from ${join(home, '.credentials.yaml')}; base URL ${server.url} (DEEPSEEK_BASE_URL overrides)`,
    )
    expect(lines.find((line) => line.startsWith('  anthropic:'))).toMatch(
      /^ {2}anthropic: usable; key: ANTHROPIC_API_KEY from (the )?environment/,
    )
    // Both list the models of the usable providers only.
    expect(models.stdout).toMatch(/^deepseek:/m)
    expect(models.stdout).toMatch(/^anthropic:/m)
    expect(models.stdout).not.toMatch(/^openai:/m)
  })

  it('both say when the default model has no key behind it', async () => {
    writeFileSync(join(home, 'settings.yaml'), 'model: anthropic:claude-sonnet-4-5\n')
    const env = { DEEPSEEK_API_KEY: 'sk-test', DEEPSEEK_BASE_URL: server.url }
    const list = await runDsh(['config', 'list'], { home, cwd: project, env })
    const models = await runDsh(['models'], { home, cwd: project, env })
    const lines = fromList(list.stdout).filter(Boolean)
    expect(lines).toEqual(fromModels(models.stderr))
    expect(lines[0]).toBe(
      `default model anthropic:claude-sonnet-4-5 (model setting, user ${join(home, 'settings.yaml')}): not usable, no key (set ANTHROPIC_OAUTH_TOKEN or ANTHROPIC_API_KEY)`,
    )
    expect(lines).toContain(
      `  deepseek: usable; key: DEEPSEEK_API_KEY from environment; base URL ${server.url} (DEEPSEEK_BASE_URL overrides)`,
    )
  })
})
