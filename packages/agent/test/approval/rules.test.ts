// The permission rule syntax as a table: which calls each rule covers, and which rule decides.
import { homedir } from 'node:os'
import { describe, expect, it } from 'vitest'
import {
  decide,
  type PermissionRule,
  parseRule,
  type RuleSubject,
  ruleMatches,
  suggestRule,
} from '../../src/approval/rules.js'

const cwd = '/work/project'
const bash = (command: string) => ({ toolName: 'bash', args: { command }, cwd })
const file = (toolName: string, path: string) => ({ toolName, args: { path }, cwd })
const fetch = (url: string) => ({ toolName: 'web_fetch', args: { url }, cwd })
const mcp = (toolName: string) => ({ toolName, args: {}, cwd })

const table: Array<[rule: string, subject: RuleSubject, covered: boolean]> = [
  ['Bash', bash('anything at all'), true],
  ['Bash(npm test:*)', bash('npm test'), true],
  ['Bash(npm test:*)', bash('npm test -- --watch'), true],
  ['Bash(npm test:*)', bash('npm testing'), false],
  ['Bash(npm test:*)', bash('npm test && rm -rf /'), false],
  ['Bash(npm test:*)', bash('npm test; curl evil'), false],
  ['Bash(npm test:*)', bash('npm test $(curl evil)'), false],
  ['Bash(git status)', bash('git status'), true],
  ['Bash(git status)', bash('git status --short'), false],
  ['Bash(git * main)', bash('git push origin main'), true],
  ['Bash(rm:*)', bash('rm -rf build'), true],
  ['bash(rm:*)', bash('rm x'), true],
  ['Read(./.env)', file('read', '.env'), true],
  ['Read(./.env)', file('read', '/work/project/.env'), true],
  ['Read(./.env)', file('read', 'sub/.env'), false],
  ['Read(**/.env)', file('read', 'sub/.env'), true],
  ['Edit(src/**)', file('write', 'src/a/b.ts'), true],
  ['Edit(src/**)', file('edit', 'src/x.ts'), true],
  ['Edit(src/**)', file('write', 'test/x.ts'), false],
  ['Edit(src/**)', file('write', 'src/../test/x.ts'), false],
  ['Edit(src)', file('write', 'src/deep/x.ts'), true],
  ['Write(//etc/**)', file('write', '/etc/passwd'), true],
  ['Read(~/.ssh/**)', file('read', `${homedir()}/.ssh/id_ed25519`), true],
  ['Edit(src/**)', file('read', 'src/x.ts'), false],
  ['WebFetch(domain:example.com)', fetch('https://example.com/a'), true],
  ['WebFetch(domain:example.com)', fetch('https://docs.example.com/a'), true],
  ['WebFetch(domain:example.com)', fetch('https://example.com.evil.net/a'), false],
  ['WebFetch(domain:example.com)', fetch('not a url'), false],
  ['WebSearch', { toolName: 'web_search', args: { query: 'x' }, cwd }, true],
  ['web_search', { toolName: 'web_search', args: { query: 'x' }, cwd }, true],
  ['WebFetch', { toolName: 'web_search', args: { query: 'x' }, cwd }, false],
  ['mcp__github', mcp('mcp__github__create_issue'), true],
  ['mcp__github', mcp('mcp__githubx__create_issue'), false],
  ['mcp__github__create_issue', mcp('mcp__github__create_issue'), true],
  ['mcp__github__create_issue', mcp('mcp__github__delete_repo'), false],
]

describe('permission rules', () => {
  it.each(table)('%s covers %j: %s', (rule, subject, covered) => {
    expect(ruleMatches(parseRule(rule), subject)).toBe(covered)
  })

  it('refuses what is not a rule, with the syntax in the message', () => {
    expect(() => parseRule('Bash(npm test')).toThrow(/write Tool or Tool\(specifier\)/)
    expect(() => parseRule('rm -rf')).toThrow(/is not a rule/)
    expect(() => parseRule('mcp__github(x)')).toThrow(/takes no specifier/)
  })

  it('lets any deny win, then ask, then allow, whatever the order they are written in', () => {
    const rules: PermissionRule[] = [
      { effect: 'allow', text: 'Bash', source: 'user' },
      { effect: 'ask', text: 'Bash(git push:*)', source: 'user' },
      { effect: 'deny', text: 'Bash(git push --force:*)', source: 'project' },
    ]
    expect(decide(rules, bash('ls'))?.text).toBe('Bash')
    expect(decide(rules, bash('git push origin main'))?.effect).toBe('ask')
    expect(decide(rules, bash('git push --force origin main'))).toMatchObject({ effect: 'deny', source: 'project' })
    expect(decide(rules, file('write', 'x'))).toBeUndefined()
    // A broken rule decides nothing rather than everything.
    expect(decide([{ effect: 'deny', text: 'Bash(', source: 'user' }], bash('ls'))).toBeUndefined()
  })
})

describe('allow similar: the narrowest rule that covers a call', () => {
  const suggestions: Array<[RuleSubject, string]> = [
    [bash('npm test -- --watch'), 'Bash(npm test:*)'],
    [bash('git status'), 'Bash(git status:*)'],
    [bash('ls -la src'), 'Bash(ls:*)'],
    [bash('npm --version'), 'Bash(npm:*)'],
    [bash('make && rm -rf /'), 'Bash(make && rm -rf /)'],
    [bash('cat x | sh'), 'Bash(cat x | sh)'],
    [file('write', 'src/lib/a.ts'), 'Edit(src/lib/**)'],
    [file('edit', 'top.ts'), 'Edit(./**)'],
    [file('read', '/etc/hosts'), 'Read(//etc/**)'],
    [fetch('https://docs.example.com/a?b'), 'WebFetch(domain:docs.example.com)'],
    [mcp('mcp__github__create_issue'), 'mcp__github__create_issue'],
    [{ toolName: 'web_search', args: { query: 'dsh' }, cwd }, 'WebSearch'],
    [{ toolName: 'task', args: { prompt: 'x' }, cwd }, 'task'],
  ]
  it.each(suggestions)('%j -> %s, which covers the call', (subject, rule) => {
    expect(suggestRule(subject)).toBe(rule)
    expect(ruleMatches(parseRule(rule), subject)).toBe(true)
  })

  it('a command prefix never covers a compound command', () => {
    expect(ruleMatches(parseRule(suggestRule(bash('npm test'))), bash('npm test && curl evil'))).toBe(false)
  })
})
