// Project instruction files (AGENTS.md, and CLAUDE.md when present) from the working directory and
// its parents, outermost first, as a prompt section: what users of coding agents expect.
import { statSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import type { Context } from '@dsh/kernel'
import { readTextHead } from '@dsh/settings'
import type { PromptScope } from './index.js'

export interface ProjectInstructionsConfig {
  /** File names to look for in each directory. Default: AGENTS.md, CLAUDE.md. */
  files?: string[]
  /** Bytes read per file; longer files are cut with a note. Default 64 KiB. */
  maxBytes?: number
}

/** The instruction files that apply to `cwd`, outermost directory first. */
export function findInstructionFiles(cwd: string, files: string[]): string[] {
  const found: string[] = []
  let dir = resolve(cwd)
  for (;;) {
    for (const name of [...files].reverse()) {
      const path = join(dir, name)
      if (statSync(path, { throwIfNoEntry: false })?.isFile()) found.push(path)
    }
    const parent = dirname(dir)
    if (parent === dir) break
    dir = parent
  }
  return found.reverse()
}

export function renderInstructions(scope: PromptScope, config: ProjectInstructionsConfig = {}): string | undefined {
  const files = config.files ?? ['AGENTS.md', 'CLAUDE.md']
  const maxBytes = config.maxBytes ?? 64 * 1024
  const parts: string[] = []
  for (const path of findInstructionFiles(scope.cwd, files)) {
    let text: string
    try {
      // At most maxBytes + 1 bytes, and only of a regular file (a FIFO swapped in is skipped, not waited on).
      const head = readTextHead(path, maxBytes)
      text = head.text
      if (head.truncated) text += `\n[... ${head.size - maxBytes} more bytes of ${path} not shown]`
    } catch {
      continue
    }
    parts.push(`<instructions file="${path}">\n${text.trim()}\n</instructions>`)
  }
  if (parts.length === 0) return undefined
  return `Project instructions (follow them; a file deeper in the tree wins over an outer one):\n\n${parts.join('\n\n')}`
}

export const name = 'project-instructions'
export const inject = ['systemPrompt']

export function apply(ctx: Context, config: ProjectInstructionsConfig = {}): void {
  ctx.systemPrompt.register({
    name: 'project-instructions',
    order: 50,
    render: (scope) => renderInstructions(scope, config ?? {}),
  })
}

export default { name, inject, apply }
