// @dsh/coding-tools/spill: a `tools/post-execute` policy. A text block of a tool result larger than
// `maxInlineBytes` is saved in a private per-session directory and replaced by its head, a marker with
// the file path, and its tail. Best effort: when saving fails the result is still cut, never failed.
import { createHash } from 'node:crypto'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { ToolExecution, ToolOutcome } from '@dsh/agent/tools'
import type { Context } from '@dsh/kernel'
import type { ToolResultContent } from '@dsh/llm'

export const name = 'coding-tools-spill'

export interface SpillConfig {
  /** Largest text block kept inline, in bytes. Default 40000. */
  maxInlineBytes?: number
  /** Where the private spill root is created. Default: the OS temp dir. */
  root?: string
}

/** Cuts `text` to about `budget` bytes: head, marker, tail (on character boundaries). */
export function preview(text: string, budget: number, marker: string): string {
  const bytes = Buffer.from(text, 'utf8')
  const half = Math.floor(budget / 2)
  const decoder = new TextDecoder('utf-8', { fatal: false })
  const head = decoder.decode(bytes.subarray(0, half)).replace(/\uFFFD+$/, '')
  const tail = decoder.decode(bytes.subarray(bytes.length - half)).replace(/^\uFFFD+/, '')
  return `${head}\n${marker}\n${tail}`
}

export function apply(ctx: Context, config: SpillConfig = {}): void {
  const max = config?.maxInlineBytes ?? 40_000
  let root: string | undefined
  let seq = 0
  const dirFor = (sessionId: string | undefined) => {
    root ??= mkdtempSync(join(config?.root ?? tmpdir(), 'dsh-spill-'))
    const id = createHash('sha256')
      .update(sessionId ?? 'no-session')
      .digest('hex')
      .slice(0, 12)
    const dir = join(root, `session-${id}`)
    mkdirSync(dir, { recursive: true, mode: 0o700 })
    return dir
  }
  ctx.effect(
    () => () => {
      if (root) rmSync(root, { recursive: true, force: true })
    },
    'spill.root',
  )
  ctx.on('tools/post-execute', async (execution: ToolExecution, next: () => Promise<ToolOutcome>) => {
    const outcome = await next()
    let changed = false
    const content: ToolResultContent[] = outcome.content.map((block) => {
      if (block.type !== 'text' || Buffer.byteLength(block.text, 'utf8') <= max) return block
      changed = true
      const size = Buffer.byteLength(block.text, 'utf8')
      let where: string
      try {
        const file = join(dirFor(execution.sessionId), `${execution.callId.replace(/[^\w.-]/g, '_')}-${++seq}.txt`)
        writeFileSync(file, block.text, { mode: 0o600 })
        where = `the complete ${size} bytes are saved in ${file}; read it with read (offset/limit) or search it with grep`
      } catch (error) {
        where = `${size} bytes in all; saving the rest failed: ${(error as Error).message}`
      }
      return { type: 'text', text: preview(block.text, max, `[... output cut: ${where} ...]`) }
    })
    return changed ? { ...outcome, content } : outcome
  })
}

/** The plugin (bundle rows use this default export). */
export default { name, apply }
