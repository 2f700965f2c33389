import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context, HarnessError } from '@dsh/kernel'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { SystemPromptService } from '../../src/system-prompt/index.js'
import { findInstructionFiles, renderInstructions } from '../../src/system-prompt/project-instructions.js'

let dir: string
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'dsh-prompt-'))
})
afterEach(() => rmSync(dir, { recursive: true, force: true }))

async function service() {
  const root = new Context()
  await root.plugin(SystemPromptService)
  return root
}

describe('ctx.systemPrompt', () => {
  it('renders sections in order with variables, and dynamic sections separately', async () => {
    const root = await service()
    root.systemPrompt.register({ name: 'b', order: 20, render: () => 'second in {{cwd}}' })
    root.systemPrompt.register({ name: 'a', order: 10, render: () => 'first for {{who}} with {{unknown}}' })
    root.systemPrompt.register({ name: 'skip', render: () => undefined })
    root.systemPrompt.register({ name: 'todo', kind: 'dynamic', render: () => 'todo: 1 item' })
    root.systemPrompt.variable('who', (scope) => `agent ${scope.agentId}`)
    const rendered = await root.systemPrompt.render({ cwd: '/w', agentId: 'x' })
    expect(rendered).toEqual({ system: 'first for agent x with {{unknown}}\n\nsecond in /w', dynamic: 'todo: 1 item' })
  })

  it('lets one complete section replace the prompt and refuses two', async () => {
    const root = await service()
    root.systemPrompt.register({ name: 'base', render: () => 'base' })
    const dispose = root.systemPrompt.register({ name: 'mine', kind: 'complete', render: () => 'only me' })
    expect((await root.systemPrompt.render({ cwd: '/' })).system).toBe('only me')
    root.systemPrompt.register({ name: 'theirs', kind: 'complete', render: () => 'no, me' })
    await expect(root.systemPrompt.render({ cwd: '/' })).rejects.toSatisfy(
      (error) => HarnessError.is(error, 'PROMPT_COMPLETE_CONFLICT') && /mine, theirs/.test((error as Error).message),
    )
    dispose()
    expect((await root.systemPrompt.render({ cwd: '/' })).system).toBe('no, me')
  })

  it('applies per-agent sections only to their agent and drops sections with their plugin', async () => {
    const root = await service()
    const fiber = root.plugin({
      name: 'owner',
      inject: ['systemPrompt'],
      apply(ctx) {
        ctx.systemPrompt.register({ name: 'mine', agentId: 'a1', render: () => 'for a1' })
      },
    })
    await fiber
    expect((await root.systemPrompt.render({ cwd: '/', agentId: 'a1' })).system).toBe('for a1')
    expect((await root.systemPrompt.render({ cwd: '/', agentId: 'a2' })).system).toBe('')
    await fiber.dispose()
    expect((await root.systemPrompt.render({ cwd: '/', agentId: 'a1' })).system).toBe('')
    expect(() => root.systemPrompt.register({ name: 'dup', render: () => '' })).not.toThrow()
    expect(() => root.systemPrompt.register({ name: 'dup', render: () => '' })).toThrow(/already registered/)
  })
})

describe('project instructions', () => {
  it('loads AGENTS.md and CLAUDE.md from the directory and its parents, outermost first', () => {
    const inner = join(dir, 'repo', 'pkg')
    mkdirSync(inner, { recursive: true })
    writeFileSync(join(dir, 'repo', 'AGENTS.md'), 'Run npm test before finishing.')
    writeFileSync(join(inner, 'CLAUDE.md'), 'This package uses tabs.')
    writeFileSync(join(inner, 'AGENTS.md'), 'Package rules.')
    const files = findInstructionFiles(inner, ['AGENTS.md', 'CLAUDE.md']).filter((file) => file.startsWith(dir))
    expect(files).toEqual([join(dir, 'repo', 'AGENTS.md'), join(inner, 'AGENTS.md'), join(inner, 'CLAUDE.md')])
    const text = renderInstructions({ cwd: inner }) ?? ''
    expect(text.indexOf('Run npm test')).toBeLessThan(text.indexOf('Package rules.'))
    expect(text).toContain(
      `<instructions file="${join(inner, 'CLAUDE.md')}">\nThis package uses tabs.\n</instructions>`,
    )
  })

  it('cuts long files with a note', () => {
    writeFileSync(join(dir, 'AGENTS.md'), 'x'.repeat(100))
    const text = renderInstructions({ cwd: dir }, { maxBytes: 10 }) ?? ''
    expect(text).toContain(`${'x'.repeat(10)}\n[... 90 more bytes of ${join(dir, 'AGENTS.md')} not shown]`)
  })
})
