// Issue 34, "allow similar" through a running web host: an approval carries the narrowest rule that
// covers the call; allowing with it keeps it for the chat (logged, and the next such call is not
// asked) or in the user's settings.yaml; a rule that does not cover the call is not kept.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { eventData } from '@dsh/session'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { call, startHost, stream, text } from './harness.js'

let home: string
beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'dsh-allow-similar-'))
})
afterEach(() => rmSync(home, { recursive: true, force: true }))

const note = (id: string, value: string) => ({
  role: 'assistant' as const,
  content: [{ type: 'tool-call' as const, id, name: 'note', arguments: { text: value } }],
  finishReason: 'tool-calls' as const,
})

async function askedOnce(rule: { text: string; scope: string }) {
  const host = await startHost(
    [note('c1', 'one'), note('c2', 'two'), text('done')],
    {},
    {
      permissions: true,
      settingsHome: home,
    },
  )
  const frames = stream(host.base, '/api/streams/host')
  await frames.opened
  const id = (await call(host.base, 'POST', '/api/sessions', { cwd: host.cwd })).body.sessionId as string
  await call(host.base, 'POST', `/api/sessions/${id}/prompt`, { text: 'write notes' })
  await frames.until((all) => all.some((f) => f.type === 'approval/requested'))
  const asked = frames.frames.find((f) => f.type === 'approval/requested')?.approval as {
    requestId: string
    suggestedRule?: string
  }
  const answered = await call(host.base, 'POST', `/api/approvals/${asked.requestId}`, {
    decision: 'allowed-once',
    rule,
  })
  expect(answered.status).toBe(200)
  return { host, frames, id, asked }
}

/** Waits until the session is idle; a second question, should one come, is answered with reject. */
async function settle(host: Awaited<ReturnType<typeof startHost>>, frames: ReturnType<typeof stream>) {
  const agent = host.root.agents.list()[0]
  const asked = (all: Array<Record<string, unknown>>) => all.filter((f) => f.type === 'approval/requested').length > 1
  const first = await Promise.race([
    agent?.whenIdle().then(() => 'idle' as const),
    frames.until(asked).then(() => 'asked' as const),
  ])
  if (first === 'asked') {
    const second = frames.frames.filter((f) => f.type === 'approval/requested')[1]?.approval as { requestId: string }
    await call(host.base, 'POST', `/api/approvals/${second.requestId}`, { decision: 'rejected' })
  }
  await agent?.whenIdle()
}

describe('allow similar on the web', () => {
  it('offers the narrowest rule; kept for the chat, the next similar call runs without asking (logged)', async () => {
    const { host, frames, id, asked } = await askedOnce({ text: 'note', scope: 'session' })
    await using _host = host
    expect(asked.suggestedRule).toBe('note')
    await settle(host, frames)
    expect(host.written).toEqual(['one', 'two'])
    expect(frames.frames.filter((f) => f.type === 'approval/requested')).toHaveLength(1)
    const session = host.root.sessions.get(id)
    const decided = eventData(session?.events ?? [], 'approval/decided')
    expect(decided[0]).toMatchObject({ decision: 'allowed-once', rule: { text: 'note', scope: 'session' } })
    frames.close()
  })

  it('kept in the user settings: written to settings.yaml', async () => {
    const { host, frames } = await askedOnce({ text: 'note', scope: 'user' })
    await using _host = host
    await settle(host, frames)
    expect(host.written).toEqual(['one', 'two'])
    expect(readFileSync(join(home, 'settings.yaml'), 'utf8')).toMatch(/permissions:\s*\n\s*allow:\s*\n\s*- note/)
    frames.close()
  })

  it('a rule that does not cover the call is not kept: the next call asks again', async () => {
    const { host, frames, id } = await askedOnce({ text: 'Bash', scope: 'session' })
    await using _host = host
    await settle(host, frames)
    expect(frames.frames.filter((f) => f.type === 'approval/requested')).toHaveLength(2)
    expect(host.written).toEqual(['one'])
    const decided = eventData(host.root.sessions.get(id)?.events ?? [], 'approval/decided')
    expect(decided[0]?.rule).toBeUndefined()
    expect(decided[0]?.reason).toContain('rule Bash not kept')
    frames.close()
  })
})
