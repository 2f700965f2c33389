// The session-management routes at the host's edge: the session grant an approval answer may carry,
// the workspace list and who may choose a directory, and bad input answered with what to send.
import type {} from '@dsh/agent/approval'
import { isEvent } from '@dsh/session'
import { describe, expect, it } from 'vitest'
import { call, startHost, stream, text } from './harness.js'

const noteCall = (id: string, note: string) => ({
  role: 'assistant' as const,
  content: [{ type: 'tool-call' as const, id, name: 'note', arguments: { text: note } }],
  finishReason: 'tool-calls' as const,
})

describe('web session management routes', () => {
  it('answers "allow for this chat": the next same-kind call runs unasked and the grant is logged', async () => {
    await using host = await startHost([noteCall('c1', 'one'), noteCall('c2', 'two'), text('done')])
    const hostStream = stream(host.base, '/api/streams/host')
    await hostStream.opened
    const id = (await call(host.base, 'POST', '/api/sessions', { cwd: host.cwd })).body.sessionId as string
    await call(host.base, 'POST', `/api/sessions/${id}/prompt`, { text: 'two notes' })
    await hostStream.until((frames) => frames.some((f) => f.type === 'approval/requested'))
    const asked = hostStream.frames.find((f) => f.type === 'approval/requested')?.approval as { requestId: string }
    const refused = await call(host.base, 'POST', `/api/approvals/${asked.requestId}`, {
      decision: 'rejected',
      grant: 'session',
    })
    expect(refused).toMatchObject({ status: 400, body: { error: { code: 'INVALID_PARAMS' } } })
    const granted = await call(host.base, 'POST', `/api/approvals/${asked.requestId}`, {
      decision: 'allowed-once',
      grant: 'session',
    })
    expect(granted.status).toBe(200)
    const agent = host.root.agents.list()[0]
    await agent?.whenIdle()
    expect(host.written).toEqual(['one', 'two'])
    expect(hostStream.frames.filter((f) => f.type === 'approval/requested')).toHaveLength(1)
    const decided = (agent?.session.events ?? []).flatMap((event) =>
      isEvent(event, 'approval/decided') ? [event.data] : [],
    )
    expect(decided.map((data) => data.by)).toEqual(['answerer', 'grant'])
    expect(decided[0]?.grant).toMatchObject({ scope: 'session', toolName: 'note' })
    hostStream.close()
  })

  it('lists workspaces from the sessions, and only a loopback client may choose one', async () => {
    await using host = await startHost([])
    await call(host.base, 'POST', '/api/sessions', { cwd: host.cwd })
    const local = await call(host.base, 'GET', '/api/workspaces')
    expect(local.body).toMatchObject({ canChoose: true, workspaces: [{ cwd: host.cwd, sessions: 1 }] })
    const trusted = { host: `devbox.lan:${host.handle.port}` }
    await using remote = await startHost([], { trustedHosts: ['devbox.lan'] })
    const far = await call(remote.base, 'GET', '/api/workspaces', undefined, trusted)
    expect(far).toMatchObject({ status: 200, body: { canChoose: false } })
  })

  it('answers bad search, rename and export requests with what to send', async () => {
    await using host = await startHost([])
    const id = (await call(host.base, 'POST', '/api/sessions', { cwd: host.cwd })).body.sessionId as string
    expect(await call(host.base, 'GET', '/api/search')).toMatchObject({
      status: 400,
      body: { error: { code: 'INVALID_PARAMS', message: expect.stringContaining('?q=') } },
    })
    expect(await call(host.base, 'POST', `/api/sessions/${id}/rename`, {})).toMatchObject({
      status: 400,
      body: { error: { code: 'INVALID_PARAMS', message: expect.stringContaining('"title"') } },
    })
    expect(await call(host.base, 'POST', `/api/sessions/${id}/rename`, { title: '   ' })).toMatchObject({
      status: 400,
      body: { error: { code: 'INVALID_TITLE' } },
    })
    expect(await call(host.base, 'GET', `/api/sessions/${id}/export?format=pdf`)).toMatchObject({
      status: 400,
      body: { error: { code: 'INVALID_PARAMS', message: expect.stringContaining('md, jsonl') } },
    })
  })
})
