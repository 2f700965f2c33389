// A tool call's line: the tail of a loud result, the outcome marks, and never wider than the terminal
// (pi-tui refuses to draw a line wider than the screen).
import { visibleWidth } from '@mariozechner/pi-tui'
import { describe, expect, it } from 'vitest'
import { createTheme } from '../../src/tui/theme.js'
import { ToolLine } from '../../src/tui/tool-line.js'

const result = (text: string, isError = false) => ({
  role: 'tool' as const,
  toolCallId: 'c1',
  toolName: 'bash',
  content: [{ type: 'text' as const, text }],
  isError,
})

describe('ToolLine', () => {
  it('shows the last lines of a 50,000-line result and how many it left out', () => {
    const line = new ToolLine(createTheme(true), 'c1', { kind: 'terminal', title: 'Run', command: 'seq 1 50000' })
    expect(line.render(80)[0]).toContain('○ Run seq 1 50000')
    line.settle(result(Array.from({ length: 50_000 }, (_, i) => String(i + 1)).join('\n')), undefined)
    const lines = line.render(80).map((row) => row.trimEnd())
    expect(lines[0]).toContain('● Run seq 1 50000')
    expect(lines).toContain('  │ … 49994 more lines above')
    expect(lines.at(-1)).toBe('  │ 50000')
    expect(lines).toHaveLength(8)
  })

  it('marks failures and calls a crash left without an outcome', () => {
    const failed = new ToolLine(createTheme(true), 'c1', { kind: 'generic', title: 'Read', subtitle: 'x' })
    failed.settle(result('no such file', true), 'FS_NOT_FOUND')
    expect(failed.render(60).join('\n')).toMatch(/✗ Read x[\s\S]*FS_NOT_FOUND[\s\S]*no such file/)
    const unknown = new ToolLine(createTheme(true), 'c2', { kind: 'generic', title: 'Write', subtitle: 'y' })
    unknown.settle(result('interrupted', true), 'TOOL_OUTCOME_UNKNOWN')
    expect(unknown.render(60).join('\n')).toMatch(/\? Write y[\s\S]*outcome unknown/)
  })

  it('never renders a line wider than the terminal, down to 3 columns', () => {
    const line = new ToolLine(createTheme(false), 'c1', {
      kind: 'diff',
      title: 'Edit',
      path: 'a/very/long/path/name.ts',
      before: 'old line that is rather long',
      after: 'new line that is rather long',
    })
    line.settle(result('edited'), undefined)
    for (let width = 3; width <= 60; width++) {
      for (const row of line.render(width)) expect(visibleWidth(row)).toBeLessThanOrEqual(width)
    }
  })

  it("nests a subagent's calls under the task line, the last few shown and the earlier ones counted", () => {
    const theme = createTheme(true)
    let last: ToolLine | undefined
    const task = new ToolLine(theme, 't1', { kind: 'generic', title: 'Task', subtitle: 'reader' })
    const before = task.render(60)
    for (let i = 1; i <= 8; i++) {
      const call = new ToolLine(theme, `r${i}`, { kind: 'generic', title: 'Read', subtitle: `f${i}.md` })
      task.nest(call)
      last = call
      if (i < 8) call.settle(result(`text ${i}`), undefined)
    }
    // The nested calls changed the task line (its cache is dropped when a child settles too).
    const lines = task.render(60).map((row) => row.trimEnd())
    expect(lines).not.toEqual(before)
    expect(lines.slice(1)).toEqual([
      '  … 2 earlier calls',
      '  ● Read f3.md',
      '  ● Read f4.md',
      '  ● Read f5.md',
      '  ● Read f6.md',
      '  ● Read f7.md',
      '  ○ Read f8.md',
    ])
    last?.settle(result('no such file', true), 'FS_NOT_FOUND')
    expect(
      task
        .render(60)
        .slice(7)
        .map((row) => row.trimEnd()),
    ).toEqual(['  ✗ Read f8.md', '    FS_NOT_FOUND'])
  })
})
