// Permission rules in the syntax people already write for coding agents: `Tool` or `Tool(specifier)`.
// `Bash(npm test:*)` is a command prefix, `Bash(git status)` one exact command; `Read(./.env)`,
// `Edit(src/**)` are path globs (relative to the project, `~/` the home, `//` an absolute path);
// `WebFetch(domain:example.com)` a host and its subdomains; `mcp__server` or `mcp__server__tool` an MCP
// server's tools. Tool names are the dsh ones (`bash`, `write`) or their familiar capitalised forms.
import { homedir } from 'node:os'
import { dirname, isAbsolute, relative, resolve, sep } from 'node:path'
import picomatch from 'picomatch'

export type RuleEffect = 'allow' | 'ask' | 'deny'

export interface PermissionRule {
  effect: RuleEffect
  /** The rule as written. */
  text: string
  /** Where it was written (a settings file), for the message that names it. */
  source: string
}

interface ParsedRule {
  /** dsh tool names the rule covers; `*` for every tool. */
  tools: readonly string[] | '*'
  /** `mcp__server` prefix rules. */
  prefix?: string
  specifier?: string
}

/** What a call offers to be matched. */
export interface RuleSubject {
  toolName: string
  args: Readonly<Record<string, unknown>>
  /** The session's workspace: relative path rules are read from it. */
  cwd: string
}

const FILE_EDIT = ['write', 'edit', 'multi_edit', 'apply_patch', 'notebook_edit']
const ALIASES: Record<string, readonly string[]> = {
  bash: ['bash'],
  read: ['read'],
  edit: FILE_EDIT,
  write: FILE_EDIT,
  multiedit: FILE_EDIT,
  grep: ['grep'],
  glob: ['glob'],
  ls: ['ls'],
  webfetch: ['web_fetch'],
  web_fetch: ['web_fetch'],
  websearch: ['web_search'],
  web_search: ['web_search'],
  task: ['task'],
}

const RULE = /^([A-Za-z_][A-Za-z0-9_-]*)(?:\((.*)\))?$/s

/** Parses one rule; throws with the reason when it is not one. */
export function parseRule(text: string): ParsedRule {
  const match = RULE.exec(text.trim())
  if (!match) throw new Error(`"${text}" is not a rule: write Tool or Tool(specifier), e.g. Bash(npm test:*)`)
  const name = match[1] as string
  const specifier = match[2]?.trim()
  if (name === '*') return { tools: '*' }
  if (name.startsWith('mcp__')) {
    if (specifier !== undefined)
      throw new Error(`"${text}": an MCP rule takes no specifier (mcp__server or mcp__server__tool)`)
    const parts = name.split('__')
    return parts.length >= 3 ? { tools: [name] } : { tools: [], prefix: `${name}__` }
  }
  const tools = ALIASES[name.toLowerCase()] ?? [name]
  return specifier === undefined || specifier === '' || specifier === '*' ? { tools } : { tools, specifier }
}

/** Whether `rule` covers the call. */
export function ruleMatches(rule: ParsedRule, subject: RuleSubject): boolean {
  const covered =
    rule.tools === '*' ||
    rule.tools.includes(subject.toolName) ||
    (rule.prefix !== undefined && subject.toolName.startsWith(rule.prefix))
  if (!covered) return false
  if (rule.specifier === undefined) return true
  if (subject.toolName === 'bash') return commandMatches(rule.specifier, subject.args.command)
  if (rule.specifier.startsWith('domain:')) return domainMatches(rule.specifier.slice(7), subject.args.url)
  const path = subject.args.path ?? subject.args.file_path ?? subject.args.file
  return typeof path === 'string' && pathMatches(rule.specifier, path, subject.cwd)
}

/** `npm test:*` covers `npm test` and `npm test -- x`, not `npm testing`; without `:*`, the exact command. */
function commandMatches(specifier: string, command: unknown): boolean {
  if (typeof command !== 'string') return false
  const text = command.trim()
  if (specifier.endsWith(':*')) {
    const prefix = specifier.slice(0, -2).trim()
    // A prefix never reaches past a command separator: `npm test && rm -rf /` is not `npm test`.
    if (/[;&|`\n]|\$\(/.test(text.slice(prefix.length))) return false
    return text === prefix || text.startsWith(`${prefix} `)
  }
  if (specifier.includes('*')) return !/[;&|`\n]|\$\(/.test(text) && picomatch.isMatch(text, specifier, { bash: true })
  return text === specifier.trim()
}

function domainMatches(domain: string, url: unknown): boolean {
  if (typeof url !== 'string') return false
  try {
    const host = new URL(url).hostname.toLowerCase()
    const want = domain.toLowerCase()
    return host === want || host.endsWith(`.${want}`)
  } catch {
    return false
  }
}

/** A path glob: `//abs/**` absolute, `~/x` under the home, `/x` and `./x` and `x` under the project. */
function pathMatches(specifier: string, path: string, cwd: string): boolean {
  const target = isAbsolute(path) ? resolve(path) : resolve(cwd, path)
  let pattern: string
  if (specifier.startsWith('//')) pattern = specifier.slice(1)
  else if (specifier.startsWith('~/')) pattern = resolve(homedir(), specifier.slice(2))
  else pattern = resolve(cwd, specifier.replace(/^\.?\//, ''))
  if (picomatch.isMatch(target, pattern, { dot: true })) return true
  // `src` also covers what is below it, as `src/**` does.
  const rel = relative(pattern, target)
  return !specifier.includes('*') && rel !== '' && !rel.startsWith('..') && !isAbsolute(rel)
}

/** The deciding rule for a call: any deny wins, then ask, then allow; undefined when none covers it. */
export function decide(rules: readonly PermissionRule[], subject: RuleSubject): PermissionRule | undefined {
  for (const effect of ['deny', 'ask', 'allow'] as const) {
    const found = rules.find((rule) => rule.effect === effect && safeMatch(rule, subject))
    if (found) return found
  }
  return undefined
}

function safeMatch(rule: PermissionRule, subject: RuleSubject): boolean {
  try {
    return ruleMatches(parseRule(rule.text), subject)
  } catch {
    return false
  }
}

/** Commands whose second word is the real command (`npm test`, `git status`, `cargo build`). */
const TWO_WORD = new Set([
  'npm',
  'npx',
  'pnpm',
  'yarn',
  'bun',
  'deno',
  'git',
  'cargo',
  'go',
  'docker',
  'kubectl',
  'make',
  'pip',
  'pip3',
  'poetry',
  'uv',
  'dotnet',
  'gradle',
  'mvn',
  'bundle',
  'rails',
  'mix',
  'composer',
  'gh',
  'dsh',
])
const FILE_TOOLS = new Set([...FILE_EDIT, 'read', 'grep', 'glob', 'ls'])

/**
 * The narrowest rule that covers the call and calls like it, offered as "allow similar": a command's
 * leading word(s) as a prefix (`Bash(npm test:*)`; a compound command only exactly), the directory of a
 * path as a glob (`Edit(src/lib/**)`), a URL's host (`WebFetch(domain:example.com)`), else the tool.
 */
export function suggestRule(subject: RuleSubject): string {
  const { toolName, args, cwd } = subject
  if (toolName === 'bash' && typeof args.command === 'string') {
    const command = args.command.trim().replace(/\s+/g, ' ')
    if (command === '' || /[;&|`\n()<>]|\$\(/.test(command)) return `Bash(${command})`
    const words = command.split(' ')
    const lead = words[0] as string
    const second = words[1]
    const prefix = TWO_WORD.has(lead) && second !== undefined && !second.startsWith('-') ? `${lead} ${second}` : lead
    return `Bash(${prefix}:*)`
  }
  if (toolName === 'web_fetch' && typeof args.url === 'string') {
    try {
      return `WebFetch(domain:${new URL(args.url).hostname})`
    } catch {}
  }
  if (toolName === 'web_search') return 'WebSearch'
  const path = args.path ?? args.file_path ?? args.file
  if (FILE_TOOLS.has(toolName) && typeof path === 'string') {
    const word = FILE_EDIT.includes(toolName)
      ? 'Edit'
      : ({ read: 'Read', grep: 'Grep', glob: 'Glob' }[toolName] ?? 'LS')
    const target = isAbsolute(path) ? resolve(path) : resolve(cwd, path)
    const dir = toolName === 'ls' || toolName === 'glob' || toolName === 'grep' ? target : dirname(target)
    const rel = relative(cwd, dir)
    if (rel === '') return `${word}(./**)`
    if (!rel.startsWith('..') && !isAbsolute(rel)) return `${word}(${rel.split(sep).join('/')}/**)`
    return `${word}(/${dir.split(sep).join('/')}/**)`
  }
  return toolName
}
