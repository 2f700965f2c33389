// The trust fence: DNS-rebinding Host names, cross-site requests and stream upgrades, the access
// token required for every state change (and beyond loopback for reads too), and settings that are
// loopback-only and write-only. The attack through the token-less loopback is control-plane.test.ts.
import { describe, expect, it } from 'vitest'
import { checkRequest, hostAllowed, sameOrigin } from '../../src/web/trust.js'
import { call, rawCall, startHost, stream } from './harness.js'

const loopbackFence = { trustedHosts: [], token: 'the-token', tokenForReads: false }

describe('trust fence (pure)', () => {
  it('on loopback lets reads through without the token, never a state change', () => {
    const headers = { host: 'localhost:3080' }
    expect(checkRequest({ method: 'GET', headers }, loopbackFence)).toEqual({ ok: true })
    expect(checkRequest({ method: 'GET', upgrade: true, headers }, loopbackFence)).toEqual({ ok: true })
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
      expect(checkRequest({ method, headers }, loopbackFence)).toMatchObject({ ok: false, code: 'TOKEN_REQUIRED' })
      expect(checkRequest({ method, headers: { ...headers, 'x-dsh-token': 'the-token' } }, loopbackFence)).toEqual({
        ok: true,
      })
    }
  })

  it('accepts loopback and trusted Host names only', () => {
    for (const host of ['localhost:3080', '127.0.0.1:3080', '[::1]:3080', 'app.localhost', '127.0.0.1']) {
      expect(hostAllowed(host, [])).toBe(true)
    }
    for (const host of ['evil.example:3080', 'localhost.evil.example', '10.0.0.5:3080', undefined, '', 'a b']) {
      expect(hostAllowed(host, [])).toBe(false)
    }
    expect(hostAllowed('devbox.lan:3080', ['devbox.lan'])).toBe(true)
  })

  it('refuses explicit cross-site metadata and foreign origins', () => {
    const host = 'localhost:3080'
    expect(sameOrigin({ host, origin: 'http://localhost:3080', 'sec-fetch-site': 'same-origin' })).toBe(true)
    expect(sameOrigin({ host })).toBe(true)
    expect(sameOrigin({ host, 'sec-fetch-site': 'cross-site' })).toBe(false)
    expect(sameOrigin({ host, 'sec-fetch-site': 'same-site', origin: 'http://localhost:3080' })).toBe(false)
    expect(sameOrigin({ host, origin: 'http://evil.example' })).toBe(false)
    expect(sameOrigin({ host, origin: 'null' })).toBe(false)
    // A cross-site GET is a read of public assets; the fence only guards state changes and upgrades.
    expect(checkRequest({ method: 'GET', headers: { host, origin: 'http://evil.example' } }, loopbackFence)).toEqual({
      ok: true,
    })
    expect(
      checkRequest({ method: 'GET', upgrade: true, headers: { host, origin: 'http://evil.example' } }, loopbackFence),
    ).toMatchObject({ ok: false, code: 'CROSS_ORIGIN' })
  })
})

describe('trust fence (over the wire)', () => {
  it('refuses a DNS-rebinding Host and cross-site requests on /api and on the streams', async () => {
    await using host = await startHost()
    const rebound = await call(host.base, 'GET', '/api/sessions', undefined, {
      host: `evil.example:${host.handle.port}`,
    })
    expect(rebound).toMatchObject({ status: 403, body: { error: { code: 'HOST_NOT_ALLOWED' } } })
    const crossSite = await call(host.base, 'POST', '/api/sessions', {}, { origin: 'http://evil.example' })
    expect(crossSite).toMatchObject({ status: 403, body: { error: { code: 'CROSS_ORIGIN' } } })
    const fetchMeta = await call(host.base, 'POST', '/api/sessions', {}, { 'sec-fetch-site': 'cross-site' })
    expect(fetchMeta.status).toBe(403)
    expect(host.root.sessions.list()).toHaveLength(0)

    const foreign = stream(host.base, '/api/streams/host', { origin: 'http://evil.example' })
    await expect(foreign.opened).rejects.toThrow('HTTP 403')
    const reboundStream = stream(host.base, '/api/streams/host', { host: 'evil.example' })
    await expect(reboundStream.opened).rejects.toThrow('HTTP 403')
    const same = stream(host.base, '/api/streams/host', { origin: host.base })
    await same.opened
    await same.until((frames) => frames[0]?.type === 'host/baseline')
    same.close()
  })

  it('closes a stream whose client sends data (downlink only)', async () => {
    await using host = await startHost()
    const s = stream(host.base, '/api/streams/host')
    await s.opened
    const closed = new Promise<number>((resolve) => s.socket.once('close', (code) => resolve(code)))
    s.socket.send('hello')
    expect(await closed).toBe(1008)
  })

  it('requires the generated token when bound beyond loopback', async () => {
    await using host = await startHost([], { host: '0.0.0.0' })
    const token = host.handle.token as string
    expect(token).toMatch(/^[A-Za-z0-9_-]{32}$/)
    expect(host.handle.url).toContain(`?token=${token}`)
    expect((await rawCall(host.base, 'GET', '/api/sessions')).body).toMatchObject({ error: { code: 'TOKEN_REQUIRED' } })
    expect((await call(host.base, 'GET', '/api/sessions', undefined, { 'x-dsh-token': 'wrong' })).status).toBe(401)
    expect(
      (await call(host.base, 'GET', '/api/sessions', undefined, { authorization: `Bearer ${token}` })).status,
    ).toBe(200)
    const noToken = stream(host.base, '/api/streams/host')
    await expect(noToken.opened).rejects.toThrow('HTTP 401')
    // The printed URL serves the page and sets an HttpOnly cookie named for this port (read access).
    const entry = await fetch(`${host.base}/?token=${token}`, { redirect: 'manual' })
    expect(entry.status).not.toBe(401)
    const cookie = entry.headers.get('set-cookie') as string
    expect(cookie).toMatch(new RegExp(`^dsh_token_${host.handle.port}=.*; HttpOnly; SameSite=Strict`))
    const pair = cookie.split(';')[0] as string
    const withCookie = await call(host.base, 'GET', '/api/sessions', undefined, { cookie: pair })
    expect(withCookie.status).toBe(200)
    // A cookie named for another port is not read, and the cookie alone never changes state.
    const otherPort = pair.replace(`dsh_token_${host.handle.port}=`, 'dsh_token_1=')
    expect((await call(host.base, 'GET', '/api/sessions', undefined, { cookie: otherPort })).status).toBe(401)
    const write = await call(host.base, 'POST', '/api/sessions', { cwd: host.cwd }, { cookie: pair })
    expect(write).toMatchObject({ status: 401, body: { error: { code: 'TOKEN_REQUIRED' } } })
    expect(String((write.body.error as { message: string }).message)).toContain('only allows reading')
  })

  it('keeps settings loopback-only and never returns a stored key', async () => {
    await using host = await startHost([], { trustedHosts: ['devbox.lan'] })
    // Credentials are optional in this harness: the host answers without a credentials row.
    expect((await call(host.base, 'GET', '/api/settings')).body).toEqual({ credentials: [], settings: [] })
    const viaTrusted = await call(host.base, 'GET', '/api/settings', undefined, {
      host: `devbox.lan:${host.handle.port}`,
    })
    expect(viaTrusted).toMatchObject({ status: 403, body: { error: { code: 'LOOPBACK_ONLY' } } })
    // Choosing a session directory is management too; the default directory is not.
    const trusted = { host: `devbox.lan:${host.handle.port}` }
    const withCwd = await call(host.base, 'POST', '/api/sessions', { cwd: '/etc' }, trusted)
    expect(withCwd).toMatchObject({ status: 403, body: { error: { code: 'LOOPBACK_ONLY' } } })
    expect((await call(host.base, 'POST', '/api/sessions', { cwd: host.cwd }, trusted)).status).toBe(200)
    // A trusted host may use the rest of the API.
    expect(
      (await call(host.base, 'GET', '/api/sessions', undefined, { host: `devbox.lan:${host.handle.port}` })).status,
    ).toBe(200)
  })
})
