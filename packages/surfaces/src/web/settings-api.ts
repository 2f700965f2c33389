// The settings page's half of the API (loopback-only: the fence in server.ts refuses /api/settings from
// elsewhere). It reads and writes through the services a CLI user meets as `dsh config` and `dsh
// models`: ctx.settings (the user file, `dsh config set`), ctx.credentials (write-only: a stored value
// never comes back) and ctx.llm's catalogs. Nothing here knows a YAML file.

import { type Context, HarnessError } from '@dsh/kernel'
import type {} from '@dsh/llm'
import { maskUrlPasswords } from '@dsh/settings'
import type {} from '@dsh/settings/credentials'
import type { ModelsView, SettingsView, SettingView } from '../wire/types.js'

/** `GET /api/settings`: every credential name (set or not, never a value) and every declared setting. */
export async function settingsView(ctx: Context, credentialNames: readonly string[] = []): Promise<SettingsView> {
  return { credentials: await credentialRows(ctx, credentialNames), settings: settingRows(ctx) }
}

async function credentialRows(ctx: Context, credentialNames: readonly string[]): Promise<SettingsView['credentials']> {
  const credentials = ctx.get('credentials')
  if (!credentials) return []
  const names = new Set(['DEEPSEEK_API_KEY', ...credentialNames, ...(await credentials.names())])
  const rows: SettingsView['credentials'] = []
  for (const name of [...names].sort()) {
    const found = await credentials.locate(name)
    rows.push(found ? { name, set: true, source: found.source } : { name, set: false })
  }
  return rows
}

/** Every declared key; a value that breaks its schema is shown with the problem instead of failing the page. */
function settingRows(ctx: Context): SettingView[] {
  const settings = ctx.get('settings')
  if (!settings) return []
  return settings.keys().map((key) => {
    const { description, env, allowed } = settings.describe(key)
    const info = { description, ...(env ? { env } : {}), ...(allowed ? { allowed } : {}) }
    try {
      // A URL's password (session.store's PostgreSQL URL) is never shown; the problem text may quote it.
      const resolved = settings.resolve(key)
      return { ...resolved, value: maskUrlPasswords(resolved.value), ...info }
    } catch (error) {
      const problem = maskUrlPasswords((error as Error).message)
      return { key, value: undefined, source: 'default', ...info, problem }
    }
  })
}

/** The providers (usable or not) and the models of the usable ones: what `dsh models` lists. */
export async function modelsView(ctx: Context): Promise<ModelsView> {
  const llm = ctx.get('llm')
  if (!llm) throw new HarnessError('CONFIG_NO_LLM', 'this profile has no llm row', {})
  const catalogs = await llm.catalogs()
  let current: string | undefined
  try {
    const call = llm.resolveCall({})
    current = `${call.provider}:${call.model}`
  } catch {
    // No default can be resolved (e.g. an invalid setting): the page shows none.
  }
  return {
    ...(current ? { current } : {}),
    providers: catalogs.map((catalog) => ({
      provider: catalog.provider,
      configured: catalog.configured,
      models: catalog.configured
        ? catalog.models.map((model) => ({
            id: model.id,
            ...(model.contextWindow === undefined ? {} : { contextWindow: model.contextWindow }),
            ...(model.reasoning === undefined ? {} : { reasoning: model.reasoning }),
          }))
        : [],
    })),
  }
}

/** The settings service; throws `NO_SETTINGS` when the profile disables it. */
export function settingsOf(ctx: Context) {
  const settings = ctx.get('settings')
  if (!settings) throw new HarnessError('NO_SETTINGS', 'this profile disables the settings row', {})
  return settings
}

/** The credential store; throws `NO_CREDENTIALS` without its row. */
export function credentialsOf(ctx: Context) {
  const credentials = ctx.get('credentials')
  if (!credentials) throw new HarnessError('NO_CREDENTIALS', 'this profile has no credentials row', {})
  return credentials
}
