// Applying a preset to one agent: a scope inside the agent's own, extended with the agent's identity
// (`AGENT_SCOPE`), so what it registers (prompt sections, the skill filter, the tools and sections of
// its extra rows) belongs to that agent alone and goes when the agent goes or switches preset.

import type {} from '@dsh/agent/system-prompt'
import { evaluateConfig, resolveUse } from '@dsh/composition'
import { AGENT_SCOPE, type Context, FiberState, HarnessError, type Plugin } from '@dsh/kernel'
import type { LlmCallConfig } from '@dsh/llm'
import type { Session } from '@dsh/session'
import type {} from '@dsh/world/sandbox'
import { hasOwnTurn, type Preset, type PresetComposition } from './index.js'
import type {} from './skills/index.js'

/** Rounds of macrotasks a row may take to activate before it counts as pending on a missing service. */
const SETTLE_ROUNDS = 50

function isPlugin(value: unknown): value is Plugin {
  return typeof value === 'function' || (typeof value === 'object' && value !== null && 'apply' in value)
}

export function presetModel(preset: Preset): Partial<LlmCallConfig> {
  return {
    ...(preset.model?.provider ? { provider: preset.model.provider } : {}),
    ...(preset.model ? { model: preset.model.model } : {}),
    ...(preset.reasoningEffort ? { reasoningEffort: preset.reasoningEffort as LlmCallConfig['reasoningEffort'] } : {}),
  }
}

export async function composePreset(
  home: Context,
  agentCtx: Context,
  agentId: string,
  session: Session,
  preset: Preset,
): Promise<PresetComposition> {
  const fiber = agentCtx.extend({ [AGENT_SCOPE]: agentId }).plugin({
    name: `preset:${preset.name}`,
    apply: (ctx: Context) => {
      const prompt = ctx.get('systemPrompt')
      for (const section of preset.prompt) {
        if (!prompt) break
        prompt.register({
          name: `preset:${preset.name}:${section.name}:${agentId}`,
          order: section.order,
          replaces: section.replaces,
          render: () => section.text,
        })
      }
      if (preset.skills) ctx.get('skills')?.restrict(preset.skills)
    },
  })
  await fiber
  const scope = fiber.ctx
  try {
    if (preset.prompt.length > 0 && !scope.get('systemPrompt')) {
      throw new HarnessError(
        'PRESET_ROW_FAILED',
        `preset "${preset.name}" has prompt sections but no system prompt row is active`,
        {
          preset: preset.name,
        },
      )
    }
    for (const row of preset.rows) await startRow(scope, preset, row.id, row.use, row.config)
    applyPermissionMode(home, session, preset)
  } catch (error) {
    await fiber.dispose()
    throw error
  }
  return {
    preset,
    model: presetModel(preset),
    tools: preset.tools,
    dispose: async () => {
      await fiber.dispose()
    },
  }
}

async function startRow(scope: Context, preset: Preset, id: string, use: string, config: unknown): Promise<void> {
  const where = `preset "${preset.name}" row "${id}"`
  let plugin: unknown
  try {
    plugin = ((await import(resolveUse(use, preset.source.dir))) as { default?: unknown }).default
  } catch (error) {
    throw new HarnessError('PRESET_ROW_FAILED', `${where}: cannot import "${use}": ${(error as Error).message}`, {
      preset: preset.name,
      row: id,
    })
  }
  if (!isPlugin(plugin)) {
    throw new HarnessError('PRESET_ROW_FAILED', `${where}: "${use}" has no default export that is a Cordis plugin`, {
      preset: preset.name,
      row: id,
    })
  }
  const evaluated = evaluateConfig(config, { env: process.env, platform: process.platform }, `${where} config`)
  const fiber = scope.plugin(plugin, evaluated)
  for (let round = 0; round < SETTLE_ROUNDS && fiber.state !== FiberState.ACTIVE; round++) {
    if (fiber.state === FiberState.FAILED) break
    await new Promise((done) => setImmediate(done))
  }
  if (fiber.state === FiberState.FAILED) {
    const reason = await fiber.await().then(
      () => 'failed',
      (error: unknown) => (error instanceof Error ? error.message : String(error)),
    )
    throw new HarnessError('PRESET_ROW_FAILED', `${where} failed: ${reason}`, { preset: preset.name, row: id })
  }
  if (fiber.state !== FiberState.ACTIVE) {
    const missing = Object.keys(fiber.inject).filter((name) => scope.get(name) === undefined)
    throw new HarnessError(
      'PRESET_ROW_FAILED',
      `${where} did not activate${missing.length ? `: waiting for service ${missing.join(', ')} (no active row provides it)` : ''}`,
      { preset: preset.name, row: id, missing },
    )
  }
}

/**
 * A session without turns of its own takes the preset's permission mode (when the profile has a sandbox
 * policy row), or the policy's default for
 * a preset that names none (switching away from a read-only preset). A resumed session keeps its
 * logged mode: the log, not the preset file, says what it ran with.
 */
function applyPermissionMode(home: Context, session: Session, preset: Preset): void {
  const policy = home.get('sandboxPolicy')
  // A profile without a sandbox policy has no permission modes to set; the tool policy still holds.
  if (!policy) return
  if (hasOwnTurn(session)) return
  const wanted = preset.permissionMode ?? policy.mode()
  if (policy.mode(session.id) !== wanted && !(preset.permissionMode === undefined && !modeLogged(session))) {
    policy.setMode(session.id, wanted)
  }
}

function modeLogged(session: Session): boolean {
  return session.events.some((event) => event.type === 'sandbox/mode')
}
