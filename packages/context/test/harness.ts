// An in-process dsh with the context rows: the real runtime plugins under one Context, a model adapter
// given by the test, and the meter, pruning, compaction and retry rows as the test asks.
import { AgentsService } from '@dsh/agent'
import AgentLoopService from '@dsh/agent-loop'
import { Context, InvariantsService } from '@dsh/kernel'
import { type LlmAdapter, LlmService } from '@dsh/llm'
import { SessionService } from '@dsh/session'
import { SystemPromptService } from '@dsh/system-prompt'
import { ToolsService } from '@dsh/tools'
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
  const provider = options.provider ?? 'scripted'
  const root = new Context()
  await root.plugin(InvariantsService)
  await root.plugin(SessionService, { cwd: '/work' })
  await root.plugin(LlmService, { provider })
  await root.plugin(ToolsService)
  await root.plugin(SystemPromptService)
  await root.plugin(AgentsService)
  await root.plugin(AgentLoopService, {
    model: { provider, model: options.model ?? 'scripted' },
    maxSteps: options.maxSteps ?? 200,
  })
  if (options.adapter) root.llm.registerAdapter(provider, options.adapter)
  await options.before?.(root)
  if (options.meter !== false) await root.plugin(TokenMeterService, options.meter ?? {})
  if (options.pruning !== false) await root.plugin(pruning, options.pruning ?? {})
  if (options.compaction !== false && options.meter !== false) {
    await root.plugin(CompactionService, options.compaction ?? {})
  }
  if (options.retry !== false && options.retry !== undefined) await root.plugin(retry, options.retry)
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
