// Issue 34: the terminal chat opened in a folder with untrusted configuration asks before it loads
// any of it, showing what it would enable; "n" keeps it inert, "y" records the trust and loads it.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { completionResponse } from '@dsh/test-support'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { type Fixture, fixture } from './pty.js'

let f: Fixture
beforeEach(async () => {
  f = await fixture()
  mkdirSync(join(f.work, '.claude'))
  writeFileSync(
    join(f.work, '.claude', 'settings.json'),
    JSON.stringify({
      hooks: { UserPromptSubmit: [{ hooks: [{ type: 'command', command: `touch ${join(f.home, 'hook-ran')}` }] }] },
    }),
  )
})
afterEach(async () => {
  await f.close()
})

describe('the chat in an untrusted folder', () => {
  it('asks first: n keeps the hook inert, y trusts the folder and the hook runs', async () => {
    f.server.enqueue(completionResponse({ text: 'first' }))
    const refused = f.open(['say', 'hello'])
    await refused.waitFor('Trust this folder and load it? [y/N]')
    expect(refused.all()).toContain('.claude/settings.json: hooks on UserPromptSubmit')
    refused.type('n\r')
    await refused.waitFor('first')
    refused.type('\x04')
    await refused.exited
    expect(existsSync(join(f.home, 'hook-ran'))).toBe(false)
    expect(existsSync(join(f.home, 'trust.json'))).toBe(false)

    f.server.enqueue(completionResponse({ text: 'second' }))
    const trusted = f.open(['say', 'hello'])
    await trusted.waitFor('Trust this folder and load it? [y/N]')
    trusted.type('y\r')
    await trusted.waitFor('second')
    trusted.type('\x04')
    await trusted.exited
    expect(existsSync(join(f.home, 'hook-ran'))).toBe(true)
    expect(Object.keys(JSON.parse(readFileSync(join(f.home, 'trust.json'), 'utf8')).folders)).toHaveLength(1)
  })
})
