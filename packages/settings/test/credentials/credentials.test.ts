import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context, HarnessError, Service } from '@dsh/kernel'
import { describe, expect, it } from 'vitest'
import CredentialsService, { parseDotenv } from '../../src/credentials/index.js'

const SECRET = 'sk-very-secret-value-123'

async function fixture(env: Record<string, string | undefined> = {}) {
  const root = await mkdtemp(join(tmpdir(), 'dsh-cred-'))
  const home = join(root, 'home')
  const cwd = join(root, 'cwd')
  await mkdir(cwd, { recursive: true })
  const ctx = new Context()
  const fiber = ctx.plugin(CredentialsService, { home, cwd, env })
  await fiber
  return {
    ctx,
    home,
    cwd,
    async [Symbol.asyncDispose]() {
      await fiber.dispose()
      await rm(root, { recursive: true, force: true })
    },
  }
}

describe('ctx.credentials', () => {
  it('resolves env first, then the credentials file, then ./.env, then $DSH_HOME/.env', async () => {
    await using f = await fixture({ FROM_ENV: 'env-value' })
    await mkdir(f.home, { recursive: true })
    await writeFile(join(f.home, '.env'), 'HOME_ONLY=home-dotenv\nBOTH=home\n')
    await writeFile(join(f.cwd, '.env'), '# comment\nexport BOTH="cwd"\nCWD_ONLY=\'single\' \nFROM_ENV=shadowed\n')
    await f.ctx.credentials.set('STORED', 'stored-value')
    await f.ctx.credentials.set('FROM_ENV', 'shadowed-too')
    expect(await f.ctx.credentials.resolve('FROM_ENV')).toEqual({
      name: 'FROM_ENV',
      value: 'env-value',
      source: 'env',
      location: 'environment',
    })
    expect(await f.ctx.credentials.locate('STORED')).toEqual({
      name: 'STORED',
      source: 'credentials-file',
      location: join(f.home, '.credentials.yaml'),
    })
    expect(await f.ctx.credentials.get('BOTH')).toBe('cwd')
    expect(await f.ctx.credentials.get('CWD_ONLY')).toBe('single')
    expect((await f.ctx.credentials.resolve('HOME_ONLY'))?.source).toBe('dotenv-home')
    expect(await f.ctx.credentials.get('MISSING')).toBeUndefined()
  })

  it('writes the credentials file atomically with mode 0600, and rotation applies to the next lookup', async () => {
    await using f = await fixture()
    await f.ctx.credentials.set('DEEPSEEK_API_KEY', 'first')
    expect(await f.ctx.credentials.get('DEEPSEEK_API_KEY')).toBe('first')
    await f.ctx.credentials.set('DEEPSEEK_API_KEY', 'second')
    expect(await f.ctx.credentials.get('DEEPSEEK_API_KEY')).toBe('second')
    const file = join(f.home, '.credentials.yaml')
    expect((await stat(file)).mode & 0o777).toBe(0o600)
    expect(await readdir(f.home)).toEqual(['.credentials.yaml'])
    expect(await f.ctx.credentials.names()).toEqual(['DEEPSEEK_API_KEY'])
    expect(await f.ctx.credentials.delete('DEEPSEEK_API_KEY')).toBe(true)
    expect(await f.ctx.credentials.get('DEEPSEEK_API_KEY')).toBeUndefined()
  })

  it('never echoes a value in its errors', async () => {
    await using f = await fixture()
    await mkdir(f.home, { recursive: true })
    await writeFile(join(f.home, '.credentials.yaml'), `DEEPSEEK_API_KEY: ${SECRET}\n  bad: [indent\n`, { mode: 0o600 })
    const error = await f.ctx.credentials.get('DEEPSEEK_API_KEY').catch((e: unknown) => e)
    expect(HarnessError.is(error, 'CREDENTIALS_FILE_INVALID')).toBe(true)
    expect(JSON.stringify(error)).not.toContain(SECRET)
    expect(String((error as Error).message)).not.toContain(SECRET)
    const bad = await f.ctx.credentials.set('DEEPSEEK_API_KEY', `${SECRET}\nX`).catch((e: unknown) => e)
    expect(HarnessError.is(bad, 'INVALID_CREDENTIAL_VALUE')).toBe(true)
    expect(JSON.stringify(bad) + (bad as Error).message).not.toContain(SECRET)
    await expect(f.ctx.credentials.get('not a name')).rejects.toMatchObject({ code: 'INVALID_CREDENTIAL_NAME' })
    expect(await readFile(join(f.home, '.credentials.yaml'), 'utf8')).toContain(SECRET)
  })

  it("uses the launcher's home and cwd when no dirs are configured", async () => {
    const root = await mkdtemp(join(tmpdir(), 'dsh-cred-'))
    class FakeLauncher extends Service {
      static readonly provide = 'launcher'
      readonly config = { home: join(root, 'h'), cwd: root }
      constructor(ctx: Context) {
        super(ctx, 'launcher')
      }
    }
    const ctx = new Context()
    await ctx.plugin(FakeLauncher)
    await ctx.plugin(CredentialsService, { env: {} })
    await writeFile(join(root, '.env'), 'A=from-launcher-cwd\n')
    expect(await ctx.credentials.get('A')).toBe('from-launcher-cwd')
    expect(ctx.credentials.file).toBe(join(root, 'h', '.credentials.yaml'))
    await rm(root, { recursive: true, force: true })
  })

  it('parses dotenv syntax', () => {
    expect(parseDotenv('A=1\nexport B = "two\\nlines"\nC=plain # note\n#D=no\nbad line\nE=\n')).toEqual({
      A: '1',
      B: 'two\nlines',
      C: 'plain',
      E: '',
    })
  })
})
