// The chip a surface shows for an attached file, directory, hidden secret or session block.
import { describe, expect, it } from 'vitest'
import { contextChip } from '../src/chip.js'

describe('contextChip', () => {
  it('reads the block the prompt builder writes', () => {
    expect(contextChip('<context path="src/a.ts" bytes="1234" version="3">\nexport {}\n</context>')).toEqual({
      kind: 'file',
      name: 'src/a.ts',
      detail: '1.2 kB, version 3',
      body: 'export {}',
    })
    expect(contextChip('<context path="docs" kind="directory" entries="2">\na.md\nb.md\n</context>')).toMatchObject({
      kind: 'directory',
      detail: '2 entries',
      body: 'a.md\nb.md',
    })
    expect(contextChip('<context path="~/.ssh" kind="hidden">\n[not attached]\n</context>')?.kind).toBe('hidden')
    expect(contextChip('<context session="abc" cwd="/w" events="9">\ndigest\n</context>')).toMatchObject({
      kind: 'session',
      name: 'abc',
      detail: '9 events',
    })
  })

  it('leaves any other text alone', () => {
    expect(contextChip('look at <context path="x">')).toBeUndefined()
    expect(contextChip('plain words')).toBeUndefined()
  })
})
