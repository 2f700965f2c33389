// Crash safety, for every store provider: children append agent turns with periodic flushes and are
// killed with SIGKILL at random moments. Every reopen must be a valid log holding every acknowledged
// event, and the cold resume repair must leave no call without a result. The children run the built
// dist (test/fixtures/crash-writer.mjs), so callers skip when it is missing.
import { type ChildProcess, spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { eventData } from '@dsh/session'
import { expect } from 'vitest'
import { type Booted, boot, type StoreFixture } from '../helpers.js'

const writer = fileURLToPath(new URL('../fixtures/crash-writer.mjs', import.meta.url))

interface Run {
  acked: number
  hash: string
  ready: boolean
}

function runAndKill(
  fixture: StoreFixture,
  dir: string,
  id: string,
  mode: string,
  seed: number,
  delayMs: number,
): Promise<Run> {
  return new Promise((resolve, reject) => {
    const args = [writer, dir, id, mode, String(seed), fixture.module, JSON.stringify(fixture.config(dir))]
    const child: ChildProcess = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] })
    const run: Run = { acked: -1, hash: '', ready: false }
    let buffer = ''
    let stderr = ''
    child.stdout?.on('data', (chunk: Buffer) => {
      buffer += chunk.toString()
      let newline = buffer.indexOf('\n')
      while (newline >= 0) {
        const [word, count, hash] = buffer.slice(0, newline).split(' ')
        buffer = buffer.slice(newline + 1)
        if (word === 'READY') {
          run.ready = true
          setTimeout(() => child.kill('SIGKILL'), delayMs)
        } else if (word === 'ACK') {
          run.acked = Number(count)
          run.hash = hash ?? ''
        }
        newline = buffer.indexOf('\n')
      }
    })
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString()
    })
    child.on('error', reject)
    child.on('close', (code, signal) => {
      if (signal !== 'SIGKILL') reject(new Error(`writer exited with ${code}: ${stderr}`))
      else resolve(run)
    })
  })
}

function hashOf(records: unknown[]): string {
  const hash = createHash('sha256')
  for (const record of records) hash.update(`${JSON.stringify(record)}\n`)
  return hash.digest('hex')
}

export interface CrashReport {
  kills: number
  repaired: number
  torn: number
  events: number
}

/**
 * Runs `sessions` sessions spread over `fixtures` (round robin), each created then resumed `rounds`
 * times by a child killed after a random delay of up to `maxDelayMs` once it is ready; asserts what
 * every reopen finds.
 */
export async function crashRounds(
  root: string,
  fixtures: StoreFixture[],
  sessions: number,
  rounds: number,
  maxDelayMs = 100,
): Promise<CrashReport> {
  const stores: { fixture: StoreFixture; dir: string; ctx: Booted }[] = []
  for (const fixture of fixtures) {
    const dir = join(root, fixture.name)
    mkdirSync(dir)
    stores.push({ fixture, dir, ctx: await boot(fixture, dir) })
  }
  const report: CrashReport = { kills: 0, repaired: 0, torn: 0, events: 0 }
  await Promise.all(
    Array.from({ length: sessions }, async (_, s) => {
      const id = `crash-${s}`
      const { fixture, dir, ctx } = stores[s % stores.length] as (typeof stores)[number]
      for (let round = 0; round < rounds; round++) {
        const delay = Math.floor(Math.random() * maxDelayMs)
        const mode = round === 0 ? 'create' : 'resume'
        const run = await runAndKill(fixture, dir, id, mode, s * 1000 + round + 1, delay)
        expect(run.ready).toBe(true)
        report.kills++
        // The raw log as the crash left it: a valid prefix (plus at most a torn final line).
        const stored = await ctx.sessionStore.read(id)
        if (!stored) throw new Error(`${id} vanished`)
        if (stored.torn) report.torn++
        if (round === rounds - 1) report.events += stored.records.length
        const raw = ctx.sessions.build(stored.header, stored.records, stored.location, id)
        if (run.acked >= 0) {
          expect(raw.length).toBeGreaterThanOrEqual(run.acked)
          expect(hashOf(stored.records.slice(0, run.acked))).toBe(run.hash)
        }
        // Cold resume: repair, commit, re-read; then nothing is left open.
        const session = await ctx.sessionPersistence.resume(id)
        if (session.length > raw.length) report.repaired++
        expect(session.isClosed()).toBe(true)
        const results = new Set(eventData(session.events, 'tool/result').map((result) => result.message.toolCallId))
        for (const event of session.events) {
          if (event.type === 'tool/call') expect(results.has(event.data.call.id)).toBe(true)
        }
        expect(session.events.slice(0, raw.length)).toEqual(raw.events)
        await ctx.sessionPersistence.close(session)
      }
    }),
  )
  for (const { ctx } of stores) await ctx.dispose()
  return report
}
