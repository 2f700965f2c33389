import { describe, expect, it } from 'vitest'
import { defineTool, type ToolDispatch, type ToolMode, type ToolResult } from '../../src/tools/index.js'
import { call, type Latch, latch, setup, textOf, tick, within } from './helpers.js'

interface Recorder {
  events: string[]
  at: Record<string, number>
  active: number
  maxActive: number
}

const recorder = (): Recorder => ({ events: [], at: {}, active: 0, maxActive: 0 })

/**
 * A tool whose body records start/end, optionally waits for a latch (by `args.wait`) and opens one
 * (by `args.open`) when it starts. `latches` are created on demand.
 */
function probe(name: string, mode: ToolMode, rec: Recorder, latches: Map<string, Latch>) {
  const get = (key: string) => {
    const existing = latches.get(key)
    if (existing) return existing
    const created = latch()
    latches.set(key, created)
    return created
  }
  return defineTool<{ id: string; wait?: string; open?: string; untilAbort?: boolean; ticks?: number }>({
    name,
    description: `${mode} probe`,
    mode,
    parameters: {
      type: 'object',
      properties: {
        id: { type: 'string' },
        wait: { type: 'string' },
        open: { type: 'string' },
        untilAbort: { type: 'boolean' },
        ticks: { type: 'integer' },
      },
      required: ['id'],
    },
    execute: async (args, context) => {
      rec.events.push(`start:${args.id}`)
      rec.at[`start:${args.id}`] = performance.now()
      rec.maxActive = Math.max(rec.maxActive, ++rec.active)
      try {
        if (args.open) get(args.open).open()
        if (args.wait) await within(get(args.wait), 2000, args.wait)
        for (let i = 0; i < (args.ticks ?? 0); i++) await tick()
        if (args.untilAbort) {
          await new Promise((resolve) => context.signal.addEventListener('abort', resolve, { once: true }))
          return `partial ${args.id}`
        }
        return `done ${args.id}`
      } finally {
        rec.active--
        rec.events.push(`end:${args.id}`)
        rec.at[`end:${args.id}`] = performance.now()
      }
    },
  })
}

async function fixture(concurrency?: number) {
  const env = await setup(concurrency ? { tools: { concurrency } } : {})
  const rec = recorder()
  const latches = new Map<string, Latch>()
  env.root.tools.register(probe('par', 'parallel-safe', rec, latches))
  env.root.tools.register(probe('ex', 'exclusive', rec, latches))
  const committed: { index: number; id: string; text: string }[] = []
  const onResult = (result: ToolResult, index: number) => {
    rec.events.push(`commit:${index}`)
    committed.push({ index, id: result.toolCallId, text: textOf(result) })
  }
  return { ...env, rec, latches, committed, onResult }
}

describe('the scheduler', () => {
  it('overlaps parallel-safe bodies but commits in the model call order', async () => {
    const { root, rec, committed, onResult, results } = await fixture()
    // Call 0 cannot finish until call 1 has finished: only possible if the bodies overlap.
    const calls = [
      call('par', { id: 'A', wait: 'B-done' }, 'A'),
      call('par', { id: 'B', open: 'B-done' }, 'B'),
      call('par', { id: 'C' }, 'C'),
    ]
    const out = await root.tools.executeCalls(calls, { signal: new AbortController().signal, onResult })
    expect(out.map(textOf)).toEqual(['done A', 'done B', 'done C'])
    expect(rec.at['start:B']).toBeLessThan(rec.at['end:A'] as number) // overlap, measured
    expect(rec.events.indexOf('end:B')).toBeLessThan(rec.events.indexOf('end:A')) // finished out of order
    expect(committed).toEqual([
      { index: 0, id: 'A', text: 'done A' },
      { index: 1, id: 'B', text: 'done B' },
      { index: 2, id: 'C', text: 'done C' },
    ])
    // tools/result reports completion order; onResult is the commit order.
    expect(results.map((r) => r.toolCallId).indexOf('B')).toBeLessThan(results.map((r) => r.toolCallId).indexOf('A'))
  })

  it('treats an exclusive call as a barrier', async () => {
    const { root, rec, onResult } = await fixture()
    const calls = [
      call('par', { id: 'p0', ticks: 3 }),
      call('par', { id: 'p1', ticks: 1 }),
      call('ex', { id: 'X', ticks: 2 }),
      call('par', { id: 'p2' }),
      call('par', { id: 'p3' }),
    ]
    await root.tools.executeCalls(calls, { signal: new AbortController().signal, onResult })
    const at = (event: string) => rec.events.indexOf(event)
    expect(at('start:X')).toBeGreaterThan(at('end:p0'))
    expect(at('start:X')).toBeGreaterThan(at('end:p1'))
    expect(at('start:p2')).toBeGreaterThan(at('end:X'))
    expect(at('start:p1')).toBeLessThan(at('end:p0')) // the pool before the barrier did overlap
    expect(rec.events.filter((e) => e.startsWith('commit:'))).toEqual([
      'commit:0',
      'commit:1',
      'commit:2',
      'commit:3',
      'commit:4',
    ])
  })

  it('bounds the parallel pool and keeps it rolling', async () => {
    const { root, rec } = await fixture(2)
    const calls = Array.from({ length: 6 }, (_, i) => call('par', { id: `p${i}`, ticks: 1 + (i % 3) }))
    const out = await root.tools.executeCalls(calls, { signal: new AbortController().signal })
    expect(out.every((r) => !r.isError)).toBe(true)
    expect(rec.maxActive).toBe(2)
    const wide = await fixture()
    await wide.root.tools.executeCalls(calls, { signal: new AbortController().signal, concurrency: 3 })
    expect(wide.rec.maxActive).toBe(3)
    await expect(
      root.tools.executeCalls(calls, { signal: new AbortController().signal, concurrency: 0 }),
    ).rejects.toMatchObject({ code: 'INVALID_CONCURRENCY' })
  })

  it('runs policy, onDispatch and beforeBody in call order while bodies overlap', async () => {
    const { root, rec, onResult } = await fixture()
    root.on('tools/pre-execute', async (input, next) => {
      rec.events.push(`pre:${input.args.id}`)
      return next()
    })
    const onDispatch = (d: ToolDispatch) => {
      rec.events.push(`dispatch:${d.index}`)
    }
    const beforeBody = async (d: ToolDispatch) => {
      await tick()
      rec.events.push(`checkpoint:${d.index}`)
    }
    const calls = [call('par', { id: 'A', wait: 'go' }), call('par', { id: 'B', open: 'go' }), call('nope')]
    const out = await root.tools.executeCalls(calls, {
      signal: new AbortController().signal,
      onDispatch,
      beforeBody,
      onResult,
    })
    expect(out[2]?.errorCode).toBe('UNKNOWN_TOOL')
    const policy = rec.events.filter((e) => /^(pre|dispatch|checkpoint):/.test(e))
    expect(policy).toEqual(['dispatch:0', 'pre:A', 'checkpoint:0', 'dispatch:1', 'pre:B', 'checkpoint:1', 'dispatch:2'])
    expect(rec.events.indexOf('start:B')).toBeLessThan(rec.events.indexOf('end:A'))
  })

  it('on abort drains started calls with their real results and marks the rest ABORTED_BEFORE_DISPATCH', async () => {
    const { root, rec, latches, committed, onResult } = await fixture()
    const controller = new AbortController()
    const dispatched: number[] = []
    const aStarted = latch()
    const bStarted = latch()
    latches.set('A-started', aStarted).set('B-started', bStarted)
    const calls = [
      call('par', { id: 'A', untilAbort: true, open: 'A-started' }, 'A'),
      call('par', { id: 'B', untilAbort: true, open: 'B-started' }, 'B'),
      call('ex', { id: 'X' }, 'X'),
      call('par', { id: 'D' }, 'D'),
    ]
    const pending = root.tools.executeCalls(calls, {
      signal: controller.signal,
      onDispatch: (d) => {
        dispatched.push(d.index)
      },
      onResult,
    })
    await within(aStarted, 2000, 'A to start')
    await within(bStarted, 2000, 'B to start')
    controller.abort()
    const out = await pending
    expect(out.map((r) => [r.toolCallId, r.isError, r.errorCode, r.bodyInvoked])).toEqual([
      ['A', false, undefined, true],
      ['B', false, undefined, true],
      ['X', true, 'ABORTED_BEFORE_DISPATCH', false],
      ['D', true, 'ABORTED_BEFORE_DISPATCH', false],
    ])
    expect(committed.map((c) => [c.index, c.text])).toEqual([
      [0, 'partial A'],
      [1, 'partial B'],
      [2, 'Tool "ex" was not run: the request was cancelled before it started.'],
      [3, 'Tool "par" was not run: the request was cancelled before it started.'],
    ])
    expect(dispatched).toEqual([0, 1])
    expect(rec.events).not.toContain('start:X')
  })

  it('re-checks abort after the gate: a call cancelled while its policy ran never reaches its body', async () => {
    const { root, rec, committed, onResult } = await fixture()
    const controller = new AbortController()
    const dispatched: number[] = []
    root.on('tools/pre-execute', async (input, next) => {
      if (input.args.id === 'B') controller.abort() // e.g. the user cancels while an approval prompt is open
      return next()
    })
    const out = await root.tools.executeCalls(
      [call('ex', { id: 'A' }), call('ex', { id: 'B' }), call('ex', { id: 'C' })],
      { signal: controller.signal, onResult, onDispatch: (d) => void dispatched.push(d.index) },
    )
    expect(out.map((r) => [r.errorCode, r.bodyInvoked])).toEqual([
      [undefined, true],
      ['ABORTED_BEFORE_DISPATCH', false],
      ['ABORTED_BEFORE_DISPATCH', false],
    ])
    expect(dispatched).toEqual([0, 1])
    expect(committed.map((c) => c.index)).toEqual([0, 1, 2])
    expect(rec.events.filter((e) => e.startsWith('start:'))).toEqual(['start:A'])
  })

  it('on an onDispatch failure throws after draining, without results for the failed or later calls', async () => {
    const { root, rec, committed, onResult } = await fixture()
    const calls = [call('par', { id: 'A', ticks: 3 }), call('par', { id: 'B' }), call('par', { id: 'C' })]
    await expect(
      root.tools.executeCalls(calls, {
        signal: new AbortController().signal,
        onResult,
        onDispatch: (d) => {
          if (d.index === 1) throw new Error('tool/call append failed')
        },
      }),
    ).rejects.toThrow('tool/call append failed')
    expect(rec.events.filter((e) => !e.startsWith('commit:'))).toEqual(['start:A', 'end:A'])
    expect(committed.map((c) => c.index)).toEqual([0])
  })

  it('gives every call ABORTED_BEFORE_DISPATCH when already aborted', async () => {
    const { root, rec, committed, onResult } = await fixture()
    const controller = new AbortController()
    controller.abort()
    const out = await root.tools.executeCalls([call('par', { id: 'A' }), call('ex', { id: 'B' })], {
      signal: controller.signal,
      onResult,
    })
    expect(out.map((r) => r.errorCode)).toEqual(['ABORTED_BEFORE_DISPATCH', 'ABORTED_BEFORE_DISPATCH'])
    expect(committed.map((c) => c.index)).toEqual([0, 1])
    expect(rec.events.filter((e) => e.startsWith('start:'))).toEqual([])
  })

  it('on a beforeBody failure drains started calls, commits them, then throws without faking results', async () => {
    const { root, rec, latches, committed, onResult } = await fixture()
    const failure = new Error('checkpoint: disk full')
    const release = latch()
    latches.set('release', release)
    const calls = [
      call('par', { id: 'A', wait: 'release' }),
      call('par', { id: 'B', ticks: 1 }),
      call('par', { id: 'C' }),
      call('par', { id: 'D' }),
    ]
    const pending = root.tools.executeCalls(calls, {
      signal: new AbortController().signal,
      beforeBody: (d) => {
        if (d.index === 2) {
          // Fail while A is still running: the scheduler must wait for it before throwing.
          setTimeout(() => release.open(), 5)
          throw failure
        }
      },
      onResult,
    })
    await expect(pending).rejects.toBe(failure)
    expect(rec.events).toContain('end:A') // drained before the throw
    expect(rec.events).not.toContain('start:C')
    expect(committed.map((c) => c.index)).toEqual([0, 1]) // real results only; none invented for C, D
  })

  it('on an onResult failure stops committing, drains, and throws the first error', async () => {
    const { root, rec } = await fixture()
    const commits: number[] = []
    const calls = [call('par', { id: 'A' }), call('par', { id: 'B', ticks: 2 }), call('ex', { id: 'X' })]
    await expect(
      root.tools.executeCalls(calls, {
        signal: new AbortController().signal,
        onResult: (_r, index) => {
          commits.push(index)
          if (index === 0) throw new Error('log append failed')
        },
      }),
    ).rejects.toThrow('log append failed')
    expect(commits).toEqual([0])
    expect(rec.events).toContain('end:B')
    expect(rec.events).not.toContain('start:X')
  })

  it('reads the mode when it reaches a call, so a registry change takes effect at once', async () => {
    const { root, rec } = await fixture()
    let swapped = false
    const calls = [call('par', { id: 'A', ticks: 2 }), call('flip', { id: 'F' }), call('par', { id: 'C' })]
    const off = root.tools.register(probe('flip', 'parallel-safe', rec, new Map()))
    root.on('tools/pre-execute', async (input, next) => {
      if (input.args.id === 'A' && !swapped) {
        swapped = true
        off()
        root.tools.register(probe('flip', 'exclusive', rec, new Map()))
      }
      return next()
    })
    await root.tools.executeCalls(calls, { signal: new AbortController().signal })
    const at = (event: string) => rec.events.indexOf(event)
    expect(at('start:F')).toBeGreaterThan(at('end:A'))
    expect(at('start:C')).toBeGreaterThan(at('end:F'))
  })
})
