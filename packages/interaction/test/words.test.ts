import { describe, expect, it } from 'vitest'
import { shellWords } from '../src/words.js'

describe('shellWords', () => {
  it('splits on whitespace and keeps quoted words together', () => {
    expect(shellWords(`  every 5m  "fix the test" --until 'npm test' `)).toEqual({
      words: ['every', '5m', 'fix the test', '--until', 'npm test'],
    })
  })

  it('unescapes a backslash outside single quotes and keeps it inside them', () => {
    expect(shellWords(String.raw`/tmp/my\ shot.png "a\"b" 'c\d'`).words).toEqual([
      '/tmp/my shot.png',
      'a"b',
      String.raw`c\d`,
    ])
  })

  it('keeps an empty quoted word and reports a quote left open', () => {
    expect(shellWords(`'' "open end`)).toEqual({ words: ['', 'open end'], unclosed: '"' })
  })
})
