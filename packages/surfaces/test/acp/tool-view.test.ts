// The editor's view of a tool call, as a pure function of the tool's presentation and the session cwd.
import { resolve } from 'node:path'
import { describe, expect, it } from 'vitest'
import { editorPresentation } from '../../src/acp/tool-view.js'

const cwd = '/work/project'
const resolvePath = (path: string) => (path === '' ? undefined : resolve(cwd, path))
const view = (presentation: Parameters<typeof editorPresentation>[0]) =>
  editorPresentation(presentation, cwd, resolvePath)

describe('editorPresentation', () => {
  it('makes diff paths and locations absolute and names the file relative to the cwd when inside it', () => {
    expect(
      view({ kind: 'diff', title: 'Edit', path: 'src/a.ts', after: 'x', locations: [{ path: 'src/a.ts', line: 3 }] }),
    ).toEqual({
      kind: 'diff',
      title: 'Edit src/a.ts',
      path: '/work/project/src/a.ts',
      after: 'x',
      locations: [{ path: '/work/project/src/a.ts', line: 3 }],
    })
    expect(view({ kind: 'diff', title: 'Write', path: '../elsewhere/b.txt' })).toMatchObject({
      title: 'Write /work/elsewhere/b.txt',
      path: '/work/elsewhere/b.txt',
    })
  })

  it('keeps a title that already names its file, and shows no diff for a path that does not resolve', () => {
    expect(view({ kind: 'diff', title: 'Write /work/project/n.txt', path: '/work/project/n.txt' }).title).toBe(
      'Write /work/project/n.txt',
    )
    expect(view({ kind: 'diff', title: 'Write', path: '', after: 'x', locations: [{ path: '' }] })).toEqual({
      kind: 'generic',
      title: 'Write',
      locations: [],
    })
  })

  it('titles a terminal call with its command (first line, bounded)', () => {
    expect(view({ kind: 'terminal', title: 'Run command', command: 'node add.js' }).title).toBe('Run `node add.js`')
    expect(view({ kind: 'terminal', title: 'Build', command: 'npm ci\nnpm test' }).title).toBe('Run `npm ci …`')
    const long = view({ kind: 'terminal', title: 'x', command: 'echo '.repeat(40) }).title
    expect(long.length).toBeLessThanOrEqual(128)
    expect(long).toMatch(/…`$/)
  })

  it('joins a generic title and its subtitle, showing a path subtitle like a diff path', () => {
    expect(view({ kind: 'generic', title: 'Grep', subtitle: 'TODO' }).title).toBe('Grep TODO')
    expect(
      view({
        kind: 'generic',
        title: 'Read',
        subtitle: '/work/project/a.md',
        locations: [{ path: '/work/project/a.md' }],
      }),
    ).toEqual({
      kind: 'generic',
      title: 'Read a.md',
      subtitle: '/work/project/a.md',
      locations: [{ path: '/work/project/a.md' }],
    })
    expect(view({ kind: 'generic', title: 'Jobs' }).title).toBe('Jobs')
  })
})
