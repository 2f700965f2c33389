import { describe, expect, it } from 'vitest'
import { closestName, didYouMean, editDistance } from '../src/errors.js'
import { deepFreeze, HarnessError, toJsonSafe } from '../src/index.js'

describe('HarnessError', () => {
  it('carries a stable code and frozen JSON-safe facts', () => {
    const cause = new Error('disk full')
    const error = new HarnessError('SOMETHING_BROKE', 'it broke', {
      path: '/tmp/x',
      size: 10n,
      nested: { list: [1, undefined, () => 1], when: undefined },
      cause,
      infinite: Number.POSITIVE_INFINITY,
    })
    expect(error.code).toBe('SOMETHING_BROKE')
    expect(error.message).toBe('it broke')
    expect(error.facts).toEqual({
      path: '/tmp/x',
      size: '10',
      nested: { list: [1, null, null] },
      cause: { name: 'Error', message: 'disk full' },
      infinite: 'Infinity',
    })
    expect(Object.isFrozen(error.facts)).toBe(true)
    expect(Object.isFrozen(error.facts.nested)).toBe(true)
    expect(JSON.parse(JSON.stringify(error))).toEqual({
      name: 'HarnessError',
      code: 'SOMETHING_BROKE',
      message: 'it broke',
      facts: error.facts,
    })
  })

  it('is recognised by brand, with or without a code', () => {
    const error = new HarnessError('A', 'a')
    expect(HarnessError.is(error)).toBe(true)
    expect(HarnessError.is(error, 'A')).toBe(true)
    expect(HarnessError.is(error, 'B')).toBe(false)
    expect(HarnessError.is(new Error('plain'))).toBe(false)
    expect(HarnessError.is(null)).toBe(false)
    // An error from another copy of the package carries the same global brand.
    const foreign = Object.assign(new Error('x'), { code: 'A', [Symbol.for('dsh.HarnessError')]: true })
    expect(HarnessError.is(foreign, 'A')).toBe(true)
  })

  it('keeps cycles out of facts', () => {
    const a: Record<string, unknown> = { name: 'a' }
    a.self = a
    expect(toJsonSafe(a)).toEqual({ name: 'a', self: '[Circular]' })
  })

  it('deepFreeze freezes nested values', () => {
    const value = deepFreeze({ a: { b: [1, { c: 2 }] } })
    expect(Object.isFrozen(value.a.b[1])).toBe(true)
  })
})

describe('did-you-mean', () => {
  it('suggests the closest known name for a typo, nothing for an unrelated word', () => {
    expect(editDistance('sesions', 'sessions')).toBe(1)
    expect(editDistance('disabeld', 'disabled')).toBe(1)
    expect(closestName('sesions', ['run', 'sessions', 'config'])).toBe('sessions')
    expect(closestName('modle', ['model', 'preset'])).toBe('model')
    expect(closestName('session-titel', ['session-title', 'session-store'])).toBe('session-title')
    expect(closestName('banana', ['run', 'sessions'])).toBeUndefined()
    expect(didYouMean('x', ['run'])).toBe('')
    expect(didYouMean('rn', ['run'], "'")).toBe(" (did you mean 'run'?)")
  })
})
