// Slash commands on the terminal chat (issue 31): an unknown /word is answered and sends nothing to the
// model (also while a turn runs, where it used to become steering); `//` sends a literal slash text.
import { type AnySessionEvent, isEvent } from '@dsh/session'
import { completionResponse } from '@dsh/test-support'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { type Fixture, fixture } from './pty.js'

let f: Fixture
beforeEach(async () => {
  f = await fixture()
})
afterEach(async () => {
  await f.close()
})

const typed = (events: AnySessionEvent[]) =>
  events.flatMap((e) =>
    isEvent(e, 'user/message') && !e.data.origin
      ? [e.data.message.content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('')]
      : [],
  )
const sessionOf = (raw: string) => /dsh --resume ([0-9a-f-]{36})/.exec(raw)?.[1] as string

describe('slash commands in the terminal chat', () => {
  it('answers an unknown /word (idle and while a turn runs) without sending it; // sends a literal slash', async () => {
    f.server.enqueue(
      completionResponse({ toolCalls: [{ id: 'c1', name: 'bash', arguments: '{"command":"sleep 2"}' }] }),
      completionResponse({ text: 'Slept.' }),
      completionResponse({ text: 'Literal heard.' }),
    )
    const screen = f.open()
    await screen.waitFor(/preset code/)
    await screen.press('/bogus\r', 'unknown command /bogus (see /help)')
    await screen.press('start it\r', '○ Run command sleep 2')
    await screen.press('/steerme now\r', 'unknown command /steerme (see /help)')
    await screen.waitFor('Slept.')
    await screen.press('//tmp is full\r', 'Literal heard.')
    screen.type('\x04')
    expect(await screen.exited).toBe(0)
    const log = f.log(sessionOf(screen.raw()))
    expect(typed(log)).toEqual(['start it', '/tmp is full'])
    const sent = JSON.stringify(f.server.requests.map((request) => request.body.messages))
    expect(sent).not.toContain('bogus')
    expect(sent).not.toContain('steerme')
  })
})
