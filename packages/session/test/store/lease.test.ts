import { spawn } from 'node:child_process'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { hostname } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { acquireLease, processStartTime } from '../../src/store/lease.js'
import { tempDir } from './helpers.js'

const holder = fileURLToPath(new URL('./fixtures/hold-lease.mjs', import.meta.url))
const dist = fileURLToPath(new URL('../../dist/store/lease.js', import.meta.url))

describe('the session lease', () => {
  it('refuses a second opener while the owner lives and names the owner', () => {
    using dir = tempDir()
    const lease = acquireLease(dir.path, 's')
    expect(JSON.parse(readFileSync(join(dir.path, 's.lock'), 'utf8'))).toMatchObject({ pid: process.pid })
    expect(() => acquireLease(dir.path, 's')).toThrow(
      expect.objectContaining({
        code: 'SESSION_LEASED',
        message: expect.stringContaining(`pid ${process.pid}`),
        facts: expect.objectContaining({ pid: process.pid, host: hostname() }),
      }),
    )
    lease.release()
    lease.release()
    expect(existsSync(join(dir.path, 's.lock'))).toBe(false)
    acquireLease(dir.path, 's').release()
  })

  it('reclaims a lock whose owner is dead, whose pid was reused, or that a crash left unreadable', () => {
    using dir = tempDir()
    const lock = join(dir.path, 's.lock')
    writeFileSync(lock, JSON.stringify({ pid: 2 ** 22 + 11, host: hostname(), acquiredAt: 0, token: 'x' }))
    acquireLease(dir.path, 's').release()
    const start = processStartTime(process.pid)
    if (start !== undefined) {
      writeFileSync(
        lock,
        JSON.stringify({ pid: process.pid, startTime: start - 1, host: hostname(), acquiredAt: 0, token: 'y' }),
      )
      acquireLease(dir.path, 's').release()
    }
    writeFileSync(lock, '{"pid":')
    const lease = acquireLease(dir.path, 's')
    expect(lease.owner.pid).toBe(process.pid)
    lease.release()
  })

  it.skipIf(!existsSync(dist))('refuses while another live process holds it; reclaims once it was killed', async () => {
    using dir = tempDir()
    const child = spawn(process.execPath, [holder, dir.path, 'x'], { stdio: ['ignore', 'pipe', 'inherit'] })
    await new Promise<void>((resolve) =>
      child.stdout.on('data', (d: Buffer) => d.toString().includes('HELD') && resolve()),
    )
    expect(() => acquireLease(dir.path, 'x')).toThrow(
      expect.objectContaining({ code: 'SESSION_LEASED', message: expect.stringContaining(`pid ${child.pid}`) }),
    )
    child.kill('SIGKILL')
    await new Promise((resolve) => child.on('close', resolve))
    acquireLease(dir.path, 'x').release()
  })
})
