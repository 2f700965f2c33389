// The streamed answer: the same Markdown whether it arrives in one piece or in many, and finished
// blocks are parsed once.
import { describe, expect, it } from 'vitest'
import { Answer } from '../../src/tui/answer.js'
import { createTheme } from '../../src/tui/theme.js'

const theme = createTheme(true)

function rendered(pieces: string[], width = 60): string[] {
  const answer = new Answer(theme)
  for (const piece of pieces) answer.append(piece)
  answer.finish()
  return answer.render(width).map((line) => line.trimEnd())
}

describe('Answer', () => {
  const text = '# Title\n\nA paragraph with **bold**.\n\n- one\n- two\n\n```js\nconst x = 1\n```\n\nThe end.'

  it('renders the same lines however the text was split into deltas', () => {
    const whole = rendered([text])
    const chars = rendered([...text])
    expect(chars).toEqual(whole)
    expect(whole).toContain('Title')
    expect(whole).toContain('A paragraph with bold.')
    expect(whole.indexOf('')).toBeGreaterThan(0)
  })

  it('keeps a long code block as code across the cuts', () => {
    const code = Array.from({ length: 100 }, (_, i) => `line ${i} # not a heading`)
    const lines = rendered([`\`\`\`\n${code.join('\n')}\n\`\`\`\n`])
    expect(lines.filter((line) => line.includes('# not a heading'))).toHaveLength(100)
    expect(lines.some((line) => line.startsWith('line') || line.trim().startsWith('line'))).toBe(true)
  })
})
