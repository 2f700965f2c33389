// The `openai-compatible` provider plugin: the same Chat Completions implementation as `deepseek` in
// the plain OpenAI dialect, for Ollama, vLLM, LM Studio, llama.cpp, OpenRouter and similar servers.
// Endpoints are named in the `endpoints` setting (`dsh config set endpoints.local.baseUrl URL`); a
// model `local/qwen3` of provider `openai-compatible` goes to endpoint `local` as model `qwen3`. A
// model without a known endpoint prefix goes to the row's `baseUrl` or $OPENAI_BASE_URL, if set.
import { type Context, directService } from '@dsh/kernel'
import type {} from '@dsh/settings'
import { llmError } from './adapter.js'
import type { ChatRoute } from './chat-completions.js'
import { applyChatProvider, type ChatProviderConfig } from './deepseek.js'
import { EndpointCatalog, type EndpointSetting, endpointSchema } from './endpoints.js'

declare module '@dsh/settings' {
  interface SettingsMap {
    /** OpenAI-compatible endpoints by name: the provider `openai-compatible`, models `NAME/MODEL`. */
    endpoints: Record<string, EndpointSetting>
  }
}

const PROVIDER = 'openai-compatible'

/** The `openai-compatible` provider row: `use: "@dsh/llm/openai-compatible"`. */
export default {
  name: 'llm-openai-compatible',
  inject: ['llm', 'credentials'],
  apply(ctx: Context, config: ChatProviderConfig = {}) {
    const credentials = ctx.credentials
    ctx.inject(['settings'], (inner) => {
      inner.settings.define('endpoints', {
        schema: endpointSchema,
        default: {},
        description:
          'OpenAI-compatible endpoints (Ollama, vLLM, LM Studio, OpenRouter): NAME: { baseUrl, apiKey? }; models are openai-compatible:NAME/MODEL',
        allowed:
          'NAME: { baseUrl: http(s)://..., apiKey?: CREDENTIAL_NAME, models?: [ids], contextWindow?: tokens, prices?: { input, output, cacheRead?, cacheWrite? } (USD per million tokens) }',
      })
    })
    const directSettings = directService(ctx, 'settings')
    const endpoints = (): Record<string, EndpointSetting> => {
      const settings = directSettings()
      return (settings?.has('endpoints') ? settings.get('endpoints') : undefined) ?? {}
    }
    // A project may name an endpoint, never where a stored key goes: a key is sent to an endpoint
    // only when the user's own settings give that endpoint the same address and key.
    const userBound = (name: string, entry: EndpointSetting): boolean => {
      const settings = directSettings()
      if (!settings?.has('endpoints') || settings.resolve('endpoints').source !== 'project') return true
      const user = (settings.fileValue('endpoints', 'user') as Record<string, EndpointSetting> | undefined)?.[name]
      return user?.baseUrl === entry.baseUrl && user?.apiKey === entry.apiKey
    }
    const models = new EndpointCatalog({
      endpoints,
      cacheDir: () => credentials.home,
      apiKey: async (name, endpoint, entry) =>
        name && userBound(endpoint, entry) ? await credentials.get(name) : undefined,
    })
    const fallbackUrl = async () => config.baseUrl ?? (await credentials.get('OPENAI_BASE_URL'))
    const route = async (model: string): Promise<ChatRoute | { error: ReturnType<typeof llmError> }> => {
      const slash = model.indexOf('/')
      const name = slash > 0 ? model.slice(0, slash) : ''
      const entry = endpoints()[name]
      if (entry) {
        const keyName = entry.apiKey
        if (keyName && !userBound(name, entry)) {
          return {
            error: llmError(
              'AUTH',
              `endpoint "${name}" (${entry.baseUrl}) is defined by the project's .dsh/settings.yaml, and a stored credential (${keyName}) goes only to endpoints your user settings define; to send it there, run \`dsh config set endpoints.${name}.baseUrl ${entry.baseUrl}\` and \`dsh config set endpoints.${name}.apiKey ${keyName}\``,
            ),
          }
        }
        return {
          baseUrl: entry.baseUrl,
          model: model.slice(slash + 1),
          keyName: keyName ?? `(no key for endpoint ${name})`,
          keyRequired: false,
          apiKey: async () => {
            const found = keyName ? await credentials.resolve(keyName) : undefined
            return found && { value: found.value, location: found.location }
          },
        }
      }
      const baseUrl = await fallbackUrl()
      if (!baseUrl) {
        const known = Object.keys(endpoints())
        return {
          error: llmError(
            'NO_ADAPTER',
            `no OpenAI-compatible endpoint for model "${model}": name one with \`dsh config set endpoints.NAME.baseUrl URL\` and use openai-compatible:NAME/MODEL${known.length ? ` (configured: ${known.join(', ')})` : ''}`,
          ),
        }
      }
      const keyName = config.apiKey ?? 'OPENAI_API_KEY'
      return {
        baseUrl,
        model,
        keyName,
        keyRequired: false,
        apiKey: async () => {
          const found = await credentials.resolve(keyName)
          return found && { value: found.value, location: found.location }
        },
      }
    }
    applyChatProvider(ctx, config ?? {}, {
      name: PROVIDER,
      dialect: 'openai',
      providers: [PROVIDER],
      baseUrlVariable: 'OPENAI_BASE_URL',
      apiKey: 'OPENAI_API_KEY',
      keyRequired: false,
      models: [],
      extra: {
        route,
        loadModels: (signal) => models.load(signal),
        knownModels: () => models.models(),
        configured: async () => Object.keys(endpoints()).length > 0 || (await fallbackUrl()) !== undefined,
      },
    })
  },
}
