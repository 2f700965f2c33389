// The permissions row in process: an allow rule answers the question a call raised (logged with the
// rule as its reason) where nobody could have answered, and /permissions lists and edits the rules in
// the user's settings file.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import PermissionsService from '@dsh/agent/approval/permissions'
import { defineTool } from '@dsh/agent/tools'
import { eventData } from '@dsh/session'
import { SettingsService } from '@dsh/settings'
import { calls, startInProcess, text } from '@dsh/test-support/in-process'
import { afterEach, describe, expect, it } from 'vitest'
import builtin from '../src/builtin-commands.js'
import { CommandsService } from '../src/commands.js'

const homes: string[] = []
afterEach(() => {
  for (const home of homes.splice(0)) rmSync(home, { recursive: true, force: true })
})

async function boot(rows: { allow?: string[] }) {
  const home = mkdtempSync(join(tmpdir(), 'dsh-permissions-'))
  homes.push(home)
  const ran: string[] = []
  const dsh = await startInProcess({
    script: [calls(['n1', 'note', { text: 'hi' }]), text('ok')],
    before: (root) => {
      root.plugin(SettingsService, { home, cwd: home, env: {} })
      root.plugin(PermissionsService, rows)
      root.plugin(CommandsService)
      root.plugin(builtin)
    },
  })
  dsh.root.tools.register(
    defineTool<{ text: string }>({
      name: 'note',
      description: 'Writes a note (asks first).',
      parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
      execute: (args) => {
        ran.push(args.text)
        return 'noted'
      },
    }),
  )
  dsh.root.on('tools/pre-execute', async (input, next) => (input.toolName === 'note' ? { action: 'ask' } : next()))
  return { ...dsh, home, ran }
}

describe('the permissions row', () => {
  it('an allow rule answers the question, logged with the rule; without it nobody can', async () => {
    const refused = await boot({})
    const first = await refused.root.agents.create()
    first.followup('go')
    await first.whenIdle()
    expect(refused.ran).toEqual([])

    const allowed = await boot({ allow: ['note'] })
    const agent = await allowed.root.agents.create()
    agent.followup('go')
    await agent.whenIdle()
    expect(allowed.ran).toEqual(['hi'])
    expect(eventData(agent.session.events, 'approval/decided')).toEqual([
      expect.objectContaining({
        decision: 'allowed-once',
        by: 'hook',
        reason: expect.stringContaining('rule allow note'),
      }),
    ])
  })

  it('/permissions adds, lists and removes rules in the user settings file', async () => {
    const { root, home } = await boot({})
    const session = root.sessions.create()
    const added = await root.commands.dispatch('/permissions deny Bash(rm:*)', { session })
    expect(added).toMatchObject({ ok: true })
    expect(readFileSync(join(home, 'settings.yaml'), 'utf8')).toContain('Bash(rm:*)')
    const listed = await root.commands.dispatch('/permissions', { session })
    expect(listed.ok && listed.text).toContain('deny Bash(rm:*)')
    expect(await root.commands.dispatch('/permissions deny Bash(', { session })).toMatchObject({ ok: false })
    expect(await root.commands.dispatch('/permissions remove Bash(rm:*)', { session })).toMatchObject({ ok: true })
    expect(readFileSync(join(home, 'settings.yaml'), 'utf8')).not.toContain('Bash(rm:*)')
  })
})
