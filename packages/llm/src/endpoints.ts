// The model lists of OpenAI-compatible endpoints: `GET <baseUrl>/models` (the `/v1/models` of Ollama,
// vLLM, LM Studio, OpenRouter), cached in memory and in $DSH_HOME/cache/models/<name>.json for an
// hour, so a run learns the context window of its model without asking the server every time.
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { ModelInfo } from './adapter.js'

/** One named endpoint in the `endpoints` setting. */
export interface EndpointSetting {
  /** The API root, e.g. `http://127.0.0.1:11434/v1` (`/chat/completions` and `/models` are appended). */
  baseUrl: string
  /** The credential reference holding its key (`OPENROUTER_API_KEY`); none for local servers. */
  apiKey?: string
  /** Model ids to list when the server has no `/models` (or in addition to it). */
  models?: string[]
  /** The context window of its models when the server does not say. */
  contextWindow?: number
  /**
   * What its models cost, US dollars per million tokens, for `/cost` and budgets; overrides prices the
   * server's `/models` reports. Absent (and not reported): costs show as unknown.
   */
  prices?: { input: number; output: number; cacheRead?: number; cacheWrite?: number }
}

const priceSchema = { type: 'number', minimum: 0 } as const

export const endpointSchema = {
  type: 'object',
  propertyNames: { pattern: '^[A-Za-z0-9][A-Za-z0-9._-]*$' },
  additionalProperties: {
    type: 'object',
    required: ['baseUrl'],
    additionalProperties: false,
    properties: {
      baseUrl: { type: 'string', pattern: '^https?://' },
      apiKey: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]*$' },
      models: { type: 'array', items: { type: 'string', minLength: 1 } },
      contextWindow: { type: 'integer', minimum: 1 },
      prices: {
        type: 'object',
        required: ['input', 'output'],
        additionalProperties: false,
        properties: { input: priceSchema, output: priceSchema, cacheRead: priceSchema, cacheWrite: priceSchema },
      },
    },
  },
} as const

/** How long a fetched list is used before asking the server again. */
export const MODEL_LIST_TTL_MS = 60 * 60 * 1000
/** How long a failed fetch is not retried (an endpoint without `/models`, a server that is down). */
const FAILURE_TTL_MS = 60 * 1000
const FETCH_TIMEOUT_MS = 5000

interface Listing {
  baseUrl: string
  fetchedAt: number
  models: ModelInfo[]
}

export interface EndpointCatalogOptions {
  endpoints: () => Record<string, EndpointSetting>
  /** The dsh home; the cache lives in its `cache/models`. */
  cacheDir: () => string
  /** The value of a credential reference, for listing the models of endpoint `endpoint`. */
  apiKey: (name: string | undefined, endpoint: string, entry: EndpointSetting) => Promise<string | undefined>
  now?: () => number
}

function numberOf(value: unknown): number | undefined {
  const number = typeof value === 'string' ? Number(value) : value
  return typeof number === 'number' && Number.isFinite(number) && number > 0 ? number : undefined
}

/** One `/models` entry as a ModelInfo (fields of OpenAI, OpenRouter, vLLM and LM Studio). */
export function modelOf(raw: Record<string, unknown>): ModelInfo | undefined {
  if (typeof raw.id !== 'string' || raw.id === '') return undefined
  const info: ModelInfo = { id: raw.id }
  if (typeof raw.name === 'string') info.label = raw.name
  const window =
    numberOf(raw.context_length) ??
    numberOf(raw.max_model_len) ??
    numberOf(raw.max_context_length) ??
    numberOf(raw.context_window)
  if (window) info.contextWindow = window
  const parameters = raw.supported_parameters
  if (Array.isArray(parameters)) info.reasoning = parameters.includes('reasoning')
  const pricing = raw.pricing as Record<string, unknown> | undefined
  const input = numberOf(pricing?.prompt)
  const output = numberOf(pricing?.completion)
  // OpenRouter prices are dollars per token; dsh states them per million tokens.
  if (input !== undefined && output !== undefined) info.cost = { input: input * 1e6, output: output * 1e6 }
  return info
}

/** The model lists of every configured endpoint, each id prefixed with the endpoint name (`local/qwen3`). */
export class EndpointCatalog {
  private readonly _listings = new Map<string, Listing>()
  private readonly _failures = new Map<string, { baseUrl: string; at: number }>()
  private readonly _options: EndpointCatalogOptions

  constructor(options: EndpointCatalogOptions) {
    this._options = options
  }

  private _now(): number {
    return this._options.now?.() ?? Date.now()
  }

  /** What is known without I/O: fetched lists, then each endpoint's own `models`. */
  models(): ModelInfo[] {
    const out: ModelInfo[] = []
    for (const [name, entry] of Object.entries(this._options.endpoints())) {
      const listing = this._listings.get(name)
      const fetched = listing?.baseUrl === entry.baseUrl ? listing.models : []
      const ids = new Set(fetched.map((model) => model.id))
      const listed: ModelInfo[] = (entry.models ?? []).filter((id) => !ids.has(id)).map((id) => ({ id }))
      for (const model of [...fetched, ...listed]) {
        const window = model.contextWindow ?? entry.contextWindow
        const cost = entry.prices ?? model.cost
        out.push({
          ...model,
          id: `${name}/${model.id}`,
          ...(window ? { contextWindow: window } : {}),
          ...(cost ? { cost: { ...cost } } : {}),
        })
      }
    }
    return out
  }

  /** Refreshes stale lists (disk cache first, then the server), then returns `models()`. Never throws. */
  async load(signal?: AbortSignal): Promise<ModelInfo[]> {
    await Promise.all(
      Object.entries(this._options.endpoints()).map(([name, entry]) => this._refresh(name, entry, signal)),
    )
    return this.models()
  }

  private async _refresh(name: string, entry: EndpointSetting, signal: AbortSignal | undefined): Promise<void> {
    const now = this._now()
    const fresh = (listing: Listing | undefined) =>
      listing !== undefined && listing.baseUrl === entry.baseUrl && now - listing.fetchedAt < MODEL_LIST_TTL_MS
    if (fresh(this._listings.get(name))) return
    const failure = this._failures.get(name)
    if (failure && failure.baseUrl === entry.baseUrl && now - failure.at < FAILURE_TTL_MS) return
    const file = join(this._options.cacheDir(), 'cache', 'models', `${name}.json`)
    const cached = await readListing(file)
    if (fresh(cached)) {
      this._listings.set(name, cached as Listing)
      return
    }
    try {
      const models = await fetchModels(entry, await this._options.apiKey(entry.apiKey, name, entry), signal)
      const listing: Listing = { baseUrl: entry.baseUrl, fetchedAt: now, models }
      this._listings.set(name, listing)
      this._failures.delete(name)
      await writeListing(file, listing).catch(() => {})
    } catch {
      // A stale list is better than none; the failure is remembered so each request does not retry it.
      if (cached?.baseUrl === entry.baseUrl) this._listings.set(name, cached)
      this._failures.set(name, { baseUrl: entry.baseUrl, at: now })
    }
  }
}

async function fetchModels(
  entry: EndpointSetting,
  key: string | undefined,
  signal?: AbortSignal,
): Promise<ModelInfo[]> {
  const timeout = AbortSignal.timeout(FETCH_TIMEOUT_MS)
  const response = await fetch(`${entry.baseUrl.replace(/\/+$/, '')}/models`, {
    headers: key ? { authorization: `Bearer ${key}` } : {},
    signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
  })
  if (!response.ok) throw new Error(`HTTP ${response.status}`)
  const body = (await response.json()) as { data?: unknown }
  if (!Array.isArray(body.data)) throw new Error('no data array')
  return body.data.flatMap((raw) => (typeof raw === 'object' && raw !== null ? (modelOf(raw) ?? []) : []))
}

async function readListing(file: string): Promise<Listing | undefined> {
  try {
    const data = JSON.parse(await readFile(file, 'utf8')) as Listing
    return typeof data.baseUrl === 'string' && typeof data.fetchedAt === 'number' && Array.isArray(data.models)
      ? data
      : undefined
  } catch {
    return undefined
  }
}

async function writeListing(file: string, listing: Listing): Promise<void> {
  await mkdir(join(file, '..'), { recursive: true })
  const temp = `${file}.${process.pid}.tmp`
  await writeFile(temp, JSON.stringify(listing))
  await rename(temp, file)
}
