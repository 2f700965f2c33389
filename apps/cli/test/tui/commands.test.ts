// Slash commands on the terminal chat (issue 31): an unknown /word is answered and sends nothing to the
// model (also while a turn runs, where it used to become steering); `//` sends a literal slash text.
import { type AnySessionEvent, isEvent } from '@dsh/session'
import { completionResponse } from '@dsh/test-support'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { type Fixture, fixture, type Screen } from './pty.js'

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
/** Waits until the visible screen differs from `before`. */
async function waitChange(screen: Screen, before: string): Promise<void> {
  for (let i = 0; i < 200 && screen.text() === before; i++) await new Promise((done) => setTimeout(done, 25))
}
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

  it('/model with no name opens a picker: arrows move, Enter chooses (logged as /model NAME), Esc cancels', async () => {
    f.server.enqueue(completionResponse({ text: 'Picked.' }))
    const screen = f.open()
    await screen.waitFor(/preset code/)
    // The title and the list render in turn: wait for the list, with the current model selected first.
    await screen.press('/model\r', /Choose a model[\s\S]*→ deepseek:deepseek-v4-pro/)
    // Keys go to the list, not the editor: move down to the flash model and choose it.
    for (let i = 0; i < 10 && !/→ deepseek:deepseek-v4-flash/.test(screen.text()); i++) {
      const before = screen.text()
      screen.type('\x1b[B')
      await waitChange(screen, before)
    }
    expect(screen.text()).toMatch(/→ deepseek:deepseek-v4-flash/)
    await screen.press('\r', 'model: deepseek:deepseek-v4-flash (from the next request)')
    expect(screen.text()).not.toMatch(/Choose a model/)
    // The editor has the keys again; the next request uses the chosen model.
    await screen.press('hello\r', 'Picked.')
    expect(f.server.requests.at(-1)?.body.model).toBe('deepseek-v4-flash')
    // Esc on a second picker changes nothing.
    await screen.press('/model\r', /Choose a model[\s\S]*→ deepseek:deepseek-v4-flash/)
    await screen.press('\x1b', 'model unchanged: deepseek:deepseek-v4-flash')
    screen.type('\x04')
    expect(await screen.exited).toBe(0)
    const choices = f.log(sessionOf(screen.raw())).flatMap((e) => (e.type === 'model/selected' ? [e.data] : []))
    expect(choices).toEqual([{ provider: 'deepseek', model: 'deepseek-v4-flash' }])
    expect(typed(f.log(sessionOf(screen.raw())))).toEqual(['hello'])
  })

  it('keeps a /model choice in the log: --continue shows it and the next request uses it; bad names are refused', async () => {
    f.server.enqueue(completionResponse({ text: 'First.' }), completionResponse({ text: 'Second.' }))
    const screen = f.open()
    await screen.waitFor(/preset code/)
    // No name: a picker of the usable models; Esc leaves the model as it is.
    await screen.press('/model\r', 'Choose a model')
    expect(screen.text()).toMatch(/deepseek:deepseek-v4-flash/)
    await screen.press('\x1b', 'model unchanged: deepseek:deepseek-v4-pro')
    await screen.press('/model foo:bar\r', 'no provider "foo"')
    await screen.press('/model gpt-5\r', 'deepseek has no model "gpt-5"')
    await screen.press('/model anthropic:claude-x\r', 'provider anthropic has no key or endpoint yet')
    await screen.press('/model deepseek-v4-flash\r', 'model: deepseek:deepseek-v4-flash (from the next request)')
    await screen.press('hello\r', 'First.')
    expect(f.server.requests.at(-1)?.body.model).toBe('deepseek-v4-flash')
    screen.type('\x04')
    expect(await screen.exited).toBe(0)
    const id = sessionOf(screen.raw())
    const choices = f.log(id).flatMap((e) => (e.type === 'model/selected' ? [e.data] : []))
    expect(choices).toEqual([{ provider: 'deepseek', model: 'deepseek-v4-flash' }])

    const resumed = f.open(['--continue'])
    await resumed.waitFor(/deepseek:deepseek-v4-flash · preset code/)
    await resumed.press('again\r', 'Second.')
    expect(f.server.requests.at(-1)?.body.model).toBe('deepseek-v4-flash')
    resumed.type('\x04')
    expect(await resumed.exited).toBe(0)
  })
})
