// The web host through its wire: unary calls, the session stream's baseline-then-live contract
// across reconnects, approvals answered by the browser, and the write-only settings.
import { eventData } from '@dsh/session'
import { describe, expect, it } from 'vitest'
import { call, seqsOf, startHost, stream, text } from './harness.js'

describe('web host', () => {
  it('creates a session, runs a prompt and streams every event exactly once across a reconnect', async () => {
    await using host = await startHost([text('first answer'), text('second answer')])
    const created = await call(host.base, 'POST', '/api/sessions', { cwd: '/tmp' })
    expect(created.status).toBe(200)
    const id = created.body.sessionId as string
    expect(created.body.cwd).toBe('/tmp')

    const first = stream(host.base, `/api/streams/session/${id}?since=0`)
    await first.opened
    await first.until((frames) => frames.some((f) => f.type === 'session/baseline'))
    expect(first.frames[0]).toMatchObject({
      type: 'session/baseline',
      since: 0,
      status: 'idle',
      header: { id, cwd: '/tmp' },
    })
    expect((await call(host.base, 'POST', `/api/sessions/${id}/prompt`, { text: 'hello' })).status).toBe(200)
    const session = host.root.sessions.get(id)
    if (!session) throw new Error('no live session')
    await host.root.agents.list()[0]?.whenIdle()
    await first.until((frames) => seqsOf(frames).length === session.length)
    expect(seqsOf(first.frames)).toEqual(session.events.map((e) => e.seq))
    first.close()

    // The client drops, the host keeps working, the client comes back with since = what it had + 1.
    const had = session.length
    await call(host.base, 'POST', `/api/sessions/${id}/prompt`, { text: 'again' })
    await host.root.agents.list()[0]?.whenIdle()
    const second = stream(host.base, `/api/streams/session/${id}?since=${had}`)
    await second.opened
    await second.until((frames) => seqsOf(frames).at(-1) === session.length - 1)
    expect([...seqsOf(first.frames), ...seqsOf(second.frames)]).toEqual(session.events.map((e) => e.seq))
    const answers = eventData(session.events, 'assistant/message').map(
      (data) => data.message.content.find((block) => block.type === 'text')?.text,
    )
    expect(answers).toEqual(['first answer', 'second answer'])
    second.close()

    const list = await call(host.base, 'GET', '/api/sessions')
    expect(list.body.sessions).toEqual([
      expect.objectContaining({
        sessionId: id,
        title: 'hello',
        attached: true,
        status: 'idle',
        eventCount: session.length,
      }),
    ])
  })

  it('forwards an approval question to the host stream and runs the tool only after allow-once', async () => {
    await using host = await startHost([
      {
        role: 'assistant',
        content: [{ type: 'tool-call', id: 'c1', name: 'note', arguments: { text: 'hi' } }],
        finishReason: 'tool-calls',
      },
      text('done'),
    ])
    const hostStream = stream(host.base, '/api/streams/host')
    await hostStream.opened
    await hostStream.until((frames) => frames[0]?.type === 'host/baseline')
    const id = (await call(host.base, 'POST', '/api/sessions', { cwd: host.cwd })).body.sessionId as string
    await call(host.base, 'POST', `/api/sessions/${id}/prompt`, { text: 'write a note' })
    await hostStream.until((frames) => frames.some((f) => f.type === 'approval/requested'))
    const asked = hostStream.frames.find((f) => f.type === 'approval/requested')?.approval as { requestId: string }
    expect(asked).toMatchObject({ sessionId: id, toolCallId: 'c1', toolName: 'note' })
    expect(host.written).toEqual([])
    const bad = await call(host.base, 'POST', `/api/approvals/${asked.requestId}`, { decision: 'maybe' })
    expect(bad.status).toBe(400)
    expect(
      (await call(host.base, 'POST', `/api/approvals/${asked.requestId}`, { decision: 'allowed-once' })).status,
    ).toBe(200)
    await host.root.agents.list()[0]?.whenIdle()
    expect(host.written).toEqual(['hi'])
    await hostStream.until((frames) => frames.some((f) => f.type === 'approval/settled'))
    // A second answer finds nothing pending.
    const again = await call(host.base, 'POST', `/api/approvals/${asked.requestId}`, { decision: 'rejected' })
    expect(again).toMatchObject({ status: 404, body: { error: { code: 'APPROVAL_NOT_FOUND' } } })
    hostStream.close()
  })

  it('shows queued follow-ups and applies inbox edits through the host while a turn runs', async () => {
    await using host = await startHost([
      {
        role: 'assistant',
        content: [{ type: 'tool-call', id: 'c1', name: 'note', arguments: { text: 'hi' } }],
        finishReason: 'tool-calls',
      },
      text('stopped'),
      text('later'),
    ])
    const hostStream = stream(host.base, '/api/streams/host')
    await hostStream.opened
    const id = (await call(host.base, 'POST', '/api/sessions', { cwd: host.cwd })).body.sessionId as string
    await call(host.base, 'POST', `/api/sessions/${id}/prompt`, { text: 'start' })
    // The turn waits on the approval, so follow-ups queue for the next turn.
    await hostStream.until((frames) => frames.some((f) => f.type === 'approval/requested'))
    await call(host.base, 'POST', `/api/sessions/${id}/prompt`, { text: 'queued a' })
    await call(host.base, 'POST', `/api/sessions/${id}/prompt`, { text: 'queued b' })
    const edit = await call(host.base, 'POST', `/api/sessions/${id}/inbox`, {
      target: 'next-turn',
      start: 0,
      deleteCount: 1,
      texts: ['edited a'],
    })
    expect(edit.status).toBe(200)
    const s = stream(host.base, `/api/streams/session/${id}`)
    await s.opened
    await s.until((frames) => frames.some((f) => f.type === 'session/baseline'))
    const baseline = s.frames[0] as { status: string; inbox: { 'next-turn': Array<{ text: string }> } }
    expect(baseline.status).toBe('running')
    expect(baseline.inbox['next-turn'].map((item) => item.text)).toEqual(['edited a', 'queued b'])
    const invalid = await call(host.base, 'POST', `/api/sessions/${id}/inbox`, {
      target: 'next-turn',
      start: 5,
      deleteCount: 1,
    })
    expect(invalid.body).toMatchObject({ error: { code: 'INBOX_SPLICE_INVALID' } })
    await call(host.base, 'POST', `/api/sessions/${id}/inbox`, { target: 'next-turn', start: 1, deleteCount: 1 })
    await s.until((frames) =>
      frames.some(
        (f) => f.type === 'session/state' && (f.inbox as { 'next-turn': unknown[] })['next-turn'].length === 1,
      ),
    )
    await call(host.base, 'POST', `/api/sessions/${id}/cancel`, {})
    // What stays queued after a stop waits for the person: inbox/run sends it.
    const agent = host.root.agents.list()[0]
    await agent?.whenIdle()
    expect(agent?.inbox()['next-turn'].map((item) => item.message.content)).toEqual([
      [{ type: 'text', text: 'edited a' }],
    ])
    expect((await call(host.base, 'POST', `/api/sessions/${id}/inbox/run`, {})).body).toEqual({ started: true })
    await agent?.whenIdle()
    expect(agent?.inbox()['next-turn']).toEqual([])
    expect((await call(host.base, 'POST', `/api/sessions/${id}/inbox/run`, {})).body).toEqual({ started: false })
    s.close()
    hostStream.close()
  })

  it('answers unknown routes, unattached sessions and non-JSON bodies with error codes', async () => {
    await using host = await startHost()
    expect((await call(host.base, 'GET', '/api/nope')).body).toMatchObject({ error: { code: 'NOT_FOUND' } })
    expect((await call(host.base, 'POST', '/api/sessions/nope/cancel', {})).status).toBe(409)
    const form = await fetch(`${host.base}/api/sessions`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain', 'x-dsh-token': host.handle.token },
      body: 'x',
    })
    expect(form.status).toBe(415)
    const ws = stream(host.base, '/api/streams/session/does-not-exist')
    await ws.opened
    await ws.until((frames) => frames.some((f) => f.type === 'session/error'))
    expect(ws.frames[0]).toMatchObject({ type: 'session/error', code: 'NO_PERSISTENCE' })
  })

  it('forwards a model question to the browser and switches the permission mode through the log', async () => {
    await using host = await startHost()
    const hostStream = stream(host.base, '/api/streams/host')
    await hostStream.opened
    await hostStream.until((frames) => frames[0]?.type === 'host/baseline')
    expect(hostStream.frames[0]).toMatchObject({
      questions: [],
      modes: expect.arrayContaining(['read-only', 'workspace-write']),
    })
    const id = (await call(host.base, 'POST', '/api/sessions', { cwd: host.cwd })).body.sessionId as string
    const asking = host.root.userQuestions.ask({ question: 'Which colour?', options: ['red', 'blue'], sessionId: id })
    await hostStream.until((frames) => frames.some((f) => f.type === 'question/requested'))
    const asked = hostStream.frames.find((f) => f.type === 'question/requested')?.question as { questionId: string }
    expect(asked).toMatchObject({ question: 'Which colour?', options: ['red', 'blue'], sessionId: id })
    expect((await call(host.base, 'POST', `/api/questions/${asked.questionId}`, { answer: 'blue' })).status).toBe(200)
    expect(await asking).toEqual({ status: 'answered', answer: 'blue' })

    const s = stream(host.base, `/api/streams/session/${id}`)
    await s.opened
    await s.until((frames) => frames[0]?.type === 'session/baseline')
    expect(s.frames[0]).toMatchObject({ mode: 'workspace-write' })
    const switched = await call(host.base, 'POST', `/api/sessions/${id}/mode`, { mode: 'read-only' })
    expect(switched.body).toEqual({ sessionId: id, mode: 'read-only' })
    await s.until((frames) =>
      frames.some((f) => f.type === 'session/event' && (f.event as { type: string }).type === 'sandbox/mode'),
    )
    const bad = await call(host.base, 'POST', `/api/sessions/${id}/mode`, { mode: 'yolo' })
    expect(bad.body).toMatchObject({ error: { code: 'SANDBOX_MODE_INVALID' } })
    s.close()
    hostStream.close()
  })

  it('forks a session at a turn end into a new attached session', async () => {
    await using host = await startHost([text('parent answer'), text('child answer')])
    const id = (await call(host.base, 'POST', '/api/sessions', { cwd: host.cwd })).body.sessionId as string
    await call(host.base, 'POST', `/api/sessions/${id}/prompt`, { text: 'hello' })
    const parent = host.root.sessions.get(id)
    await host.root.agents.list()[0]?.whenIdle()
    const turnEnd = parent?.events.findLast((e) => e.type === 'turn/end')?.seq as number
    const forked = await call(host.base, 'POST', `/api/sessions/${id}/fork`, { at: turnEnd })
    expect(forked.status).toBe(200)
    const childId = forked.body.sessionId as string
    expect(forked.body.parentSessionId).toBe(id)
    await call(host.base, 'POST', `/api/sessions/${childId}/prompt`, { text: 'in the fork' })
    const child = host.root.sessions.get(childId)
    await Promise.all(host.root.agents.list().map((agent) => agent.whenIdle()))
    expect(child?.header.parentSession).toBe(id)
    expect(child?.events.filter((e) => e.type === 'assistant/message')).toHaveLength(2)
    expect((await call(host.base, 'POST', `/api/sessions/${id}/fork`, { at: -1 })).status).toBe(400)
  })

  it('runs a /command typed in the composer instead of queueing it', async () => {
    await using host = await startHost()
    const id = (await call(host.base, 'POST', '/api/sessions', { cwd: host.cwd })).body.sessionId as string
    const switched = await call(host.base, 'POST', `/api/sessions/${id}/prompt`, { text: '/model scripted:other' })
    expect(switched.body).toMatchObject({ sessionId: id, command: { ok: true, name: 'model' } })
    expect(host.root.agents.list()[0]?.model).toMatchObject({ provider: 'scripted', model: 'other' })
    const help = await call(host.base, 'POST', `/api/sessions/${id}/prompt`, { text: '/help' })
    expect(help.body).toMatchObject({ command: { ok: true, name: 'help', text: expect.stringContaining('/model') } })
    expect(host.root.sessions.get(id)?.events.filter((e) => e.type === 'user/message')).toEqual([])
  })

  it("lists the agent's background jobs in the session state and kills one on request", async () => {
    await using host = await startHost()
    const id = (await call(host.base, 'POST', '/api/sessions', { cwd: host.cwd })).body.sessionId as string
    const agent = host.root.agents.list()[0]
    if (!agent) throw new Error('no agent')
    let finish!: (outcome: { status: 'killed'; summary: string }) => void
    const done = new Promise<{ status: 'killed'; summary: string }>((resolve) => {
      finish = resolve
    })
    await host.root.jobs.start({
      owner: { sessionId: id, agentId: agent.id },
      kind: 'test',
      title: 'sleep 100',
      start: async () => ({
        read: (start: number) => ({ text: '', next: start, lost: 0 }),
        totalBytes: () => 0,
        done,
        cancel: async () => finish({ status: 'killed', summary: 'killed' }),
      }),
    })
    const s = stream(host.base, `/api/streams/session/${id}`)
    await s.opened
    await s.until((frames) => frames[0]?.type === 'session/baseline')
    const jobs = (s.frames[0] as { jobs: Array<{ id: string; title: string; status: string }> }).jobs
    expect(jobs).toEqual([expect.objectContaining({ title: 'sleep 100', status: 'running' })])
    const killed = await call(host.base, 'POST', `/api/sessions/${id}/jobs/${jobs[0]?.id}/kill`, {})
    expect(killed.status).toBe(200)
    await s.until((frames) =>
      frames.some((f) => f.type === 'session/state' && (f.jobs as Array<{ status: string }>)[0]?.status === 'killed'),
    )
    expect((await call(host.base, 'POST', `/api/sessions/${id}/jobs/job-99/kill`, {})).status).toBe(404)
    s.close()
  })

  it("serves a job's output from any byte without moving the model's cursor", async () => {
    await using host = await startHost()
    const id = (await call(host.base, 'POST', '/api/sessions', { cwd: host.cwd })).body.sessionId as string
    const agent = host.root.agents.list()[0]
    if (!agent) throw new Error('no agent')
    const owner = { sessionId: id, agentId: agent.id }
    let output = ''
    let stop!: (outcome: { status: 'killed'; summary: string }) => void
    const done = new Promise<{ status: 'killed'; summary: string }>((resolve) => {
      stop = resolve
    })
    const job = await host.root.jobs.start({
      owner,
      kind: 'test',
      title: 'tail',
      start: async () => ({
        read: (start: number, max: number) => {
          const text = output.slice(start, start + max)
          return { text, next: start + text.length, lost: 0 }
        },
        totalBytes: () => output.length,
        done,
        cancel: async () => stop({ status: 'killed', summary: 'killed' }),
      }),
    })
    output = 'one\ntwo\n'
    const first = await call(host.base, 'GET', `/api/sessions/${id}/jobs/${job.id}/output`)
    expect(first.body).toEqual({ text: 'one\ntwo\n', next: 8, lost: 0, status: 'running' })
    output += 'three\n'
    const second = await call(host.base, 'GET', `/api/sessions/${id}/jobs/${job.id}/output?from=8`)
    expect(second.body).toMatchObject({ text: 'three\n', next: 14 })
    expect(host.root.jobs.get(job.id, owner).unreadBytes).toBe(14)
    expect((await call(host.base, 'GET', `/api/sessions/${id}/jobs/${job.id}/output?from=-1`)).status).toBe(400)
    expect((await call(host.base, 'GET', `/api/sessions/${id}/jobs/job-99/output`)).status).toBe(404)
  })

  it('creates a session with a preset, switches it while empty, and refuses once it has a turn', async () => {
    await using host = await startHost([text('planned')], {}, { presets: true })
    const h = stream(host.base, '/api/streams/host')
    await h.opened
    await h.until((frames) => frames[0]?.type === 'host/baseline')
    expect(h.frames[0]).toMatchObject({
      presets: [{ name: 'ask' }, { name: 'code' }, { name: 'minimal' }, { name: 'plan' }, { name: 'review' }],
      defaultPreset: 'code',
    })
    const unknown = await call(host.base, 'POST', '/api/sessions', { cwd: host.cwd, preset: 'nope' })
    expect(unknown.status).toBe(400)
    expect(unknown.body.error).toMatchObject({ code: 'PRESET_NOT_FOUND' })
    const created = await call(host.base, 'POST', '/api/sessions', { cwd: host.cwd, preset: 'ask' })
    expect(created.body).toMatchObject({ preset: 'ask' })
    const id = created.body.sessionId as string
    const switched = await call(host.base, 'POST', `/api/sessions/${id}/preset`, { preset: 'plan' })
    expect(switched.body).toEqual({ sessionId: id, preset: 'plan' })
    await call(host.base, 'POST', `/api/sessions/${id}/prompt`, { text: 'plan it' })
    await host.root.agents.list()[0]?.whenIdle()
    const locked = await call(host.base, 'POST', `/api/sessions/${id}/preset`, { preset: 'code' })
    expect(locked.status).toBe(409)
    expect(locked.body.error).toMatchObject({ code: 'PRESET_LOCKED' })
    const session = host.root.sessions.get(id)
    expect(session && eventData(session.events, 'preset/selected').map((selected) => selected.name)).toEqual([
      'ask',
      'plan',
    ])
    h.close()
  })
})
