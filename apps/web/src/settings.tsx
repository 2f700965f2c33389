// The settings page (loopback-only on the host): the default model and preset, the providers and
// OpenAI-compatible endpoints, API keys (write-only) and every declared setting with its source. Each
// change is one call to the host's settings service, the same writes as `dsh config set`.

import type { PresetSummary, SettingsView, SettingView } from '@dsh/surfaces/wire'
import type { ComponentChildren } from 'preact'
import { useEffect, useState } from 'preact/hooks'
import { api } from './connection'
import { modelChoices, reloadModels, useModels } from './models'

export interface SettingsProps {
  presets: PresetSummary[]
  /** A setting was written (the host baseline's default preset is refreshed from it). */
  onSaved(key: string, value: unknown): void
  failed(error: unknown): void
  /** More sections after the page's own (client modules' settings sections). */
  children?: ComponentChildren
}

interface Endpoint {
  baseUrl: string
  apiKey?: string
}

function where(row: SettingView | undefined): string {
  if (!row) return ''
  return row.location ? `${row.source}: ${row.location}` : row.source
}

/** The written `model` setting when it names a provider (the catalog's answer may be older), else the resolved default. */
function defaultModel(row: SettingView | undefined, resolved: string | undefined): string {
  const written = typeof row?.value === 'string' && row.source !== 'default' ? row.value : undefined
  return (written?.includes(':') ? written : resolved) ?? written ?? ''
}

export function Settings({ presets, onSaved, failed, children }: SettingsProps) {
  const [view, setView] = useState<SettingsView | undefined>()
  const [note, setNote] = useState('')
  const models = useModels(failed)
  const load = () => void api<SettingsView>('GET', '/api/settings').then(setView).catch(failed)
  useEffect(load, [])
  const setting = (key: string) => view?.settings.find((row) => row.key === key)
  const write = (path: string, value: unknown, done: string) =>
    api('PUT', `/api/settings/values/${path}`, { value })
      .then(() => {
        setNote(done)
        onSaved(path, value)
        load()
        if (path === 'model' || path.startsWith('endpoints')) reloadModels()
      })
      .catch(failed)
  const remove = (path: string, done: string) =>
    api('DELETE', `/api/settings/values/${path}`)
      .then(() => {
        setNote(done)
        load()
        reloadModels()
      })
      .catch(failed)
  const endpoints = (setting('endpoints')?.value ?? {}) as Record<string, Endpoint>
  return (
    <main class="settings">
      <p class="note" role="status">
        {note}
      </p>
      {setting('model') ? (
        <DefaultModel
          current={defaultModel(setting('model'), models?.current)}
          choices={modelChoices(models)}
          source={where(setting('model'))}
          save={(value) => write('model', value, `default model: ${value}`)}
        />
      ) : null}
      {setting('preset') && presets.length > 0 ? (
        <section class="default-preset">
          <h2>Default preset</h2>
          <label>
            New sessions that pick none get{' '}
            <select
              id="default-preset"
              aria-label="default preset"
              value={String(setting('preset')?.value ?? '')}
              onChange={(e) => void write('preset', e.currentTarget.value, `default preset: ${e.currentTarget.value}`)}
            >
              {presets.map((preset) => (
                <option key={preset.name} value={preset.name} title={preset.description}>
                  {preset.name}
                </option>
              ))}
            </select>
          </label>
          <span class="source">{where(setting('preset'))}</span>
        </section>
      ) : null}
      <section class="providers">
        <h2>Providers</h2>
        <p>A provider is usable once its API key is set (below), or, for an OpenAI-compatible server, an endpoint.</p>
        <table>
          <tbody>
            {models?.providers.map((row) => (
              <tr key={row.provider} data-provider={row.provider} class={row.configured ? 'configured' : ''}>
                <td>{row.provider}</td>
                <td>{row.configured ? `usable, ${row.models.length} models` : 'no key'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>
      {setting('endpoints') ? (
        <Endpoints
          endpoints={endpoints}
          add={(name, endpoint) => write(`endpoints.${name}`, endpoint, `endpoint ${name} saved`)}
          remove={(name) => remove(`endpoints.${name}`, `endpoint ${name} removed`)}
        />
      ) : null}
      <Keys
        view={view}
        failed={failed}
        saved={(text) => {
          setNote(text)
          load()
          reloadModels()
        }}
      />
      <section class="all-settings">
        <h2>All settings</h2>
        <table>
          <tbody>
            {view?.settings.map((row) => (
              <tr key={row.key} data-setting={row.key}>
                <td>
                  <code>{row.key}</code>
                </td>
                <td class="value">{row.problem ?? (row.value === undefined ? '' : JSON.stringify(row.value))}</td>
                <td class="source">{where(row)}</td>
                <td>{row.description}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>
      {children}
    </main>
  )
}

function DefaultModel(props: {
  current: string
  choices: string[]
  source: string
  save(value: string): Promise<unknown>
}) {
  const [value, setValue] = useState('')
  const chosen = value || props.current
  return (
    <section class="default-model">
      <h2>Default model</h2>
      <form
        onSubmit={(e) => {
          e.preventDefault()
          if (chosen.trim()) void props.save(chosen.trim()).then(() => setValue(''))
        }}
      >
        <select
          id="default-model"
          aria-label="default model"
          value={chosen}
          onChange={(e) => setValue(e.currentTarget.value)}
        >
          {props.choices.includes(chosen) ? null : <option value={chosen}>{chosen}</option>}
          {props.choices.map((choice) => (
            <option key={choice} value={choice}>
              {choice}
            </option>
          ))}
        </select>
        <button type="submit" id="save-default-model">
          Save
        </button>
        <span class="source">{props.source}</span>
      </form>
    </section>
  )
}

function Endpoints(props: {
  endpoints: Record<string, Endpoint>
  add(name: string, endpoint: Endpoint): Promise<unknown>
  remove(name: string): Promise<unknown>
}) {
  const [name, setName] = useState('')
  const [baseUrl, setBaseUrl] = useState('')
  const [apiKey, setApiKey] = useState('')
  return (
    <section class="endpoints">
      <h2>OpenAI-compatible endpoints</h2>
      <p>
        Ollama, vLLM, LM Studio, OpenRouter: models are <code>openai-compatible:NAME/MODEL</code>, listed from the
        endpoint's <code>/models</code>.
      </p>
      <table>
        <tbody>
          {Object.entries(props.endpoints).map(([key, endpoint]) => (
            <tr key={key} data-endpoint={key}>
              <td>{key}</td>
              <td>{endpoint.baseUrl}</td>
              <td>{endpoint.apiKey ?? ''}</td>
              <td>
                <button type="button" class="link remove" onClick={() => void props.remove(key)}>
                  remove
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <form
        class="add-endpoint"
        onSubmit={(e) => {
          e.preventDefault()
          const endpoint = { baseUrl: baseUrl.trim(), ...(apiKey.trim() ? { apiKey: apiKey.trim() } : {}) }
          void props.add(name.trim(), endpoint).then(() => {
            setName('')
            setBaseUrl('')
            setApiKey('')
          })
        }}
      >
        <input
          value={name}
          placeholder="name (e.g. local)"
          aria-label="endpoint name"
          onInput={(e) => setName(e.currentTarget.value)}
        />
        <input
          value={baseUrl}
          placeholder="http://127.0.0.1:11434/v1"
          aria-label="endpoint base URL"
          onInput={(e) => setBaseUrl(e.currentTarget.value)}
        />
        <input
          value={apiKey}
          placeholder="key name (optional, e.g. OPENROUTER_API_KEY)"
          aria-label="endpoint key name"
          onInput={(e) => setApiKey(e.currentTarget.value)}
        />
        <button type="submit">Add endpoint</button>
      </form>
    </section>
  )
}

function Keys(props: { view: SettingsView | undefined; failed(error: unknown): void; saved(note: string): void }) {
  const [name, setName] = useState('DEEPSEEK_API_KEY')
  const [value, setValue] = useState('')
  const path = (key: string) => `/api/settings/credentials/${encodeURIComponent(key)}`
  return (
    <section class="keys">
      <h2>API keys</h2>
      <p>Keys are written to the credentials store of the host. A stored key is never sent back here.</p>
      <table>
        <tbody>
          {props.view?.credentials.map((row) => (
            <tr key={row.name}>
              <td>{row.name}</td>
              <td>{row.set ? `set (${row.source ?? 'store'})` : 'not set'}</td>
              <td>
                {row.source === 'credentials-file' ? (
                  <button
                    type="button"
                    class="link remove"
                    onClick={() =>
                      void api('DELETE', path(row.name))
                        .then(() => props.saved(`${row.name} removed`))
                        .catch(props.failed)
                    }
                  >
                    remove
                  </button>
                ) : null}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <form
        class="add-key"
        onSubmit={(e) => {
          e.preventDefault()
          void api('PUT', path(name), { value })
            .then(() => {
              setValue('')
              props.saved(`${name} saved`)
            })
            .catch(props.failed)
        }}
      >
        <input value={name} aria-label="credential name" onInput={(e) => setName(e.currentTarget.value)} />
        <input
          type="password"
          autocomplete="off"
          value={value}
          aria-label="credential value"
          onInput={(e) => setValue(e.currentTarget.value)}
        />
        <button type="submit">Save key</button>
      </form>
    </section>
  )
}
