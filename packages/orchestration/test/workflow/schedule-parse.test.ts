// The /schedule grammar and the fold of pending schedules (cron due times advance past each firing).
import type { AnySessionEvent } from '@dsh/session'
import { expect, it } from 'vitest'
import { parseSchedule, pendingSchedules } from '../../src/workflow/schedules.js'

const now = new Date('2026-12-02T10:00:00.000Z')

it('parses in / at / cron and refuses bad input with the usage', () => {
  expect(parseSchedule('in 10m check the build', now)).toEqual({
    kind: 'in',
    spec: '10m',
    prompt: 'check the build',
    dueAt: '2026-12-02T10:10:00.000Z',
  })
  expect(parseSchedule('at 2026-12-03T09:00:00Z "standup notes"', now).dueAt).toBe('2026-12-03T09:00:00.000Z')
  expect(parseSchedule('cron "*/15 * * * *" ping', now).dueAt).toBe('2026-12-02T10:15:00.000Z')
  expect(() => parseSchedule('in soon x', now)).toThrow(/not a delay.*usage: \/schedule/)
  expect(() => parseSchedule('at 2020-01-01T00:00:00Z x', now)).toThrow(/in the past/)
  expect(() => parseSchedule('cron "61 * * * *" x', now)).toThrow(/not a cron expression/)
  expect(() => parseSchedule('in 5m', now)).toThrow(/a time and a prompt are required/)
})

it('folds pending schedules: one-shots end when fired, cron moves to its next time, cancel removes', () => {
  let seq = 0
  const event = (type: string, data: Record<string, unknown>) =>
    ({ type, seq: seq++, time: now.toISOString(), data }) as unknown as AnySessionEvent
  const events = [
    event('schedule/set', { scheduleId: 'a', kind: 'in', spec: '1m', prompt: 'x', dueAt: '2026-12-02T10:01:00.000Z' }),
    event('schedule/set', {
      scheduleId: 'b',
      kind: 'cron',
      spec: '0 * * * *',
      prompt: 'y',
      dueAt: '2026-12-02T11:00:00.000Z',
    }),
    event('schedule/set', { scheduleId: 'c', kind: 'in', spec: '9m', prompt: 'z', dueAt: '2026-12-02T10:09:00.000Z' }),
    event('schedule/fired', {
      scheduleId: 'a',
      dueAt: '2026-12-02T10:01:00.000Z',
      firedAt: '2026-12-02T10:01:00.000Z',
    }),
    event('schedule/fired', {
      scheduleId: 'b',
      dueAt: '2026-12-02T11:00:00.000Z',
      firedAt: '2026-12-02T11:00:00.100Z',
    }),
    event('schedule/cancelled', { scheduleId: 'c' }),
  ]
  expect(pendingSchedules(events)).toEqual([
    { scheduleId: 'b', kind: 'cron', spec: '0 * * * *', prompt: 'y', dueAt: '2026-12-02T12:00:00.000Z' },
  ])
})
