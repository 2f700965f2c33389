import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context, type Plugin } from '@dsh/kernel'
import SettingsService from '@dsh/settings'
import CredentialsService from '@dsh/settings/credentials'
import LlmService, { type StreamChunk } from '../src/index.js'

export const KEY = 'sk-test-0123456789abcdef'

export async function tempDir(): Promise<{ path: string } & AsyncDisposable> {
  const path = await mkdtemp(join(tmpdir(), 'dsh-llm-'))
  return { path, [Symbol.asyncDispose]: () => rm(path, { recursive: true, force: true }) }
}

/** A root context with credentials (isolated env and dirs), ctx.llm, and the given provider row. */
export async function bootLlm(
  provider: Plugin,
  config: unknown,
  options: { env?: Record<string, string | undefined>; home: string },
): Promise<{ ctx: Context; dispose: () => Promise<void> }> {
  const ctx = new Context()
  const fibers = [
    ctx.plugin(CredentialsService, {
      env: options.env ?? { DEEPSEEK_API_KEY: KEY },
      home: options.home,
      cwd: options.home,
    }),
    ctx.plugin(SettingsService, { env: options.env ?? {}, home: options.home, cwd: options.home }),
    ctx.plugin(LlmService),
    ctx.plugin(provider, config),
  ]
  for (const fiber of fibers) await fiber
  return {
    ctx,
    async dispose() {
      for (const fiber of fibers.reverse()) await fiber.dispose()
    },
  }
}

export async function collect(stream: AsyncIterable<StreamChunk>): Promise<StreamChunk[]> {
  const out: StreamChunk[] = []
  for await (const chunk of stream) out.push(chunk)
  return out
}
