// Crash safety: children append agent turns with periodic flushes and are killed with SIGKILL at
// random moments. Every reopen must be a valid log holding every acknowledged event, and the cold
// resume repair must leave no call without a result. Runs against the built dist (see fixtures).
import { type ChildProcess, spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { eventData } from '@dsh/session'
import { describe, expect, it } from 'vitest'
import { type Backend, boot, tempDir } from './helpers.js'

const writer = fileURLToPath(new URL('./fixtures/crash-writer.mjs', import.meta.url))
const dist = fileURLToPath(new URL('../dist/coordinator.js', import.meta.url))

interface Run {
  acked: number
  hash: string
  ready: boolean
}

function runAndKill(
  backend: Backend,
  dir: string,
  id: string,
  mode: string,
  seed: number,
  delayMs: number,
): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child: ChildProcess = spawn(process.execPath, [writer, dir, id, mode, String(seed), backend], {
      stdio: ['ignore', 'pipe', 'pipe'],
    })
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

describe.skipIf(!existsSync(dist))('crash safety (SIGKILL)', () => {
  it('loses no acknowledged event and leaves no call without a result across 50 kills on both backends', async () => {
    using dir = tempDir()
    const backends: Backend[] = ['jsonl', 'sqlite']
    const roots = Object.fromEntries(backends.map((backend) => [backend, join(dir.path, backend)]))
    for (const root of Object.values(roots)) mkdirSync(root)
    const contexts = {
      jsonl: await boot('jsonl', roots.jsonl as string),
      sqlite: await boot('sqlite', roots.sqlite as string),
    }
    const sessions = 10
    const rounds = 5
    let kills = 0
    let repaired = 0
    let torn = 0
    let events = 0
    await Promise.all(
      Array.from({ length: sessions }, async (_, s) => {
        const id = `crash-${s}`
        const backend = backends[s % 2] as Backend
        const ctx = contexts[backend]
        for (let round = 0; round < rounds; round++) {
          const delay = Math.floor(Math.random() * 100)
          const mode = round === 0 ? 'create' : 'resume'
          const run = await runAndKill(backend, roots[backend] as string, id, mode, s * 1000 + round + 1, delay)
          expect(run.ready).toBe(true)
          kills++
          // The raw log as the crash left it: a valid prefix (plus at most a torn final line).
          const stored = await ctx.sessionStore.read(id)
          if (!stored) throw new Error(`${id} vanished`)
          if (stored.torn) torn++
          if (round === rounds - 1) events += stored.records.length
          const raw = ctx.sessions.build(stored.header, stored.records, stored.location, id)
          if (run.acked >= 0) {
            expect(raw.length).toBeGreaterThanOrEqual(run.acked)
            expect(hashOf(stored.records.slice(0, run.acked))).toBe(run.hash)
          }
          // Cold resume: repair, commit, re-read; then nothing is left open.
          const session = await ctx.sessionPersistence.resume(id)
          if (session.length > raw.length) repaired++
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
    expect(kills).toBeGreaterThanOrEqual(50)
    expect(repaired).toBeGreaterThan(0)
    console.info(
      `crash test: ${kills} kills, ${repaired} repairs, ${torn} torn tails, ${events} events in the final logs`,
    )
    await contexts.jsonl.dispose()
    await contexts.sqlite.dispose()
  }, 180_000)
})
