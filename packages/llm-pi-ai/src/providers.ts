// The pi-ai providers dsh routes and the credential references each is reached with. Written out
// (not read from pi-ai at load) so that routing them costs no import of pi-ai and its SDKs; a test
// compares this table with pi-ai's own list, so an upgrade that adds or drops one fails it.

/**
 * pi-ai provider id -> the credential references tried in order (pi-ai's variable names). `deepseek`
 * is absent: dsh's own adapter (`@dsh/llm/deepseek`) serves it. An empty list: pi-ai reaches the
 * provider through other credentials (AWS, OAuth), which dsh does not check.
 */
export const PI_AI_PROVIDERS: Readonly<Record<string, readonly string[]>> = Object.freeze({
  'amazon-bedrock': [],
  anthropic: ['ANTHROPIC_OAUTH_TOKEN', 'ANTHROPIC_API_KEY'],
  'azure-openai-responses': ['AZURE_OPENAI_API_KEY'],
  cerebras: ['CEREBRAS_API_KEY'],
  'cloudflare-ai-gateway': ['CLOUDFLARE_API_KEY'],
  'cloudflare-workers-ai': ['CLOUDFLARE_API_KEY'],
  fireworks: ['FIREWORKS_API_KEY'],
  'github-copilot': ['COPILOT_GITHUB_TOKEN', 'GH_TOKEN', 'GITHUB_TOKEN'],
  google: ['GEMINI_API_KEY'],
  'google-vertex': ['GOOGLE_CLOUD_API_KEY'],
  groq: ['GROQ_API_KEY'],
  huggingface: ['HF_TOKEN'],
  'kimi-coding': ['KIMI_API_KEY'],
  minimax: ['MINIMAX_API_KEY'],
  'minimax-cn': ['MINIMAX_CN_API_KEY'],
  mistral: ['MISTRAL_API_KEY'],
  moonshotai: ['MOONSHOT_API_KEY'],
  'moonshotai-cn': ['MOONSHOT_API_KEY'],
  openai: ['OPENAI_API_KEY'],
  'openai-codex': [],
  opencode: ['OPENCODE_API_KEY'],
  'opencode-go': ['OPENCODE_API_KEY'],
  openrouter: ['OPENROUTER_API_KEY'],
  'vercel-ai-gateway': ['AI_GATEWAY_API_KEY'],
  xai: ['XAI_API_KEY'],
  xiaomi: ['XIAOMI_API_KEY'],
  'xiaomi-token-plan-ams': ['XIAOMI_TOKEN_PLAN_AMS_API_KEY'],
  'xiaomi-token-plan-cn': ['XIAOMI_TOKEN_PLAN_CN_API_KEY'],
  'xiaomi-token-plan-sgp': ['XIAOMI_TOKEN_PLAN_SGP_API_KEY'],
  zai: ['ZAI_API_KEY'],
})

/** The credential reference of a provider's base URL override: `anthropic` -> `ANTHROPIC_BASE_URL`. */
export function baseUrlVariable(provider: string): string {
  return `${provider.toUpperCase().replace(/[^A-Z0-9]+/g, '_')}_BASE_URL`
}
