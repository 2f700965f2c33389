// Bad input at the web host's edge gets a 4xx that says what to send instead, never a 500.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { call, startHost } from './harness.js'

describe('web host input checks', () => {
  it('answers a request path that is not a plain path with 400, not a 500', async () => {
    await using host = await startHost()
    for (const path of ['//', '//api/sessions', '//evil.example/x']) {
      const answer = await call(host.base, 'GET', path)
      expect(answer.status).toBe(400)
      expect(answer.body.error).toMatchObject({ code: 'BAD_REQUEST_TARGET' })
      expect(String((answer.body.error as { message: string }).message)).toContain('a path starts with a single "/"')
    }
    // The host still serves ordinary requests afterwards.
    expect((await call(host.base, 'GET', '/api/sessions')).status).toBe(200)
  })

  it('refuses a relative, empty or missing-directory cwd with 400 and creates no session', async () => {
    await using host = await startHost()
    const scratch = mkdtempSync(join(tmpdir(), 'dsh-web-cwd-'))
    try {
      writeFileSync(join(scratch, 'file.txt'), 'not a directory')
      const cases: Array<[string, string]> = [
        ['project', 'must be an absolute path'],
        ['./project', 'must be an absolute path'],
        ['', 'is empty'],
        ['   ', 'is empty'],
        [join(scratch, 'absent'), 'is not an existing directory'],
        [join(scratch, 'file.txt'), 'is not an existing directory'],
      ]
      for (const [cwd, says] of cases) {
        const answer = await call(host.base, 'POST', '/api/sessions', { cwd })
        expect(answer.status, cwd).toBe(400)
        expect(answer.body.error).toMatchObject({ code: 'INVALID_PARAMS' })
        const message = (answer.body.error as { message: string }).message
        expect(message).toContain(says)
        expect(message).toContain(`the host's directory ${JSON.stringify(host.cwd)}`)
      }
      const wrongType = await call(host.base, 'POST', '/api/sessions', { cwd: 42 })
      expect(wrongType.status).toBe(400)
      expect((await call(host.base, 'GET', '/api/sessions')).body.sessions).toEqual([])

      // A missing cwd is refused too (the host's directory is in the message and the host baseline).
      const missing = await call(host.base, 'POST', '/api/sessions', {})
      expect(missing.status).toBe(400)
      expect((missing.body.error as { message: string }).message).toContain('"cwd" is missing')
      expect((await call(host.base, 'GET', '/api/sessions')).body.sessions).toEqual([])

      // An absolute directory works, the host's own included.
      const chosen = await call(host.base, 'POST', '/api/sessions', { cwd: scratch })
      expect(chosen).toMatchObject({ status: 200, body: { cwd: scratch } })
      const own = await call(host.base, 'POST', '/api/sessions', { cwd: host.cwd })
      expect(own).toMatchObject({ status: 200, body: { cwd: host.cwd } })
    } finally {
      rmSync(scratch, { recursive: true, force: true })
    }
  })
})
