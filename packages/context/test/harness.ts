// An in-process dsh with the context rows: the in-process tree of @dsh/test-support (no approval row),
// a model adapter given by the test, and the meter, pruning, compaction and retry rows as it asks.
import type { Context } from '@dsh/kernel'
import type { LlmAdapter } from '@dsh/llm'
import { startInProcess } from '@dsh/test-support/in-process'
import CompactionService, { type CompactionConfig } from '../src/compaction.js'
import TokenMeterService, { type TokenMeterConfig } from '../src/meter.js'
import * as pruning from '../src/pruning.js'
import * as retry from '../src/retry.js'

export interface HarnessOptions {
  adapter?: LlmAdapter
  provider?: string
  model?: string
  meter?: TokenMeterConfig | false
  pruning?: pruning.PruningConfig | false
  compaction?: CompactionConfig | false
  retry?: retry.RetryConfig | false
  maxSteps?: number
  /** Rows to add before the context rows (e.g. a provider row over HTTP). */
  before?: (root: Context) => Promise<void>
}

export async function createContextHarness(options: HarnessOptions = {}) {
  const { root } = await startInProcess({
    ...(options.provider === undefined ? {} : { provider: options.provider }),
    ...(options.model === undefined ? {} : { model: options.model }),
    maxSteps: options.maxSteps ?? 200,
    approval: false,
    adapter: options.adapter ?? false,
    after: async (root) => {
      await options.before?.(root)
      if (options.meter !== false) await root.plugin(TokenMeterService, options.meter ?? {})
      if (options.pruning !== false) await root.plugin(pruning, options.pruning ?? {})
      if (options.compaction !== false && options.meter !== false) {
        await root.plugin(CompactionService, options.compaction ?? {})
      }
      if (options.retry !== false && options.retry !== undefined) await root.plugin(retry, options.retry)
    },
  })
  return root
}

/** The text of every text block of a message-like value. */
export function textOf(message: { content: ReadonlyArray<{ type: string; text?: string }> }): string {
  return message.content.map((block) => block.text ?? '').join('')
}

/** The `data.message` of a surface event; throws when the event is missing. */
export function messageOf<M = { content: ReadonlyArray<{ type: string; text?: string }> }>(event: unknown): M {
  const message = (event as { data?: { message?: M } } | undefined)?.data?.message
  if (!message) throw new Error('not a surface event')
  return message
}
