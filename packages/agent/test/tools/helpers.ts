// Test helpers: a real Context with the real plugins, tool-call blocks, latches.
import { ApprovalService } from '@dsh/agent/approval'
import { Context } from '@dsh/kernel'
import type { ToolCallBlock } from '@dsh/llm'
import { type ToolResult, type ToolsConfig, ToolsService } from '../../src/tools/index.js'

export async function setup(options: { approval?: boolean; tools?: ToolsConfig } = {}) {
  const root = new Context()
  if (options.approval !== false) await root.plugin(ApprovalService)
  await root.plugin(ToolsService, options.tools ?? {})
  const results: ToolResult[] = []
  root.on('tools/result', (result) => {
    results.push(result)
  })
  return { root, results }
}

let ids = 0
export function call(name: string, args: Record<string, unknown> = {}, id = `call_${++ids}`): ToolCallBlock {
  return { type: 'tool-call', id, name, arguments: args }
}

export interface Latch {
  promise: Promise<void>
  open(): void
  readonly opened: boolean
}

export function latch(): Latch {
  let open!: () => void
  let opened = false
  const promise = new Promise<void>((resolve) => {
    open = () => {
      opened = true
      resolve()
    }
  })
  return {
    promise,
    open,
    get opened() {
      return opened
    },
  }
}

/** Waits for a latch, failing (instead of hanging) when it is not opened within `ms`. */
export async function within(latch: Latch, ms = 2000, what = 'latch'): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  try {
    await Promise.race([
      latch.promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms)
      }),
    ])
  } finally {
    clearTimeout(timer)
  }
}

export const tick = () => new Promise<void>((resolve) => setImmediate(resolve))

export const textOf = (result: ToolResult | undefined) =>
  (result?.content ?? []).map((block) => (block.type === 'text' ? block.text : `[${block.type}]`)).join('')
