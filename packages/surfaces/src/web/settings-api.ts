// The settings page's half of the API (loopback-only: the fence in server.ts refuses /api/settings from
// elsewhere). It reads and writes through the services a CLI user meets as `dsh config` and `dsh
// models`: ctx.settings (the user file, `dsh config set`), ctx.credentials (write-only: a stored value
// never comes back) and ctx.llm's catalogs. Nothing here knows a YAML file.

import { type Context, HarnessError } from '@dsh/kernel'
import type {} from '@dsh/llm'
import type {} from '@dsh/settings'
import type {} from '@dsh/settings/credentials'
import type { ModelsView, SettingsView, SettingView } from './protocol.js'

/** What `route` answers when the request is not one of its own. */
export const NOT_SETTINGS = Symbol('not a settings route')

const VALUE = /^\/api\/settings\/values\/([a-z][a-zA-Z0-9.-]*)$/
const CREDENTIAL = /^\/api\/settings\/credentials\/([A-Z][A-Z0-9_]*)$/

export class SettingsApi {
  constructor(
    private readonly ctx: Context,
    /** Credential names offered besides the stored ones. */
    private readonly credentialNames: readonly string[] = [],
  ) {}

  async route(method: string, path: string, body: Record<string, unknown>): Promise<unknown> {
    if (method === 'GET' && path === '/api/settings') return this.view()
    if (method === 'GET' && path === '/api/models') return this.models()
    const value = VALUE.exec(path)?.[1]
    if (value && method === 'PUT') {
      if (!('value' in body)) throw badParams('"value" is missing: send { "value": ... }')
      // `dsh config set` semantics: the key's whole new value is checked first, nothing is written when invalid.
      return this.settings().set(value, body.value, { scope: 'user' })
    }
    if (value && method === 'DELETE') return { removed: this.settings().unset(value, { scope: 'user' }) }
    const credential = CREDENTIAL.exec(path)?.[1]
    if (credential && method === 'PUT') {
      const secret = body.value
      if (typeof secret !== 'string' || !secret) throw badParams('"value" must be a non-empty string')
      await this.credentials().set(credential, secret)
      // Write-only: the answer says that it is set, never what it is.
      return { name: credential, set: true }
    }
    if (credential && method === 'DELETE')
      return { name: credential, removed: await this.credentials().delete(credential) }
    return NOT_SETTINGS
  }

  private async view(): Promise<SettingsView> {
    return { credentials: await this.credentialRows(), settings: this.settingRows() }
  }

  private async credentialRows(): Promise<SettingsView['credentials']> {
    const credentials = this.ctx.get('credentials')
    if (!credentials) return []
    const names = new Set(['DEEPSEEK_API_KEY', ...this.credentialNames, ...(await credentials.names())])
    const rows: SettingsView['credentials'] = []
    for (const name of [...names].sort()) {
      const found = await credentials.locate(name)
      rows.push(found ? { name, set: true, source: found.source } : { name, set: false })
    }
    return rows
  }

  /** Every declared key; a value that breaks its schema is shown with the problem instead of failing the page. */
  private settingRows(): SettingView[] {
    const settings = this.ctx.get('settings')
    if (!settings) return []
    return settings.keys().map((key) => {
      const { description, env, allowed } = settings.describe(key)
      const info = { description, ...(env ? { env } : {}), ...(allowed ? { allowed } : {}) }
      try {
        return { ...settings.resolve(key), ...info }
      } catch (error) {
        return { key, value: undefined, source: 'default', ...info, problem: (error as Error).message }
      }
    })
  }

  /** The providers (usable or not) and the models of the usable ones: what `dsh models` lists. */
  private async models(): Promise<ModelsView> {
    const llm = this.ctx.get('llm')
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

  private settings() {
    const settings = this.ctx.get('settings')
    if (!settings) throw new HarnessError('NO_SETTINGS', 'this profile disables the settings row', {})
    return settings
  }

  private credentials() {
    const credentials = this.ctx.get('credentials')
    if (!credentials) throw new HarnessError('NO_CREDENTIALS', 'this profile has no credentials row', {})
    return credentials
  }
}

function badParams(message: string): HarnessError {
  return new HarnessError('INVALID_PARAMS', message, {})
}
