// The `model` setting (declared when ctx.settings is loaded): the default `provider:model` of every
// call that names neither, from $DSH_HOME/settings.yaml, .dsh/settings.yaml, $DSH_MODEL or `--set`.
import type { Context } from '@dsh/kernel'
import type {} from '@dsh/settings'
import type { LlmCallConfig } from './messages.js'

declare module '@dsh/settings' {
  interface SettingsMap {
    /** `provider:model`, or a bare model of the default provider. */
    model: string | undefined
    /** Prices the user sets per `provider:model`, US dollars per million tokens; over the catalog's. */
    prices: Record<string, UserPrices>
  }
}

/** What a model costs, US dollars per million tokens (`cacheRead`/`cacheWrite` default to `input`). */
export type UserPrices = { input: number; output: number; cacheRead?: number; cacheWrite?: number }

const PRICE = { type: 'number', minimum: 0 } as const

/** Declares the `prices` key: a model's prices where the catalog has none (DeepSeek's) or is wrong. */
export function definePricesSetting(ctx: Context): void {
  ctx.settings.define('prices', {
    schema: {
      type: 'object',
      propertyNames: { pattern: '^[^\\s:]+:\\S+$' },
      additionalProperties: {
        type: 'object',
        properties: { input: PRICE, output: PRICE, cacheRead: PRICE, cacheWrite: PRICE },
        required: ['input', 'output'],
        additionalProperties: false,
      },
    },
    default: {},
    description:
      "what models cost, US dollars per million tokens, by provider:model; over the catalog's prices (for /cost, budgets and the footer)",
    allowed: '{ "deepseek:deepseek-v4-flash": { "input": 0.3, "output": 1.2, "cacheRead": 0.03 } }',
    // Not project-safe: an untrusted checkout pricing a model at 0 would switch the user's budgets off.
  })
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
