// Issue 34: the control planes are out of the sandbox's reach. A tool process on this machine can
// reach a loopback `dsh web`; without the page's access token it may read, but it may not switch a
// session's mode, rewrite settings or credentials, trust a folder, or run a /command. Widening a
// mode also needs the page's explicit `confirm`. Asserted on the durable log and the settings file.
import { execFile, execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { call, rawCall, startHost, stream, text } from './harness.js'

let home: string
beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'dsh-web-control-'))
})
afterEach(() => rmSync(home, { recursive: true, force: true }))

/** The `sandbox/mode` events of session `id`'s durable JSONL log. */
function loggedModes(id: string): string[] {
  const file = join(home, 'sessions', `${id}.jsonl`)
  if (!existsSync(file)) return []
  return readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .slice(1)
    .map((line) => JSON.parse(line) as { type: string; data: { mode?: string } })
    .filter((event) => event.type === 'sandbox/mode')
    .map((event) => event.data.mode as string)
}

async function attackable() {
  const host = await startHost([], {}, { presets: true, settingsHome: home, sessionsDir: join(home, 'sessions') })
  writeFileSync(join(home, 'settings.yaml'), 'preset: code\n')
  const created = await call(host.base, 'POST', '/api/sessions', { cwd: host.cwd })
  expect(created.status).toBe(200)
  const id = created.body.sessionId as string
  await host.root.sessions.flush()
  expect(host.root.sandboxPolicy.mode(id)).toBe('workspace-write')
  return { host, id, logged: loggedModes(id) }
}

describe('control routes without the access token (loopback)', () => {
  it('refuses a mode switch, settings, credentials, trust and /commands from a tokenless request', async () => {
    const { host, id, logged } = await attackable()
    await using _host = host
    const attempts: Array<[string, string, unknown]> = [
      ['POST', `/api/sessions/${id}/mode`, { mode: 'danger-full-access', confirm: true }],
      ['PUT', '/api/settings/values/preset', { value: 'plan' }],
      ['DELETE', '/api/settings/values/preset', undefined],
      ['PUT', '/api/settings/credentials/OPENAI_API_KEY', { value: 'sk-attacker' }],
      ['DELETE', '/api/settings/credentials/OPENAI_API_KEY', undefined],
      ['POST', '/api/trust', { cwd: host.cwd }],
      ['POST', `/api/sessions/${id}/command`, { line: '/permissions danger-full-access' }],
      ['POST', `/api/sessions/${id}/prompt`, { text: '/permissions danger-full-access' }],
    ]
    for (const [method, path, body] of attempts) {
      const answer = await rawCall(host.base, method, path, body)
      expect({ method, path, ...answer }).toMatchObject({ status: 401, body: { error: { code: 'TOKEN_REQUIRED' } } })
      expect(String((answer.body.error as { message: string }).message)).toContain('printed')
    }
    await host.root.sessions.flush()
    expect(host.root.sandboxPolicy.mode(id)).toBe('workspace-write')
    expect(loggedModes(id)).toEqual(logged)
    expect(readFileSync(join(home, 'settings.yaml'), 'utf8')).toBe('preset: code\n')
    // Reads stay open on loopback (the sandbox can read the session files anyway).
    expect((await rawCall(host.base, 'GET', '/api/sessions')).status).toBe(200)
  })

  it('a /command that widens the session needs confirm on the command and prompt routes, as the mode route does', async () => {
    const { host, id, logged } = await attackable()
    await using _host = host
    const widening = ['/permissions danger-full-access', '/permissions never', '/permissions allow Bash(rm:*)']
    for (const line of widening) {
      for (const [path, body] of [
        [`/api/sessions/${id}/command`, { line }],
        [`/api/sessions/${id}/prompt`, { text: line }],
      ] as const) {
        // With the page's token, but without the person's confirmation.
        const answer = await call(host.base, 'POST', path, body)
        expect({ line, path, ...answer }).toMatchObject({
          status: 428,
          body: { error: { code: 'SANDBOX_MODE_UNCONFIRMED' } },
        })
      }
    }
    await host.root.sessions.flush()
    expect(host.root.sandboxPolicy.mode(id)).toBe('workspace-write')
    expect(host.root.approval.policy(id)).toBe('ask')
    expect(loggedModes(id)).toEqual(logged)
    expect(readFileSync(join(home, 'settings.yaml'), 'utf8')).toBe('preset: code\n')
    // Narrowing, and reading, need nothing.
    expect((await call(host.base, 'POST', `/api/sessions/${id}/command`, { line: '/permissions' })).status).toBe(200)
    const narrow = await call(host.base, 'POST', `/api/sessions/${id}/prompt`, { text: '/permissions read-only' })
    expect(narrow.status).toBe(200)
    expect(host.root.sandboxPolicy.mode(id)).toBe('read-only')
    // After the person confirmed, the page repeats it with `confirm`.
    const confirmed = await call(host.base, 'POST', `/api/sessions/${id}/command`, {
      line: '/permissions danger-full-access',
      confirm: true,
    })
    expect(confirmed.status).toBe(200)
    await host.root.sessions.flush()
    expect(loggedModes(id).slice(logged.length)).toEqual(['read-only', 'danger-full-access'])
  })

  it('refuses the same attack sent by curl, as the model’s bash would send it', async () => {
    const { host, id } = await attackable()
    await using _host = host
    // Asynchronous: the host answers from this very process.
    const curl = (method: string, path: string, body: string) =>
      new Promise<string>((resolve, reject) =>
        execFile(
          'curl',
          ['-s', '-o', '/dev/null', '-w', '%{http_code}', '-X', method, '-H', 'content-type: application/json'].concat([
            '--data',
            body,
            `${host.base}${path}`,
          ]),
          { encoding: 'utf8', env: { PATH: process.env.PATH ?? '' } },
          (error, stdout) => (error && !stdout ? reject(error) : resolve(stdout)),
        ),
      )
    const hasCurl = await curl('GET', '/', '').then(
      () => true,
      () => false,
    )
    if (!hasCurl) return // no curl on this machine: the rawCall test above sends the same request
    expect(await curl('POST', `/api/sessions/${id}/mode`, '{"mode":"danger-full-access","confirm":true}')).toBe('401')
    expect(await curl('PUT', '/api/settings/values/preset', '{"value":"plan"}')).toBe('401')
    await host.root.sessions.flush()
    expect(loggedModes(id)).not.toContain('danger-full-access')
    expect(readFileSync(join(home, 'settings.yaml'), 'utf8')).toBe('preset: code\n')
  })

  it('does not hand out the cookie for a wrong token in the entry URL', async () => {
    await using host = await startHost()
    const entry = await fetch(`${host.base}/?token=guess`, { redirect: 'manual' })
    expect(entry.headers.get('set-cookie')).toBeNull()
    const token = host.handle.token as string
    expect(host.handle.url).toContain(`?token=${token}`)
    const good = await fetch(`${host.base}/?token=${token}`, { redirect: 'manual' })
    expect(good.headers.get('set-cookie')).toMatch(new RegExp(`^dsh_token_${host.handle.port}=`))
    // The token lives in this process's memory only: no environment variable a child inherits holds it.
    expect(Object.values(process.env)).not.toContain(token)
  })

  it('a server the model starts on another localhost port gets the cookie, and it changes nothing', async () => {
    const { host, id, logged } = await attackable()
    await using _host = host
    const entry = await fetch(`${host.base}/?token=${host.handle.token}`, { redirect: 'manual' })
    const cookie = (entry.headers.get('set-cookie') as string).split(';')[0] as string
    // Browsers send localhost cookies to every port: the model's listener receives exactly this header.
    const stolen = { cookie, origin: host.base, 'sec-fetch-site': 'same-origin' }
    const mode = await rawCall(
      host.base,
      'POST',
      `/api/sessions/${id}/mode`,
      { mode: 'danger-full-access', confirm: true },
      stolen,
    )
    expect(mode).toMatchObject({ status: 401, body: { error: { code: 'TOKEN_REQUIRED' } } })
    const setting = await rawCall(host.base, 'PUT', '/api/settings/values/preset', { value: 'plan' }, stolen)
    expect(setting.status).toBe(401)
    await host.root.sessions.flush()
    expect(loggedModes(id)).toEqual(logged)
    expect(readFileSync(join(home, 'settings.yaml'), 'utf8')).toBe('preset: code\n')
  })
})

/** bubblewrap and curl both work here (a container without user namespaces cannot run bwrap). */
function canSandboxCurl(): boolean {
  try {
    execFileSync('bwrap', ['--ro-bind', '/', '/', 'true'], { stdio: 'ignore' })
    execFileSync('curl', ['--version'], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}

describe.skipIf(!canSandboxCurl())('the attack from inside the sandbox (real bash + curl under bubblewrap)', () => {
  it('a confined bash with the network on cannot switch the mode or write the settings', async () => {
    const workspace = mkdtempSync(join(tmpdir(), 'dsh-web-control-ws-'))
    try {
      const host = await startHost(
        [],
        { cwd: workspace },
        { presets: true, settingsHome: home, sessionsDir: join(home, 'sessions'), sandboxWorkspace: workspace },
      )
      await using _host = host
      writeFileSync(join(home, 'settings.yaml'), 'preset: code\n')
      const id = (await call(host.base, 'POST', '/api/sessions', { cwd: workspace })).body.sessionId as string
      await host.root.sessions.flush()
      const logged = loggedModes(id)
      const post = (method: string, path: string, body: string) =>
        `curl -s -o /dev/null -w '%{http_code}\\n' -X ${method} -H 'content-type: application/json' --data '${body}' ${host.base}${path}`
      const script = [
        post('POST', `/api/sessions/${id}/mode`, '{"mode":"danger-full-access","confirm":true}'),
        post('PUT', '/api/settings/values/preset', '{"value":"plan"}'),
        // Whatever the confined bash can see of this process: its environment has no token.
        'env | grep -c DSH_ || true',
      ].join('; ')
      const result = await host.root.shell.run(host.root.shell.resolve({ command: script, sessionId: id }))
      expect(result.output.text.trim().split('\n')).toEqual(['401', '401', '0'])
      await host.root.sessions.flush()
      expect(host.root.sandboxPolicy.mode(id)).toBe('workspace-write')
      expect(loggedModes(id)).toEqual(logged)
      expect(readFileSync(join(home, 'settings.yaml'), 'utf8')).toBe('preset: code\n')
    } finally {
      rmSync(workspace, { recursive: true, force: true })
    }
  })
})

describe('widening a mode needs the page’s confirmation', () => {
  it('refuses a widening without confirm, applies it with confirm, narrows without', async () => {
    const { host, id, logged } = await attackable()
    await using _host = host
    const unconfirmed = await call(host.base, 'POST', `/api/sessions/${id}/mode`, { mode: 'danger-full-access' })
    expect(unconfirmed).toMatchObject({ status: 428, body: { error: { code: 'SANDBOX_MODE_UNCONFIRMED' } } })
    expect(String((unconfirmed.body.error as { message: string }).message)).toContain('"confirm": true')
    await host.root.sessions.flush()
    expect(loggedModes(id)).toEqual(logged)
    const narrowed = await call(host.base, 'POST', `/api/sessions/${id}/mode`, { mode: 'read-only' })
    expect(narrowed).toMatchObject({ status: 200, body: { mode: 'read-only' } })
    const widened = await call(host.base, 'POST', `/api/sessions/${id}/mode`, {
      mode: 'danger-full-access',
      confirm: true,
    })
    expect(widened).toMatchObject({ status: 200, body: { mode: 'danger-full-access' } })
    await host.root.sessions.flush()
    expect(loggedModes(id)).toEqual([...logged, 'read-only', 'danger-full-access'])
  })
})

describe('the page’s no-paths rule covers @ references', () => {
  it('refuses @/absolute, @~ and @../ references from the browser and logs no message', async () => {
    const { host, id } = await attackable()
    await using _host = host
    for (const text of ['read @/etc/hostname please', 'see @~/.bashrc', 'and @../outside.txt']) {
      const refused = await call(host.base, 'POST', `/api/sessions/${id}/prompt`, { text })
      expect({ text, ...refused }).toMatchObject({ status: 400, body: { error: { code: 'ATTACHMENT_PATH_REFUSED' } } })
    }
    await host.root.sessions.flush()
    const logged = readFileSync(join(home, 'sessions', `${id}.jsonl`), 'utf8')
    expect(logged).not.toContain('user/message')
  })
})

describe('deleting the session the page has open', () => {
  it('releases the host’s own lease and deletes the durable log', async () => {
    const host = await startHost([text('an answer')], {}, { sessionsDir: join(home, 'sessions') })
    await using _host = host
    const id = (await call(host.base, 'POST', '/api/sessions', { cwd: host.cwd })).body.sessionId as string
    const open = stream(host.base, `/api/streams/session/${id}`)
    await open.opened
    expect((await call(host.base, 'POST', `/api/sessions/${id}/prompt`, { text: 'hello' })).status).toBe(200)
    await open.until((frames) =>
      frames.some((f) => f.type === 'session/event' && (f.event as { type: string }).type === 'turn/end'),
    )
    await host.root.sessions.flush()
    expect(existsSync(join(home, 'sessions', `${id}.jsonl`))).toBe(true)
    const removed = await call(host.base, 'POST', `/api/sessions/${id}/delete`, {})
    expect(removed).toMatchObject({ status: 200, body: { removed: [id] } })
    expect(existsSync(join(home, 'sessions', `${id}.jsonl`))).toBe(false)
    open.close()
  })

  it('deletes a session it resumed from an earlier run', async () => {
    const sessions = join(home, 'sessions')
    let id: string
    {
      await using first = await startHost([text('an answer')], {}, { sessionsDir: sessions })
      id = (await call(first.base, 'POST', '/api/sessions', { cwd: first.cwd })).body.sessionId as string
      await call(first.base, 'POST', `/api/sessions/${id}/prompt`, { text: 'hello' })
      await first.root.agents.list()[0]?.whenIdle()
    }
    await using host = await startHost([text('again')], {}, { sessionsDir: sessions })
    const open = stream(host.base, `/api/streams/session/${id}`)
    await open.opened
    expect((await call(host.base, 'POST', `/api/sessions/${id}/resume`, {})).status).toBe(200)
    const removed = await call(host.base, 'POST', `/api/sessions/${id}/delete`, {})
    expect(removed).toMatchObject({ status: 200, body: { removed: [id] } })
    expect(existsSync(join(sessions, `${id}.jsonl`))).toBe(false)
    open.close()
  })
})
