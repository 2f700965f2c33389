// Readable transcripts of a session for `dsh sessions show|export` and the web page's export: the
// append-origin nodes (what the user saw happen), tool calls and results abbreviated, turn endings marked.
import type { AnySessionEvent } from '@dsh/session'

function clip(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim()
  return flat.length > max ? `${flat.slice(0, max - 3)}...` : flat
}

function textOf(blocks: readonly { type: string; text?: string }[]): string {
  return blocks.flatMap((block) => (block.type === 'text' && block.text ? [block.text] : [])).join('')
}

export type TranscriptFormat = 'text' | 'md'

/** Renders the transcript lines of `events` (skipping surface replacements, which only the model sees). */
export function renderTranscript(events: readonly AnySessionEvent[], format: TranscriptFormat): string[] {
  const md = format === 'md'
  const out: string[] = []
  for (const event of events) {
    if (event.surfaceOp?.op === 'replace') continue
    switch (event.type) {
      case 'user/message': {
        const data = event.data
        const text = textOf(data.message.content)
        if (data.origin === 'context') out.push(md ? `> _context:_ ${clip(text, 200)}` : `[context] ${clip(text, 200)}`)
        else out.push(md ? `## User\n\n${text}\n` : `user: ${text}`)
        break
      }
      case 'assistant/message': {
        const blocks = event.data.message.content
        const lines: string[] = []
        for (const block of blocks) {
          if (block.type === 'text' && block.text) lines.push(block.text)
          else if (block.type === 'reasoning')
            lines.push(
              md
                ? `<details><summary>thinking</summary>\n\n${block.text}\n</details>`
                : `(thinking, ${block.text.length} chars)`,
            )
          else if (block.type === 'tool-call')
            lines.push(`${md ? '- ' : ''}-> ${block.name}(${clip(JSON.stringify(block.arguments), 120)})`)
        }
        if (lines.length) out.push(md ? `## Assistant\n\n${lines.join('\n\n')}\n` : `assistant: ${lines.join('\n  ')}`)
        break
      }
      case 'tool/result': {
        const data = event.data
        const text = textOf(data.message.content)
        const lineCount = text.split('\n').length
        const marker = data.message.isError ? ` [error${data.code ? ` ${data.code}` : ''}]` : ''
        const summary = `${data.message.toolName}${marker}: ${clip(text, 160)}${lineCount > 1 ? ` (${lineCount} lines)` : ''}`
        out.push(md ? `- <- ${summary}\n` : `  <- ${summary}`)
        break
      }
      case 'turn/end': {
        const end = event.data
        if (end.reason !== 'completed')
          out.push(
            md
              ? `_${turnEndedText(end.reason)}${end.message ? `: ${end.message}` : ''}_\n`
              : `(${turnEndedText(end.reason)}${end.message ? `: ${end.message}` : ''})`,
          )
        break
      }
    }
  }
  return out
}

/**
 * How a turn ended, in the user's words (the log keeps the reason value): `aborted` is "turn
 * stopped", `error` "turn failed", `max-tokens` "answer cut off at the token limit".
 */
export function turnEndedText(reason: string): string {
  switch (reason) {
    case 'completed':
      return 'turn done'
    case 'aborted':
      return 'turn stopped'
    case 'interrupted':
      return 'turn interrupted'
    case 'error':
      return 'turn failed'
    case 'blocked':
      return 'turn blocked'
    case 'max-tokens':
      return 'answer cut off at the token limit'
    default:
      return `turn ended (${reason})`
  }
}
