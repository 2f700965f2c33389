// Presets in one process: lookup (project over user over shipped, with what each hides), clear errors
// for a broken preset.yml, the composition an agent gets (tool policy, a prompt section standing in for
// `base`, the skill filter, a row whose tool is that agent's alone, the preset's model), the durable
// `preset/selected` fact, and switching only before the session's first turn.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { defineTool } from '@dsh/agent/tools'
import { HarnessError } from '@dsh/kernel'
import SkillsService from '@dsh/presets/skills'
import skillTool from '@dsh/presets/skills/tool'
import { FolderTrust } from '@dsh/settings/trust'
import { calls, dataOf, type InProcessOptions, startInProcess, text } from '@dsh/test-support/in-process'
import { afterEach, describe, expect, it } from 'vitest'
import PresetsService, { formatEffective } from '../src/index.js'

const LINT_ROW = fileURLToPath(new URL('./fixtures/lint-row.ts', import.meta.url))
const dirs: string[] = []
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true })
})

async function write(root: string, files: Record<string, string>) {
  for (const [path, body] of Object.entries(files)) {
    await mkdir(join(root, path, '..'), { recursive: true })
    await writeFile(join(root, path), body)
  }
}

async function fixture(files: Record<string, string> = {}) {
  const base = await mkdtemp(join(tmpdir(), 'dsh-presets-'))
  dirs.push(base)
  const cwd = join(base, 'project')
  const home = join(base, 'home')
  await mkdir(cwd, { recursive: true })
  await write(base, files)
  return { base, cwd, home }
}

const tool = (name: string, effect?: () => void) =>
  defineTool({
    name,
    description: `${name} tool`,
    parameters: { type: 'object' },
    execute: () => {
      effect?.()
      return `${name} ran`
    },
  })

async function boot(cwd: string, home: string, script: InProcessOptions['script'] = []) {
  const dsh = await startInProcess({
    cwd,
    script,
    before: (root) => {
      root.plugin(PresetsService, { home })
      root.plugin(SkillsService, { cwd, home })
      root.plugin(skillTool)
    },
    after: (root) => {
      root.systemPrompt.register({ name: 'base', order: 0, render: () => 'BASE PROMPT' })
      for (const name of ['read', 'grep', 'write', 'bash']) root.tools.register(tool(name))
    },
  })
  return dsh
}

const codeOf = async (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => (HarnessError.is(error) ? error.code : String(error)),
  )

describe('preset lookup', () => {
  it('finds project over user over shipped presets, and says what each one hides', async () => {
    const { cwd, home } = await fixture({
      'project/.dsh/presets/plan/preset.yml': 'description: the project plan\n',
      'home/presets/plan/preset.yml': 'description: the user plan\n',
      'home/presets/review/preset.yml': 'description: reviews\ntools: { allow: [read, grep] }\n',
    })
    const { root } = await boot(cwd, home)
    const presets = await root.presets.list(cwd)
    expect(presets.map((preset) => `${preset.name}:${preset.source.origin}`)).toEqual([
      'ask:shipped',
      'code:shipped',
      'minimal:shipped',
      'plan:project',
      'review:user',
    ])
    const plan = presets.find((preset) => preset.name === 'plan')
    expect(plan?.description).toBe('the project plan')
    expect(plan?.shadows?.map((source) => source.origin)).toEqual(['user', 'shipped'])
    await expect(root.presets.get('nope', cwd)).rejects.toMatchObject({
      code: 'PRESET_NOT_FOUND',
      message: expect.stringContaining('available: ask, code, minimal, plan, review'),
    })
  })

  it('names the file and key of a bad value, and lists broken presets without failing the others', async () => {
    const { cwd, home } = await fixture({
      'project/.dsh/presets/broken/preset.yml': 'tools: { allow: read }\nmodle: x\n',
    })
    const { root } = await boot(cwd, home)
    const file = join(cwd, '.dsh', 'presets', 'broken', 'preset.yml')
    const error = await root.presets.get('broken', cwd).catch((caught: unknown) => caught)
    expect(error).toMatchObject({ code: 'PRESET_INVALID' })
    expect((error as Error).message).toContain(file)
    expect((error as Error).message).toContain('tools.allow: must be a list of names or globs')
    expect((error as Error).message).toContain('modle: unknown key; allowed: description, tools, prompt')
    const { presets, problems } = await root.presets.scan(cwd)
    expect(presets.map((preset) => preset.name)).toContain('code')
    expect(problems.map((problem) => problem.file)).toEqual([file])
  })
})

describe('an agent composed from a preset', () => {
  it("gets the preset's tools, prompt, skills, model and rows, and only that agent does", async () => {
    const { cwd, home } = await fixture({
      'project/.dsh/presets/reviewer/preset.yml': [
        'description: Reviews diffs',
        'tools:',
        '  allow: [read, gr?p, skill, "lint*"]',
        'model: scripted:review-model',
        'reasoningEffort: high',
        'skills: [check-*]',
        'prompt:',
        '  - file: persona.md',
        '    replaces: [base]',
        '    order: 5',
        'rows:',
        '  - id: lint',
        `    use: ${LINT_ROW}`,
        '    config: { word: !env "LINT_WORD:tidy" }',
      ].join('\n'),
      'project/.dsh/presets/reviewer/persona.md': 'You review diffs for {{cwd}}.\n',
      'project/.dsh/skills/check-style/SKILL.md': '---\nname: check-style\ndescription: Style checks.\n---\nbody\n',
      'project/.dsh/skills/deploy/SKILL.md': '---\nname: deploy\ndescription: Deploys.\n---\nbody\n',
    })
    // A preset with rows runs code in this process: it loads only in a trusted folder.
    const untrusted = await boot(cwd, home)
    expect(await codeOf(untrusted.root.presets.get('reviewer', cwd))).toBe('PRESET_UNTRUSTED')
    new FolderTrust(home).grant(cwd)
    const { root, adapter } = await boot(cwd, home, [calls(['c1', 'write', {}], ['c2', 'lint', {}]), text('done')])
    const reviewer = await root.agents.create({ cwd, preset: 'reviewer' })
    const plain = await root.agents.create({ cwd })
    expect(reviewer.preset).toBe('reviewer')
    expect(plain.preset).toBe('code')
    expect(reviewer.model).toMatchObject({ provider: 'scripted', model: 'review-model', reasoningEffort: 'high' })

    reviewer.followup('review')
    await reviewer.whenIdle()
    const request = adapter.dispatches[0]?.request
    expect(request?.tools?.map((schema) => schema.name)).toEqual(['grep', 'lint', 'read', 'skill'])
    expect(request?.tools?.find((schema) => schema.name === 'lint')?.description).toBe('lint tidy')
    expect(request?.system).toContain(`You review diffs for ${cwd}.`)
    expect(request?.system).not.toContain('BASE PROMPT')
    expect(request?.system).toContain('- check-style: Style checks.')
    expect(request?.system).not.toContain('deploy')
    const results = dataOf(reviewer.session, 'tool/result').map((result) => result.code ?? 'ok')
    expect(results).toEqual(['TOOL_NOT_ALLOWED', 'ok'])
    expect(dataOf(reviewer.session, 'preset/selected')).toEqual([
      { name: 'reviewer', by: 'request', origin: 'project' },
    ])

    // The other agent: every global tool, the base prompt, no lint tool, all skills.
    const plainTools = root.tools.list({ agentId: plain.id, restrictions: plain.toolRestrictions })
    expect(plainTools.map((schema) => schema.name)).toEqual(['bash', 'grep', 'read', 'skill', 'write'])
    expect(dataOf(plain.session, 'preset/selected')).toEqual([{ name: 'code', by: 'default', origin: 'shipped' }])
    expect((await root.skills.list({ agentId: plain.id })).map((skill) => skill.name)).toEqual([
      'check-style',
      'deploy',
    ])

    // Disposing the agent removes what its preset registered.
    await reviewer.dispose()
    expect(root.tools.list({ agentId: reviewer.id }).map((schema) => schema.name)).not.toContain('lint')
    expect([...root.systemPrompt.sections.keys()].filter((name) => name.startsWith('preset:'))).toEqual([])
    await plain.dispose()
  })

  it('prints the effective configuration with where each part came from', async () => {
    const { cwd, home } = await fixture()
    const { root } = await boot(cwd, home)
    const described = await root.presets.describe('plan', { cwd })
    expect(described.tools).toMatchObject({
      from: 'preset',
      where: expect.stringMatching(/shipped\/plan\/preset.yml$/),
    })
    expect(described.tools.value.visible).toEqual(['grep', 'read', 'skill'])
    expect(described.tools.value.hidden).toEqual(['bash', 'write'])
    expect(described.model).toMatchObject({ value: 'scripted:scripted', from: 'global' })
    expect(described.prompt.map((section) => `${section.name}:${section.from}`)).toEqual([
      'base:global',
      'plan:preset',
      'skills:global',
    ])
    const printed = formatEffective(await root.presets.describe('code', { cwd, explicit: { model: 'mine' } }))
    expect(printed).toContain('model: scripted:mine  # agent: agent settings')
    expect(printed).toContain('tools:  # global: tool rows (profile)')
    expect(printed).toMatch(/^preset: code {2}# shipped: .*shipped\/code$/m)
  })
})

describe('switching preset', () => {
  it('switches an empty session and refuses once it has a turn; resume keeps the logged preset', async () => {
    const { base, cwd, home } = await fixture()
    const sessionsDir = join(base, 'sessions')
    const dsh = await startInProcess({
      cwd,
      sessionsDir,
      script: [text('one')],
      before: (root) => root.plugin(PresetsService, { home }),
      after: (root) => {
        for (const name of ['read', 'grep', 'write', 'bash']) root.tools.register(tool(name))
      },
    })
    const agent = await dsh.root.agents.create({ cwd })
    expect(agent.preset).toBe('code')
    await agent.setPreset('minimal')
    expect(agent.preset).toBe('minimal')
    expect(await codeOf(agent.setPreset('nope'))).toBe('PRESET_NOT_FOUND')
    expect(agent.preset).toBe('minimal')
    agent.followup('go')
    await agent.whenIdle()
    expect(dsh.adapter.dispatches[0]?.request?.tools?.map((schema) => schema.name)).toEqual(['bash', 'read'])
    expect(await codeOf(agent.setPreset('plan'))).toBe('PRESET_LOCKED')
    expect(dataOf(agent.session, 'preset/selected').map((selected) => selected.name)).toEqual(['code', 'minimal'])
    const id = agent.session.id
    await dsh.root.sessions.flush(agent.session)
    await agent.dispose()

    const restored = await dsh.root.sessionPersistence.resume(id)
    const resumed = await dsh.root.agents.create({ session: restored })
    expect(resumed.preset).toBe('minimal')
    expect(resumed.toolRestrictions).toEqual([{ allow: ['bash', 'read'] }])
    expect(await codeOf(resumed.setPreset('code'))).toBe('PRESET_LOCKED')
    expect(resumed.preset).toBe('minimal')
    await resumed.dispose()
  })

  it('refuses a preset without a presets row instead of ignoring it', async () => {
    const { root } = await startInProcess()
    expect(await codeOf(root.agents.create({ preset: 'plan' }))).toBe('NO_PRESETS')
    const agent = await root.agents.create()
    expect(agent.preset).toBeUndefined()
    expect(agent.toolRestrictions).toEqual([])
  })
})
