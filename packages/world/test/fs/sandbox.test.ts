import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context, HarnessError } from '@dsh/kernel'
import LocalSandboxPolicy from '@dsh/world/sandbox/policy'
import { afterEach, describe, expect, it } from 'vitest'
import { apply as observation } from '../../src/fs/observation.js'
import SandboxFs from '../../src/fs/sandbox.js'

const dirs: string[] = []
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

// The "outside" must not be under a temp dir: those are writable roots in workspace-write.
function outsideDir() {
  const dir = mkdtempSync(join(existsSync('/var/tmp') ? '/var/tmp' : process.cwd(), 'dsh-outside-'))
  dirs.push(dir)
  return realpathSync(dir)
}

async function setup(mode: 'read-only' | 'workspace-write' | 'danger-full-access', extra?: (ctx: Context) => void) {
  const ws = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-ws-')))
  dirs.push(ws)
  const root = new Context()
  await root.plugin(LocalSandboxPolicy, { mode, workspaceRoot: ws })
  await root.plugin(SandboxFs, { cwd: ws })
  extra?.(root)
  return { root, ws, fs: root.fs }
}

const code = async (promise: Promise<unknown>) => {
  try {
    await promise
  } catch (error) {
    return HarnessError.is(error) ? error.code : String(error)
  }
  return 'resolved'
}

describe('ctx.fs (sandbox fence)', () => {
  it('read-only refuses every write and edit but still reads', async () => {
    const { fs, ws } = await setup('read-only')
    writeFileSync(join(ws, 'f'), 'x')
    expect((await fs.readText('f')).text).toBe('x')
    expect(await code(fs.writeText('g', 'y', { kind: 'createIfAbsent' }))).toBe('FS_SANDBOX_DENIED')
    expect(await code(fs.editText('f', [{ oldText: 'x', newText: 'z' }]))).toBe('FS_SANDBOX_DENIED')
    expect(existsSync(join(ws, 'g'))).toBe(false)
    expect(readFileSync(join(ws, 'f'), 'utf8')).toBe('x')
  })

  it('workspace-write allows the workspace, refuses outside paths and links that lead outside', async () => {
    const { fs, ws } = await setup('workspace-write')
    const outside = outsideDir()
    await fs.writeText('in.txt', 'ok', { kind: 'createIfAbsent' })
    expect(await code(fs.writeText(join(outside, 'x'), 'no', { kind: 'createIfAbsent' }))).toBe('FS_SANDBOX_DENIED')
    expect(await code(fs.writeText('../../escape', 'no', { kind: 'overwrite' }))).toMatch(/FS_SANDBOX_DENIED|resolved/)
    symlinkSync(outside, join(ws, 'link'))
    const error = (await fs.writeText('link/x', 'no', { kind: 'createIfAbsent' }).catch((e) => e)) as HarnessError
    expect(error.code).toBe('FS_SANDBOX_DENIED')
    expect(error.message).toContain(`resolves to ${join(outside, 'x')}`)
    expect(existsSync(join(outside, 'x'))).toBe(false)
  })

  it('refuses a symlink swapped to point outside between the check and the write', async () => {
    const ws = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-ws-')))
    dirs.push(ws)
    const outside = outsideDir()
    mkdirSync(join(ws, 'inside'))
    symlinkSync(join(ws, 'inside'), join(ws, 'link'))
    class Racy extends SandboxFs {
      protected override async beforePublish(): Promise<void> {
        unlinkSync(join(ws, 'link'))
        symlinkSync(outside, join(ws, 'link'))
      }
    }
    const root = new Context()
    await root.plugin(LocalSandboxPolicy, { mode: 'workspace-write', workspaceRoot: ws })
    await root.plugin(Racy, { cwd: ws })
    const error = await root.fs.writeText('link/file.txt', 'payload', { kind: 'createIfAbsent' }).catch((e) => e)
    expect(HarnessError.is(error, 'FS_SANDBOX_DENIED')).toBe(true)
    expect(existsSync(join(outside, 'file.txt'))).toBe(false)
    expect(existsSync(join(ws, 'inside', 'file.txt'))).toBe(false)
  })

  it('a per-call escalated policy widens one call only; danger-full-access writes anywhere', async () => {
    const { root, fs } = await setup('read-only')
    const outside = outsideDir()
    const wide = root.sandboxPolicy.resolve(undefined, 'danger-full-access')
    await fs.writeText(join(outside, 'y'), 'ok', { kind: 'createIfAbsent' }, { policy: wide })
    expect(readFileSync(join(outside, 'y'), 'utf8')).toBe('ok')
    expect(await code(fs.writeText(join(outside, 'z'), 'no', { kind: 'createIfAbsent' }))).toBe('FS_SANDBOX_DENIED')
  })

  it('the observation policy requires a read before an edit and refuses a file changed since', async () => {
    const { root, ws } = await setup('workspace-write', (ctx) => ctx.plugin({ name: 'obs', apply: observation }))
    writeFileSync(join(ws, 'f.ts'), 'a\n')
    const intent = (kind: 'write' | 'edit', current: string | undefined) =>
      root.waterfall(
        'fs/mutation-intent',
        { sessionId: 's', path: join(ws, 'f.ts'), kind, current: current as never },
        async () => ({
          action: 'allow' as const,
        }),
      )
    const v1 = (await root.fs.version('f.ts')) as string
    expect(await intent('edit', v1)).toMatchObject({ action: 'deny', code: 'FS_NOT_OBSERVED' })
    expect(await intent('write', v1)).toMatchObject({ action: 'deny', code: 'FS_NOT_OBSERVED' })
    expect(await intent('write', undefined)).toEqual({ action: 'allow' })
    root.emit('fs/observed', { sessionId: 's', path: join(ws, 'f.ts'), version: v1 as never })
    expect(await intent('edit', v1)).toEqual({ action: 'allow', expectedVersion: v1 })
    writeFileSync(join(ws, 'f.ts'), 'b\n')
    const v2 = (await root.fs.version('f.ts')) as string
    const changed = await intent('edit', v2)
    expect(changed).toMatchObject({ action: 'deny', code: 'FS_VERSION_CONFLICT' })
    expect((changed as { message: string }).message).toMatch(/changed on disk.*Read it again/)
    // Another session has observed nothing.
    const other = await root.waterfall(
      'fs/mutation-intent',
      { sessionId: 't', path: join(ws, 'f.ts'), kind: 'edit', current: v2 as never },
      async () => ({ action: 'allow' as const }),
    )
    expect(other).toMatchObject({ code: 'FS_NOT_OBSERVED' })
  })
})
