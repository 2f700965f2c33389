// Browser-side plugins on the wire: a row's client module is in the host baseline and announced to
// open pages when it comes and goes; its bytes are served under their content hash, and a version
// that is gone is not served any more.
import { createHash } from 'node:crypto'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Context } from '@dsh/kernel'
import { describe, expect, it } from 'vitest'
import { startHost, stream } from './harness.js'

function moduleFile(text: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'dsh-client-module-')), 'module.js')
  writeFileSync(file, text)
  return file
}

const row = (file: string, id = 'greeting') => ({
  name: 'client-module-row',
  inject: ['webHost'],
  apply(ctx: Context) {
    ctx.effect(() => ctx.webHost.registerClientModule({ id, path: file }))
  },
})

describe('client modules', () => {
  it('announces a row’s module to open pages, serves it by hash, and drops it when the row goes', async () => {
    await using host = await startHost()
    const source = 'export default (dsh) => dsh.registerHeaderBadge({ id: "hi", render: () => "hi" })\n'
    const file = moduleFile(source)
    const hash = createHash('sha256').update(source).digest('hex').slice(0, 16)
    const page = stream(host.base, '/api/streams/host')
    await page.opened
    await page.until((frames) => frames.some((f) => f.type === 'host/baseline'))
    expect(page.frames[0]).toMatchObject({ clientModules: [] })

    const fiber = host.root.plugin(row(file))
    await fiber
    const entry = { id: 'greeting', hash, url: `/api/client-modules/greeting.${hash}.js` }
    await page.until((frames) => frames.some((f) => f.type === 'host/client-modules'))
    expect(page.frames.at(-1)).toEqual({ type: 'host/client-modules', modules: [entry] })
    const served = await fetch(host.base + entry.url)
    expect(served.status).toBe(200)
    expect(served.headers.get('content-type')).toMatch(/^text\/javascript/)
    expect(served.headers.get('cache-control')).toContain('immutable')
    expect(await served.text()).toBe(source)
    const listed = await fetch(`${host.base}/api/client-modules`).then((res) => res.json())
    expect(listed).toEqual({ modules: [entry] })

    await fiber.dispose()
    await page.until((frames) => frames.filter((f) => f.type === 'host/client-modules').length === 2)
    expect(page.frames.at(-1)).toEqual({ type: 'host/client-modules', modules: [] })
    expect((await fetch(host.base + entry.url)).status).toBe(404)
    // A page opened now gets the empty manifest in its baseline.
    const later = stream(host.base, '/api/streams/host')
    await later.until((frames) => frames.some((f) => f.type === 'host/baseline'))
    expect(later.frames[0]).toMatchObject({ clientModules: [] })
    page.close()
    later.close()
  })

  it('refuses a bad id, a taken id and an unreadable file with CLIENT_MODULE_INVALID', async () => {
    await using host = await startHost()
    const file = moduleFile('export default () => {}\n')
    const dispose = host.root.webHost.registerClientModule({ id: 'one', path: file })
    const code = (spec: { id: string; path: string }) => {
      try {
        host.root.webHost.registerClientModule(spec)
      } catch (error) {
        return (error as { code?: string }).code
      }
      return 'registered'
    }
    expect(code({ id: 'Bad Id', path: file })).toBe('CLIENT_MODULE_INVALID')
    expect(code({ id: 'one', path: file })).toBe('CLIENT_MODULE_INVALID')
    expect(code({ id: 'two', path: join(tmpdir(), 'no-such-dsh-module.js') })).toBe('CLIENT_MODULE_INVALID')
    expect(code({ id: 'three', path: 'relative.js' })).toBe('CLIENT_MODULE_INVALID')
    dispose()
    expect(code({ id: 'one', path: file })).toBe('registered')
  })
})
