// The `openai-compatible` provider plugin: the same Chat Completions implementation as `deepseek` in
// the plain OpenAI dialect, for OpenAI, vLLM, llama.cpp, Ollama and similar servers. The key is optional
// (local servers need none); the base URL comes from config or $OPENAI_BASE_URL.

import type { Context } from '@dsh/kernel'
import { HarnessError } from '@dsh/kernel'
import { applyChatProvider, type ChatProviderConfig } from './deepseek.js'

/** The `openai-compatible` provider row: `use: "@dsh/llm/openai-compatible"`. */
export default {
  name: 'llm-openai-compatible',
  inject: ['llm', 'credentials'],
  apply(ctx: Context, config: ChatProviderConfig = {}) {
    const env = ctx.credentials.env
    if (!config?.baseUrl && !env.OPENAI_BASE_URL) {
      throw new HarnessError(
        'LLM_CONFIG_INVALID',
        'the openai-compatible provider needs a base URL: set `baseUrl` in its row or OPENAI_BASE_URL',
        { row: 'openai-compatible' },
      )
    }
    applyChatProvider(ctx, config ?? {}, {
      name: 'openai-compatible',
      dialect: 'openai',
      providers: ['openai-compatible'],
      baseUrlVariable: 'OPENAI_BASE_URL',
      apiKey: 'OPENAI_API_KEY',
      keyRequired: false,
      models: [],
    })
  },
}
