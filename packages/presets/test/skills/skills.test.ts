// Skills end to end: SKILL.md directories from the project (.dsh, .claude) and the user's home, the
// catalog in the system prompt the loop records, and the `skill` tool whose result is the logged load.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from '@dsh/kernel'
import { eventData } from '@dsh/session'
import { startInProcess } from '@dsh/test-support/in-process'
import { afterEach, describe, expect, it } from 'vitest'
import SkillsService, { parseSkill } from '../../src/skills/index.js'
import skillTool from '../../src/skills/tool.js'

const dirs: string[] = []
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true })
})

async function skill(root: string, dir: string, front: string, body: string, extra: Record<string, string> = {}) {
  await mkdir(join(root, dir), { recursive: true })
  await writeFile(join(root, dir, 'SKILL.md'), `---\n${front}\n---\n${body}\n`)
  for (const [file, text] of Object.entries(extra)) await writeFile(join(root, dir, file), text)
}

async function fixture() {
  const base = await mkdtemp(join(tmpdir(), 'dsh-skills-'))
  dirs.push(base)
  const cwd = join(base, 'project')
  const home = join(base, 'home')
  await skill(
    cwd,
    '.dsh/skills/release',
    'name: release\ndescription: >-\n  Cut a release:\n  tag, changelog, publish.',
    '# Release\nRun the checks first.',
    {
      'checklist.md': '- tests',
    },
  )
  await skill(cwd, '.claude/skills/review', 'name: review\ndescription: Review a diff for bugs.', 'Read every hunk.')
  await skill(home, 'skills/release', 'name: release\ndescription: the user one', 'shadowed')
  await skill(home, 'skills/notes', 'name: notes\ndescription: Keep notes in NOTES.md.', 'Append, never rewrite.')
  await skill(home, 'skills/broken', 'description: no name', 'x')
  return { cwd, home }
}

describe('skills', () => {
  it('reads project, .claude and user skills; the project wins a name clash; bad files are reported', async () => {
    const { cwd, home } = await fixture()
    const root = new Context()
    await root.plugin(SkillsService, { cwd, home })
    const skills = await root.skills.list()
    expect(skills.map((s) => [s.name, s.source, s.description])).toEqual([
      ['notes', 'user', 'Keep notes in NOTES.md.'],
      ['release', 'project', 'Cut a release: tag, changelog, publish.'],
      ['review', 'project-claude', 'Review a diff for bugs.'],
    ])
    const problems = await root.skills.problems()
    expect(problems.map((p) => p.message)).toEqual([
      expect.stringContaining('name must match'),
      expect.stringContaining('is shadowed by'),
    ])
    const loaded = await root.skills.load('release')
    expect(loaded.body).toBe('# Release\nRun the checks first.')
    expect(loaded.files).toEqual(['checklist.md'])
    await expect(root.skills.load('nope')).rejects.toMatchObject({ code: 'SKILL_NOT_FOUND' })
    expect(() => parseSkill('no front matter', 'x/SKILL.md')).toThrow(/no YAML front matter/)
  })

  it('puts the catalog in the system prompt and loads a body through the logged skill tool', async () => {
    const { cwd, home } = await fixture()
    const { root } = await startInProcess({
      cwd,
      approval: false,
      invariants: false,
      after: async (root) => {
        await root.plugin(SkillsService, { cwd, home })
        await root.plugin(skillTool)
      },
      script: [
        {
          role: 'assistant',
          content: [
            { type: 'tool-call', id: 'k1', name: 'skill', arguments: { name: 'release' } },
            { type: 'tool-call', id: 'k2', name: 'skill', arguments: { name: 'deploy' } },
          ],
          finishReason: 'tool-calls',
        },
        { role: 'assistant', content: [{ type: 'text', text: 'following the skill' }], finishReason: 'stop' },
      ],
    })
    const agent = await root.agents.create()
    agent.followup('cut a release')
    await agent.whenIdle()

    const seq = agent.session.events.findIndex((e) => e.type === 'request/header')
    const header = agent.session.requestOf(seq)
    expect(header.system).toContain(
      '# Skills\nLoad a skill with the skill tool when the task matches its description:\n- notes: Keep notes in NOTES.md.\n- release: Cut a release: tag, changelog, publish.\n- review: Review a diff for bugs.',
    )
    expect(header.tools?.map((t) => t.name)).toContain('skill')
    const results = eventData(agent.session.events, 'tool/result')
    const loaded = results[0]?.message.content.find((block) => block.type === 'text')?.text ?? ''
    expect(loaded).toContain('Skill "release"')
    expect(loaded).toContain('Other files: checklist.md')
    expect(loaded.endsWith('# Release\nRun the checks first.')).toBe(true)
    expect(results[1]?.message.isError).toBe(true)
    expect(results[1]?.code).toBe('SKILL_NOT_FOUND')
    expect(agent.session.events.at(-1)?.data).toEqual({ reason: 'completed' })
  })
})
