// Permission rules on the terminal chat: /permissions deny RULE writes the user's settings file, and
// the next tool call the rule covers is refused (the file it would remove is still there).
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
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

describe('/permissions in the chat', () => {
  it('adds a deny rule to settings.yaml, and the rule stops the next matching call', async () => {
    writeFileSync(join(f.work, 'victim.txt'), 'keep\n')
    const screen = f.open()
    await screen.waitFor(/preset code/)
    screen.type('/permissions deny Bash(rm:*)\r')
    await screen.waitFor('saved in')
    expect(readFileSync(join(f.home, 'settings.yaml'), 'utf8')).toContain('Bash(rm:*)')
    f.server.enqueue(
      completionResponse({ toolCalls: [{ id: 'c1', name: 'bash', arguments: '{"command":"rm victim.txt"}' }] }),
      completionResponse({ text: 'tried' }),
    )
    screen.type('remove the victim\r')
    await screen.waitFor('tried')
    expect(existsSync(join(f.work, 'victim.txt'))).toBe(true)
    screen.type('\x04')
    await screen.exited
  })
})
