// `dsh config get|set|unset|list`: the settings of ctx.settings (every key a loaded row declares) with
// the layer each value came from. Names in capitals (`ANTHROPIC_API_KEY`) are credentials: they go to
// ctx.credentials ($DSH_HOME/.credentials.yaml, 0600) and their values are never printed.

import { type Context, HarnessError } from '@dsh/kernel'
import { maskUrlPasswords, type SettingValue } from '@dsh/settings'
import type {} from '@dsh/settings/credentials'
import type { ComposeRequest } from '../config.js'
import { ExitCode } from '../exit-codes.js'
import type { Io } from '../io.js'
import { modelSourceLines, modelSources } from '../providers.js'
import { withRuntime } from '../runtime.js'

export interface ConfigOptions {
  json?: boolean
  project?: boolean
}

const CREDENTIAL = /^[A-Z][A-Z0-9_]*$/

function settingsOf(root: Context) {
  const settings = root.get('settings')
  if (!settings) throw new HarnessError('CONFIG_NO_SETTINGS', 'this profile disables the settings row', {})
  return settings
}

function credentialsOf(root: Context) {
  const credentials = root.get('credentials')
  if (!credentials) throw new HarnessError('CONFIG_NO_CREDENTIALS', 'this profile disables the credentials row', {})
  return credentials
}

function shown(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value)
}

function origin(value: SettingValue): string {
  return value.location ? `${value.source} ${value.location}` : value.source
}

/**
 * Runs `work` on the booted profile without refusing invalid settings (so `set` can repair them) and
 * without a session store or remote machine (settings need neither; either may be down).
 */
function withSettings(request: ComposeRequest, io: Io, work: (root: Context) => Promise<number>): Promise<number> {
  return withRuntime(request, io, ({ runtime }) => work(runtime.root), { checkSettings: false, settingsOnly: true })
}

export function configGet(request: ComposeRequest, key: string, options: ConfigOptions, io: Io): Promise<number> {
  return withSettings(request, io, async (root) => {
    if (CREDENTIAL.test(key)) {
      const found = await credentialsOf(root).locate(key)
      if (options.json)
        io.out(
          JSON.stringify({
            key,
            set: Boolean(found),
            ...(found ? { source: found.source, location: found.location } : {}),
          }),
        )
      else
        io.out(
          found ? `${key} is set (${found.source} ${found.location}); values are never printed` : `${key} is not set`,
        )
      return found ? ExitCode.OK : ExitCode.CONFIG
    }
    // Shown, not stored: a URL's password (session.store's PostgreSQL URL) becomes ***.
    const resolved = settingsOf(root).resolve(key)
    const value = { ...resolved, value: maskUrlPasswords(resolved.value) }
    if (options.json) io.out(JSON.stringify(value, null, 2))
    else {
      io.out(value.value === undefined ? '' : shown(value.value))
      io.err(`dsh: from ${origin(value)}`)
    }
    return ExitCode.OK
  })
}

export function configSet(
  request: ComposeRequest,
  key: string,
  value: string,
  options: ConfigOptions,
  io: Io,
): Promise<number> {
  return withSettings(request, io, async (root) => {
    if (CREDENTIAL.test(key)) {
      const credentials = credentialsOf(root)
      await credentials.set(key, value)
      io.err(`dsh: stored ${key} in ${credentials.file}`)
      const found = await credentials.locate(key)
      if (found && found.source !== 'credentials-file') {
        io.err(`dsh: warning: ${key} from ${found.source} (${found.location}) still takes precedence`)
      }
      return ExitCode.OK
    }
    const written = settingsOf(root).set(key, value, { scope: options.project ? 'project' : 'user', text: true })
    io.err(`dsh: ${written.key} = ${shown(maskUrlPasswords(written.value))} in ${written.location}`)
    const effective = settingsOf(root).resolve(written.key)
    if (effective.source !== written.source) {
      io.err(`dsh: warning: ${origin(effective)} still takes precedence for ${written.key}`)
    }
    return ExitCode.OK
  })
}

export function configUnset(request: ComposeRequest, key: string, options: ConfigOptions, io: Io): Promise<number> {
  return withSettings(request, io, async (root) => {
    const removed = CREDENTIAL.test(key)
      ? await credentialsOf(root).delete(key)
      : settingsOf(root).unset(key, { scope: options.project ? 'project' : 'user' })
    io.err(removed ? `dsh: removed ${key}` : `dsh: ${key} was not set there`)
    return ExitCode.OK
  })
}

export function configList(request: ComposeRequest, options: ConfigOptions, io: Io): Promise<number> {
  return withSettings(request, io, async (root) => {
    const settings = settingsOf(root)
    // Shown, not stored: a URL's password (session.store's PostgreSQL URL) becomes ***.
    const list = settings.list().map((item) => ({ ...item, value: maskUrlPasswords(item.value) }))
    if (options.json) {
      io.out(JSON.stringify(list, null, 2))
      return ExitCode.OK
    }
    const sources = root.get('llm') ? await modelSources(root) : undefined
    for (const item of list) {
      // An unset model still names the model runs use (as `dsh models` says).
      const unset = item.key === 'model' && sources ? `(unset: runs use ${sources.defaultModel})` : '(unset)'
      io.out(`${item.key} = ${item.value === undefined ? unset : shown(item.value)}  # ${origin(item)}`)
      io.out(`    ${item.description}${item.env ? ` (env ${item.env})` : ''}`)
    }
    if (sources) {
      io.out('')
      io.out('# where the default model, keys and base URLs come from (the same reading as dsh models):')
      for (const line of modelSourceLines(sources)) io.out(line)
    }
    io.err(`dsh: files: ${settings.userFile} (user), ${settings.projectFile} (project)`)
    return ExitCode.OK
  })
}
