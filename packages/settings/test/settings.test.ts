import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context, HarnessError } from '@dsh/kernel'
import { describe, expect, it } from 'vitest'
import SettingsService from '../src/index.js'

declare module '../src/index.js' {
  interface SettingsMap {
    'test.mode': 'fast' | 'slow'
    'test.theme': string
    'test.limit': number
    'test.endpoints': Record<string, { baseUrl: string; apiKey?: string }>
  }
}

async function fixture(env: Record<string, string | undefined> = {}) {
  const root = await mkdtemp(join(tmpdir(), 'dsh-settings-'))
  const home = join(root, 'home')
  const cwd = join(root, 'project')
  await mkdir(join(cwd, '.dsh'), { recursive: true })
  const ctx = new Context()
  const fiber = ctx.plugin(SettingsService, { home, cwd, env })
  await fiber
  const define = (target: Context = ctx) => {
    target.settings.define('test.mode', {
      schema: { type: 'string', enum: ['fast', 'slow'] },
      default: 'fast',
      description: 'how fast',
      env: 'TEST_MODE',
    })
    target.settings.define('test.limit', {
      schema: { type: 'integer', minimum: 1 },
      default: 10,
      description: 'a limit',
      env: 'TEST_LIMIT',
    })
    target.settings.define('test.endpoints', {
      schema: {
        type: 'object',
        additionalProperties: {
          type: 'object',
          properties: { baseUrl: { type: 'string', pattern: '^https?://' }, apiKey: { type: 'string' } },
          required: ['baseUrl'],
          additionalProperties: false,
        },
      },
      default: {},
      description: 'endpoints',
    })
  }
  return {
    ctx,
    home,
    cwd,
    userFile: join(home, 'settings.yaml'),
    projectFile: join(cwd, '.dsh', 'settings.yaml'),
    define,
    async [Symbol.asyncDispose]() {
      await fiber.dispose()
      await rm(root, { recursive: true, force: true })
    },
  }
}

function thrown(run: () => unknown): HarnessError {
  try {
    run()
  } catch (error) {
    if (HarnessError.is(error)) return error
    throw error
  }
  throw new Error('expected a HarnessError')
}

describe('ctx.settings', () => {
  it('takes each value from the highest layer: default < user < project < env < flag, saying where', async () => {
    await using f = await fixture({ TEST_LIMIT: '30' })
    f.define()
    expect(f.ctx.settings.resolve('test.mode')).toEqual({ key: 'test.mode', value: 'fast', source: 'default' })
    await mkdir(f.home, { recursive: true })
    await writeFile(f.userFile, 'test.mode: slow\ntest.limit: 20\n')
    expect(f.ctx.settings.resolve('test.mode')).toEqual({
      key: 'test.mode',
      value: 'slow',
      source: 'user',
      location: f.userFile,
    })
    await writeFile(f.projectFile, 'test.mode: fast\n')
    f.ctx.settings.trust.grant(f.cwd)
    expect(f.ctx.settings.resolve('test.mode')).toMatchObject({
      value: 'fast',
      source: 'project',
      location: f.projectFile,
    })
    expect(f.ctx.settings.resolve('test.limit')).toEqual({
      key: 'test.limit',
      value: 30,
      source: 'env',
      location: 'TEST_LIMIT',
    })
    const dispose = f.ctx.settings.setFlag('test.limit', '40', '--limit')
    expect(f.ctx.settings.get('test.limit')).toBe(40)
    expect(f.ctx.settings.resolve('test.limit')).toMatchObject({ source: 'flag', location: '--limit' })
    dispose()
    expect(f.ctx.settings.get('test.limit')).toBe(30)
  })

  it('reads only projectSafe keys from the project file of a folder that is not trusted, or changed since', async () => {
    await using f = await fixture()
    f.define()
    f.ctx.settings.define('test.theme', {
      schema: { type: 'string' },
      description: 'a plain preference',
      projectSafe: true,
    })
    await writeFile(f.projectFile, 'test.mode: slow\ntest.theme: dark\n')
    expect(f.ctx.settings.resolve('test.mode').source).toBe('default')
    expect(f.ctx.settings.get('test.theme')).toBe('dark')
    expect(f.ctx.settings.ignoredProjectKeys()).toEqual(['test.mode'])
    f.ctx.settings.trust.grant(f.cwd)
    expect(f.ctx.settings.resolve('test.mode')).toMatchObject({ value: 'slow', source: 'project' })
    expect(f.ctx.settings.ignoredProjectKeys()).toEqual([])
    await writeFile(f.projectFile, 'test.mode: fast\ntest.theme: dark\n')
    expect(f.ctx.settings.resolve('test.mode').source).toBe('default')
    // A write through the service does not launder an edit made behind its back.
    f.ctx.settings.set('test.limit', 5, { scope: 'project' })
    expect(f.ctx.settings.resolve('test.limit').source).toBe('default')
  })

  it('refuses an invalid file value with one error naming the file, the key and the allowed values', async () => {
    await using f = await fixture()
    f.define()
    await mkdir(f.home, { recursive: true })
    await writeFile(f.userFile, 'test.mode: medium\n')
    const error = thrown(() => f.ctx.settings.get('test.mode'))
    expect(error.code).toBe('CONFIG_SETTINGS_INVALID')
    expect(error.message).toContain(f.userFile)
    expect(error.message).toContain('"test.mode"')
    expect(error.message).toContain('must be one of fast, slow')
    expect(thrown(() => f.ctx.settings.check()).message).toContain(f.userFile)
  })

  it('checks every layer, not only the winning one, and warns about undeclared keys', async () => {
    await using f = await fixture({ TEST_MODE: 'fast' })
    f.define()
    await writeFile(f.projectFile, 'test.mode: turbo\ntest.limt: 3\n')
    f.ctx.settings.trust.grant(f.cwd)
    expect(f.ctx.settings.get('test.mode')).toBe('fast')
    const error = thrown(() => f.ctx.settings.check())
    expect(error.message).toContain(`${f.projectFile}: setting "test.mode" must be one of fast, slow`)
    await writeFile(f.projectFile, 'test.limt: 3\n')
    f.ctx.settings.trust.grant(f.cwd)
    expect(f.ctx.settings.check()).toEqual([
      `${f.projectFile}: unknown setting "test.limt" (did you mean "test.limit"?) (declared keys: test.endpoints, test.limit, test.mode)`,
    ])
  })

  it('names the field path of a nested problem and the shape it expects', async () => {
    await using f = await fixture()
    f.define()
    await mkdir(f.home, { recursive: true })
    await writeFile(f.userFile, 'test.endpoints:\n  local:\n    baseUrl: 3\n    modle: x\n  other: []\n')
    const message = thrown(() => f.ctx.settings.check()).message
    expect(message).toContain(`${f.userFile}: test.endpoints.local: unknown field "modle"`)
    expect(message).toContain('test.endpoints.local.baseUrl: must be a string')
    expect(message).toContain('test.endpoints.other: must be a mapping')
  })

  it('names an invalid environment variable or flag', async () => {
    await using f = await fixture({ TEST_LIMIT: '0' })
    f.define()
    expect(thrown(() => f.ctx.settings.get('test.limit')).message).toMatch(
      /^environment variable TEST_LIMIT: setting "test.limit" must be >= 1/,
    )
    expect(thrown(() => f.ctx.settings.setFlag('test.mode', 'warp', '--mode')).message).toMatch(
      /^flag --mode: setting "test.mode"/,
    )
  })

  it('writes the user or project file keeping comments, reads text by the schema type, writes nothing invalid', async () => {
    await using f = await fixture()
    f.define()
    await mkdir(f.home, { recursive: true })
    await writeFile(f.userFile, '# my settings\ntest.mode: slow # I like it slow\n')
    expect(f.ctx.settings.set('test.limit', '25', { text: true })).toMatchObject({ value: 25, source: 'user' })
    const text = await readFile(f.userFile, 'utf8')
    expect(text).toContain('# my settings')
    expect(text).toContain('test.mode: slow # I like it slow')
    expect(text).toContain('test.limit: 25')
    const error = thrown(() => f.ctx.settings.set('test.limit', 'many', { text: true }))
    expect(error.code).toBe('CONFIG_SETTINGS_INVALID')
    expect(error.message).toContain('nothing was written')
    expect(await readFile(f.userFile, 'utf8')).toBe(text)

    // In a trusted folder, the user's own writes to the project file keep it trusted.
    f.ctx.settings.trust.grant(f.cwd)
    f.ctx.settings.set('test.endpoints.local.baseUrl', 'http://127.0.0.1:1234/v1', { scope: 'project', text: true })
    expect(f.ctx.settings.get('test.endpoints')).toEqual({ local: { baseUrl: 'http://127.0.0.1:1234/v1' } })
    expect(f.ctx.settings.resolve('test.endpoints').location).toBe(f.projectFile)
    expect(thrown(() => f.ctx.settings.set('test.endpoints.other.apiKey', 'X', { text: true })).message).toContain(
      'test.endpoints.other: missing field "baseUrl"',
    )
    expect(f.ctx.settings.unset('test.endpoints.local', { scope: 'project' })).toBe(true)
    expect(f.ctx.settings.get('test.endpoints')).toEqual({})
    expect(f.ctx.settings.unset('test.mode')).toBe(true)
    expect(await readFile(f.userFile, 'utf8')).not.toContain('test.mode')
    expect(f.ctx.settings.unset('test.mode')).toBe(false)
  })

  it('says which keys exist when asked for an unknown one', async () => {
    await using f = await fixture()
    f.define()
    const error = thrown(() => f.ctx.settings.set('test.mood', 'x'))
    expect(error.code).toBe('CONFIG_SETTING_UNKNOWN')
    expect(error.message).toContain('test.endpoints, test.limit, test.mode')
  })

  it('removes a key when the plugin that declared it unloads, and refuses a second declaration', async () => {
    await using f = await fixture()
    const fiber = f.ctx.plugin({ name: 'owner', inject: ['settings'], apply: (ctx: Context) => f.define(ctx) })
    await fiber
    expect(f.ctx.settings.keys()).toEqual(['test.endpoints', 'test.limit', 'test.mode'])
    expect(thrown(() => f.define()).code).toBe('DUPLICATE_SETTING')
    await fiber.dispose()
    expect(f.ctx.settings.keys()).toEqual([])
  })

  it('emits settings/changed for writes and flags', async () => {
    await using f = await fixture()
    f.define()
    const seen: string[] = []
    f.ctx.on('settings/changed', (change) => void seen.push(`${change.key}:${change.source}`))
    f.ctx.settings.set('test.mode', 'slow')
    f.ctx.settings.setFlag('test.limit', 3, '--limit')
    expect(seen).toEqual(['test.mode:user', 'test.limit:flag'])
  })

  it('trusts a default at declaration and reports one that breaks its schema through defaultProblems', async () => {
    await using f = await fixture()
    f.define()
    expect(f.ctx.settings.defaultProblems()).toEqual([])
    f.ctx.settings.define('test.broken' as 'test.limit', {
      schema: { type: 'integer', minimum: 1 },
      default: 0,
      description: 'a default below its minimum',
    })
    expect(f.ctx.settings.defaultProblems()).toEqual([
      'setting "test.broken": its default breaks its schema: must be >= 1',
    ])
  })
})
