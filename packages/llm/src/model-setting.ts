// The `model` setting (declared when ctx.settings is loaded): the default `provider:model` of every
// call that names neither, from $DSH_HOME/settings.yaml, .dsh/settings.yaml, $DSH_MODEL or `--set`.
import type { Context } from '@dsh/kernel'
import type {} from '@dsh/settings'
import type { LlmCallConfig } from './messages.js'

declare module '@dsh/settings' {
  interface SettingsMap {
    /** `provider:model`, or a bare model of the default provider. */
    model: string | undefined
  }
}

/**
 * `provider:model` split at the first colon (model ids may hold more: `ollama:qwen3:8b`); a text
 * without a colon is a model of the default provider.
 */
export function parseModel(text: string): Pick<LlmCallConfig, 'model'> & { provider?: string } {
  const colon = text.indexOf(':')
  if (colon <= 0) return { model: text }
  return { provider: text.slice(0, colon), model: text.slice(colon + 1) }
}

/** Declares the `model` key on `ctx.settings` for the lifetime of `ctx`. */
export function defineModelSetting(ctx: Context, known: () => string[]): void {
  ctx.settings.define('model', {
    schema: { type: 'string', pattern: '^[^\\s:]+(:\\S+)?$' },
    description: 'the default model: provider:model (dsh models lists them), or a model of the default provider',
    env: 'DSH_MODEL',
    allowed: 'provider:model such as deepseek:deepseek-v4-pro or anthropic:claude-sonnet-4-5',
    check(value) {
      const provider = value && parseModel(value).provider
      if (!provider || known().includes(provider)) return undefined
      return `names provider "${provider}", which no loaded row serves (known: ${known().join(', ')})`
    },
  })
}
