// The interactive chat as a person uses it: the built `dsh` in a pseudo-terminal, read off the screen
// and out of the durable session log.
import { isEvent } from '@dsh/session'
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

describe('dsh (the terminal chat)', () => {
  it('opens with a first prompt, streams the answer as Markdown, and exits on Ctrl-D', async () => {
    f.server.enqueue(
      completionResponse({ text: ['# Hello\n\nThis is **bold** and `code`.\n\n', '```js\nconst x = 1\n```\n'] }),
    )
    const screen = f.open(['say', 'hi'])
    await screen.waitFor('const x = 1')
    console.log(screen.text())
    screen.type('\x04')
    expect(await screen.exited).toBe(0)
    const events = f.log()
    expect(events.find((e) => isEvent(e, 'user/message') && !e.data.origin)).toMatchObject({
      data: { message: { content: [{ type: 'text', text: 'say hi' }] } },
    })
  })
})
