// `dsh models`: the models of the providers that are usable now (a key found, an endpoint configured),
// from each adapter's catalog: pi-ai's built-in list, an endpoint's `/models` (cached), DeepSeek's own.

import type {} from '@dsh/llm'
import type { ComposeRequest } from '../config.js'
import { ExitCode } from '../exit-codes.js'
import type { Io } from '../io.js'
import { modelSourceLines, modelSources } from '../providers.js'
import { withRuntime } from '../runtime.js'

export interface ModelsOptions {
  json?: boolean
  /** Also list providers without a key. */
  all?: boolean
  provider?: string
}

function price(value: number | undefined): string {
  return value === undefined ? '-' : `$${Number(value.toFixed(3))}`
}

export function models(request: ComposeRequest, options: ModelsOptions, io: Io): Promise<number> {
  return withRuntime(request, io, async ({ runtime }) => {
    const sources = await modelSources(
      runtime.root,
      options.provider === undefined ? {} : { provider: options.provider },
    )
    const catalogs = sources.catalogs.filter((catalog) => options.all || catalog.configured)
    const rows = catalogs.flatMap((catalog) =>
      catalog.models.map((model) => ({ provider: catalog.provider, configured: catalog.configured, ...model })),
    )
    if (options.json) {
      io.out(JSON.stringify(rows, null, 2))
      return ExitCode.OK
    }
    if (rows.length === 0) {
      io.err('dsh: no models: no provider has a key yet. Set one (dsh config set ANTHROPIC_API_KEY ...), or name an')
      io.err('dsh: OpenAI-compatible endpoint: dsh config set endpoints.local.baseUrl http://127.0.0.1:11434/v1')
      io.err('dsh: (dsh models --all lists every provider)')
      return ExitCode.OK
    }
    const table = [['MODEL', 'CONTEXT', 'REASONING', '$IN/M', '$OUT/M']]
    for (const row of rows) {
      table.push([
        `${row.provider}:${row.id}`,
        row.contextWindow === undefined ? '-' : String(row.contextWindow),
        row.reasoning === undefined
          ? row.reasoningEfforts && row.reasoningEfforts.length > 1
            ? 'yes'
            : '-'
          : row.reasoning
            ? 'yes'
            : 'no',
        price(row.cost?.input),
        price(row.cost?.output),
      ])
    }
    const widths = table[0]?.map((_, column) => Math.max(...table.map((line) => (line[column] ?? '').length))) ?? []
    for (const line of table)
      io.out(
        line
          .map((cell, column) => cell.padEnd(widths[column] ?? 0))
          .join('  ')
          .trimEnd(),
      )
    // The same reading `dsh config list` prints: where the default model, keys and base URLs come from.
    for (const line of modelSourceLines(sources, { all: options.all === true })) io.err(`dsh: ${line}`)
    io.err('dsh: (dsh config set model PROVIDER:MODEL changes the default)')
    return ExitCode.OK
  })
}
