// The `permissions` row: `ctx.permissions`, rules a person writes (`permissions.allow` / `ask` / `deny`
// in the user's settings, and in a project's settings once the folder is trusted) deciding tool calls
// before anyone is asked. Any deny wins, then ask, then allow. A deny is the call's logged result; an
// ask rule puts the question (its reason names the rule); an allow rule answers a question the call
// raised, logged as the decision's reason. An allow never widens the sandbox: it only answers.
// Every question it lets through carries the narrowest rule covering the call ("allow similar"); a
// person who allows with that rule keeps it for the session (logged in the decision, restored on
// resume) or in the user's or the project's settings.

import { existsSync, statSync } from 'node:fs'
import { join } from 'node:path'
import type {} from '@dsh/composition'
import { type Context, directService, HarnessError, Service } from '@dsh/kernel'
import type {} from '@dsh/session'
import { readConfigText } from '@dsh/settings'
import { projectTrust } from '@dsh/settings/trust'
import type { ToolCallInput } from '../tools/types.js'
import type { ApprovalAnswer, ApprovalQuestion, RememberedRule } from './index.js'
import {
  decide,
  type PermissionRule,
  parseRule,
  type RuleEffect,
  type RuleSubject,
  ruleMatches,
  suggestRule,
} from './rules.js'

export type { PermissionRule, RuleEffect } from './rules.js'

declare module 'cordis' {
  interface Context {
    permissions: PermissionsService
  }
}

interface RuleLists {
  allow?: string[]
  ask?: string[]
  deny?: string[]
}

declare module '@dsh/settings' {
  interface SettingsMap {
    /** Permission rules: `{ allow: [...], ask: [...], deny: [...] }` such as `Bash(npm test:*)`. */
    permissions: RuleLists
  }
}

export interface PermissionsConfig {
  /** Rules from the row itself (a user patch), beside the settings files'. */
  allow?: string[]
  ask?: string[]
  deny?: string[]
}

const EFFECTS: readonly RuleEffect[] = ['allow', 'ask', 'deny']
const list = { type: 'array', items: { type: 'string', minLength: 1 } }

export class PermissionsService extends Service {
  static readonly provide = 'permissions'
  readonly config: PermissionsConfig
  readonly home: Context
  private readonly settings: () => Context['settings'] | undefined
  private readonly launcher: () => Context['launcher'] | undefined
  /** Calls an allow rule may answer a question for, by call id, until their result. */
  private readonly pending = new Map<string, RuleSubject & { sessionId?: string }>()
  /** Parsed `.claude/settings*.json` permissions by file, with the stat they were read at. */
  private readonly claudeCache = new Map<string, { stamp: string; lists: RuleLists | undefined }>()
  /** "Allow similar" rules kept for a session, by session id (their durable home is the log). */
  private readonly sessionRules = new Map<string, PermissionRule[]>()

  constructor(ctx: Context, config: PermissionsConfig = {}) {
    super(ctx, 'permissions')
    this.config = config ?? {}
    this.home = ctx
    // Read on every tool call: through direct readers, not the tracing proxies (decision 351).
    this.settings = directService(ctx, 'settings')
    this.launcher = directService(ctx, 'launcher')
    for (const effect of EFFECTS) for (const text of this.config[effect] ?? []) check(text, 'permissions row config')
    ctx.inject(['settings'], (inner) => {
      inner.settings.define('permissions', {
        schema: {
          type: 'object',
          properties: { allow: list, ask: list, deny: list },
          additionalProperties: false,
        },
        default: {},
        description: 'permission rules: { allow, ask, deny } lists such as Bash(npm test:*), Edit(src/**), mcp__github',
        allowed: '{ allow?: [rule], ask?: [rule], deny?: [rule] } where a rule is Tool or Tool(specifier)',
        check: (value) => {
          for (const effect of EFFECTS)
            for (const text of (value as RuleLists)[effect] ?? [])
              try {
                parseRule(text)
              } catch (error) {
                return (error as Error).message
              }
          return undefined
        },
      })
    })
    // Outermost on the policy layer: a deny is final whatever a later listener would say.
    ctx.on('tools/pre-execute', (call, next) => this.preExecute(call, next), true)
    ctx.on(
      'approval/request',
      async (question, next) => {
        const subject = question.toolCallId === undefined ? undefined : this.pending.get(question.toolCallId)
        const rule = subject && decide(this.rulesFor(subject.sessionId), subject)
        if (rule?.effect === 'allow') return { decision: 'allowed-once', reason: `allowed by ${describe(rule)}` }
        return this.checkRemembered(question, subject, await next())
      },
      true,
    )
    ctx.on('tools/result', (result) => void this.pending.delete(result.toolCallId))
    ctx.on('approval/suggest-rule', (request) => {
      const subject = request.toolCallId === undefined ? undefined : this.pending.get(request.toolCallId)
      return subject ? suggestRule(subject) : undefined
    })
    ctx.on('approval/decided', (decided) => {
      if (decided.rule && decided.sessionId !== undefined) this.keep(decided.sessionId, decided.rule)
    })
    ctx.on('session/restored', (session) => {
      for (const event of session.events) {
        const rule = event.type === 'approval/decided' ? event.data.rule : undefined
        if (rule?.scope === 'session') this.keepForSession(session.id, rule.text)
      }
    })
    ctx.on('session/closed', (session) => void this.sessionRules.delete(session.id))
  }

  /** Every rule in force, user settings first, then the trusted project's, then the row's. */
  rules(): PermissionRule[] {
    const out: PermissionRule[] = []
    const settings = this.settings()
    if (settings?.has('permissions')) {
      for (const source of ['user', 'project'] as const) {
        const lists = settings.fileValue('permissions', source) as RuleLists | undefined
        const where = source === 'user' ? settings.userFile : settings.projectFile
        for (const effect of EFFECTS)
          for (const text of lists?.[effect] ?? []) out.push({ effect, text, source: where })
      }
    }
    for (const rule of this.claudeRules()) out.push(rule)
    for (const effect of EFFECTS)
      for (const text of this.config[effect] ?? []) out.push({ effect, text, source: 'the permissions row' })
    return out
  }

  /** `permissions` of the project's `.claude/settings*.json`, the same syntax, once the folder is trusted. */
  private claudeRules(): PermissionRule[] {
    const cwd = this.launcher()?.config.cwd ?? process.cwd()
    const out: PermissionRule[] = []
    for (const name of ['settings.json', 'settings.local.json']) {
      const file = join(cwd, '.claude', name)
      if (!existsSync(file) || !projectTrust(this.home).admits(cwd, `.claude/${name}`)) continue
      const lists = this.claudeLists(file)
      for (const effect of EFFECTS)
        for (const text of Array.isArray(lists?.[effect]) ? (lists?.[effect] ?? []) : [])
          if (typeof text === 'string') out.push({ effect, text, source: file })
    }
    return out
  }

  /**
   * A `.claude` settings file's `permissions`, parsed again only when the file changed: rules are
   * consulted on every tool call.
   */
  private claudeLists(file: string): RuleLists | undefined {
    const stats = statSync(file, { throwIfNoEntry: false })
    const stamp = stats ? `${stats.ino}:${stats.size}:${stats.mtimeMs}` : ''
    const cached = this.claudeCache.get(file)
    if (cached?.stamp === stamp) return cached.lists
    let lists: RuleLists | undefined
    try {
      lists = (JSON.parse(readConfigText(file)) as { permissions?: RuleLists }).permissions
    } catch {
      lists = undefined
    }
    this.claudeCache.set(file, { stamp, lists })
    return lists
  }

  /** The rules in force for a session: every file's and the row's, then the session's own. */
  rulesFor(sessionId: string | undefined): PermissionRule[] {
    const own = sessionId === undefined ? [] : (this.sessionRules.get(sessionId) ?? [])
    return [...this.rules(), ...own]
  }

  /** The rule that decides a call now, if any. */
  decide(subject: RuleSubject, sessionId?: string): PermissionRule | undefined {
    return decide(this.rulesFor(sessionId), subject)
  }

  /**
   * An answer's rule is kept only when it parses and covers the very call it answered: "allow similar"
   * cannot smuggle in a wider rule than the person saw. Anything else is dropped, and the reason says so.
   */
  private checkRemembered(
    question: ApprovalQuestion,
    subject: RuleSubject | undefined,
    answer: ApprovalAnswer,
  ): ApprovalAnswer {
    if (!answer.rule) return answer
    const { rule, ...rest } = answer
    let problem: string | undefined
    try {
      if (!subject) problem = 'it answers no tool call'
      else if (!ruleMatches(parseRule(rule.text), subject)) problem = `it does not cover this ${question.toolName} call`
      else if (rule.scope === 'project' && !this.home.get('settings')?.projectFile) problem = 'there is no project'
    } catch (error) {
      problem = (error as Error).message
    }
    if (problem === undefined) return answer
    const note = `rule ${rule.text} not kept: ${problem}`
    return { ...rest, reason: rest.reason ? `${rest.reason}; ${note}` : note }
  }

  private keep(sessionId: string, rule: RememberedRule): void {
    if (rule.scope === 'session') {
      this.keepForSession(sessionId, rule.text)
      return
    }
    try {
      this.add('allow', rule.text, rule.scope)
    } catch (error) {
      // The call was allowed once either way; only keeping the rule failed (settings off or unwritable).
      this.home.logger('permissions').warn(`could not keep rule ${rule.text}: ${(error as Error).message}`)
    }
  }

  private keepForSession(sessionId: string, text: string): void {
    const rules = this.sessionRules.get(sessionId) ?? []
    if (!rules.some((rule) => rule.text === text))
      rules.push({ effect: 'allow', text, source: 'this session (allowed by the person)' })
    this.sessionRules.set(sessionId, rules)
  }

  /** Adds a rule to the user's (or the project's) settings (`/permissions allow Bash(npm test:*)`). */
  add(effect: RuleEffect, text: string, scope: 'user' | 'project' = 'user'): PermissionRule {
    check(text, 'rule')
    const settings = this.requireSettings()
    const current = (settings.fileValue('permissions', scope) as RuleLists | undefined)?.[effect] ?? []
    if (!current.includes(text)) settings.set(`permissions.${effect}`, [...current, text], { scope })
    return { effect, text, source: scope === 'user' ? settings.userFile : settings.projectFile }
  }

  /** Removes a rule from the user's settings; returns whether it was there. */
  remove(text: string): boolean {
    const settings = this.requireSettings()
    const lists = (settings.fileValue('permissions', 'user') as RuleLists | undefined) ?? {}
    let removed = false
    for (const effect of EFFECTS) {
      const current = lists[effect] ?? []
      if (!current.includes(text)) continue
      settings.set(
        `permissions.${effect}`,
        current.filter((item) => item !== text),
        { scope: 'user' },
      )
      removed = true
    }
    return removed
  }

  private requireSettings() {
    const settings = this.home.get('settings')
    if (!settings)
      throw new HarnessError(
        'CONFIG_NO_SETTINGS',
        'permission rules are kept in settings, which this profile disables',
        {},
      )
    return settings
  }

  private async preExecute(
    call: ToolCallInput,
    next: () => Promise<import('../tools/types.js').ToolPreExecuteDecision>,
  ) {
    const subject: RuleSubject = { toolName: call.toolName, args: call.args, cwd: this.cwdOf(call.sessionId) }
    const rule = this.decide(subject, call.sessionId)
    if (rule?.effect === 'deny') return { action: 'deny', reason: `denied by ${describe(rule)}` } as const
    this.pending.set(call.callId, {
      ...subject,
      ...(call.sessionId === undefined ? {} : { sessionId: call.sessionId }),
    })
    const inner = await next()
    // A layer below may rewrite the arguments: questions and rules see the call that will run.
    if (inner.action !== 'deny' && inner.args)
      this.pending.set(call.callId, { ...this.pending.get(call.callId), ...subject, args: inner.args })
    if (rule?.effect !== 'ask' || inner.action !== 'allow') return inner
    return {
      action: 'ask',
      reason: `${describe(rule)} asks first`,
      ...(inner.args ? { args: inner.args } : {}),
    } as const
  }

  private cwdOf(sessionId: string | undefined): string {
    const session = sessionId === undefined ? undefined : this.home.get('sessions')?.get(sessionId)
    return session?.header.cwd ?? this.home.get('launcher')?.config.cwd ?? process.cwd()
  }
}

function describe(rule: PermissionRule): string {
  return `rule ${rule.effect} ${rule.text} (${rule.source})`
}

function check(text: string, where: string): void {
  try {
    parseRule(text)
  } catch (error) {
    throw new HarnessError('PERMISSION_RULE_INVALID', `${where}: ${(error as Error).message}`, { rule: text })
  }
}

export default PermissionsService
