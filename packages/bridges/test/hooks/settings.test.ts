import { Context, FiberState } from '@dsh/kernel'
import { SessionService } from '@dsh/session'
import { describe, expect, it } from 'vitest'
import HooksBridge, { parseHooks, parseRowHooks } from '../../src/hooks/index.js'

describe('hooks settings', () => {
  it('matches tool names exactly or as a whole-name regex; * and an empty matcher match all', () => {
    const { hooks, problems } = parseHooks(
      {
        PreToolUse: [
          { matcher: 'Bash', hooks: [{ type: 'command', command: 'a' }] },
          { matcher: 'Edit|Write', hooks: [{ type: 'command', command: 'b' }] },
          { matcher: 'mcp__fs__.*', hooks: [{ type: 'command', command: 'c' }] },
          { hooks: [{ type: 'command', command: 'd' }] },
        ],
      },
      'test',
    )
    expect(problems).toEqual([])
    const matching = (names: string[]) => hooks.filter((hook) => hook.matches(names)).map((hook) => hook.command)
    expect(matching(['bash', 'Bash'])).toEqual(['a', 'd'])
    expect(matching(['Bashful'])).toEqual(['d'])
    expect(matching(['write', 'Write'])).toEqual(['b', 'd'])
    expect(matching(['mcp__fs__read_file'])).toEqual(['c', 'd'])
  })

  it('reports unsupported events and hook types; the row config fails loud', async () => {
    const { problems } = parseHooks(
      { Notification: [], PreToolUse: [{ matcher: '(', hooks: [] }, { hooks: [{ type: 'prompt', prompt: 'x' }] }] },
      'file',
    )
    expect(problems).toHaveLength(3)
    const root = new Context()
    root.plugin(SessionService)
    const fiber = root.plugin(HooksBridge, {
      user: false,
      project: false,
      hooks: { Stop: [{ hooks: [{ type: 'http', command: '' }] }] },
    })
    await fiber
    expect(fiber.state).not.toBe(FiberState.ACTIVE)
    expect(() => parseRowHooks({ Stop: [{ hooks: [{ type: 'http' }] }] })).toThrow(
      expect.objectContaining({ code: 'HOOKS_CONFIG_INVALID' }),
    )
  })
})
