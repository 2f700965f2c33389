// Integrity of JSONL session files: per-line checksums catch a changed byte that keeps the line valid
// JSON, the meta sidecar's recorded size catches a deleted last line, files written before checksums
// still load, and repair keeps every line before the damage byte for byte.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { HarnessError } from '@dsh/kernel'
import { describe, expect, it } from 'vitest'
import { JsonlBackend } from '../../src/store/jsonl.js'
import { openLine, sealLine } from '../../src/store/line-seal.js'
import { append, assistant, boot, tempDir, user } from './helpers.js'

/** `openLine` over a whole string, as the reader calls it over a file's bytes. */
const openText = (line: string) => {
  const bytes = Buffer.from(line)
  return openLine(bytes, 0, bytes.length)
}

const refused = (error: unknown) =>
  HarnessError.is(error) && ['SESSION_CORRUPT', 'SESSION_FORMAT_UNSUPPORTED'].includes(error.code)

async function written(dir: string, turns: number) {
  const ctx = await boot('jsonl', dir)
  const session = ctx.sessions.create({ id: 's' })
  for (let i = 0; i < turns; i++) {
    session.append('turn/start', {})
    session.append('user/message', { message: user(`question ${i}`) }, append)
    session.append('assistant/message', { message: assistant(`answer ${i}`) }, append)
    session.append('turn/end', { reason: 'completed' })
  }
  await ctx.sessions.flush(session)
  await ctx.sessionPersistence.close(session)
  const path = ctx.sessionStore.locate('s')
  return { ctx, session, path, original: readFileSync(path) }
}

describe('JSONL integrity', () => {
  it('seals every line: a changed byte that keeps the JSON valid is detected and named', async () => {
    using dir = tempDir()
    const { ctx, path, original } = await written(dir.path, 1)
    const text = original.toString('utf8')
    // A digit changed inside a string: still valid JSON, same shape, different content.
    const at = text.indexOf('question 0') + 'question '.length
    const damaged = Buffer.from(original)
    damaged[at] = '7'.charCodeAt(0)
    writeFileSync(path, damaged)
    const line = text.slice(0, at).split('\n').length
    await expect(ctx.sessionPersistence.resume('s')).rejects.toThrow(
      expect.objectContaining({
        code: 'SESSION_CORRUPT',
        message: expect.stringContaining(`line ${line} was changed after it was written`),
      }),
    )
    await ctx.dispose()
  })

  it('refuses every single-byte change anywhere in a sealed file', async () => {
    using dir = tempDir()
    const { ctx, path, original } = await written(dir.path, 1)
    let accepted = 0
    for (let at = 0; at < original.length; at++) {
      const damaged = Buffer.from(original)
      damaged[at] = (damaged[at] as number) ^ 0x01
      writeFileSync(path, damaged)
      try {
        const resumed = await ctx.sessionPersistence.resume('s')
        accepted++
        await ctx.sessionPersistence.close(resumed)
      } catch (error) {
        if (!refused(error)) throw error
      }
    }
    expect(accepted).toBe(0)
    await ctx.dispose()
  }, 60_000)

  it('detects a deleted last line from the size recorded when the log was last saved', async () => {
    using dir = tempDir()
    const { ctx, path, original } = await written(dir.path, 2)
    const lines = original.toString('utf8').split('\n').filter(Boolean)
    writeFileSync(path, `${lines.slice(0, -1).join('\n')}\n`)
    await expect(ctx.sessionPersistence.resume('s')).rejects.toThrow(/lines at its end were removed/)
    await ctx.dispose()
  })

  it('still loads a file written before checksums, and seals what is appended to it', async () => {
    using dir = tempDir()
    const { ctx, session, path, original } = await written(dir.path, 1)
    const plain = original
      .toString('utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => {
        const opened = openText(line)
        if ('mismatch' in opened || !opened.sealed) throw new Error('expected a sealed line')
        return opened.body
      })
    writeFileSync(path, `${plain.join('\n')}\n`)
    for (const name of readdirSync(dir.path)) if (name.endsWith('.meta.json')) writeFileSync(join(dir.path, name), '{}')
    const resumed = await ctx.sessionPersistence.resume('s')
    expect(resumed.events.map((e) => e.type)).toEqual(session.events.map((e) => e.type))
    resumed.append('turn/start', {})
    await ctx.sessions.flush(resumed)
    const last = readFileSync(path, 'utf8').trim().split('\n').at(-1) as string
    expect(openText(last)).toMatchObject({ sealed: true })
    expect(readFileSync(path, 'utf8').startsWith(`${plain.join('\n')}\n`)).toBe(true)
    await ctx.sessionPersistence.close(resumed)
    await ctx.dispose()
  })

  it('repair keeps every line before the damage byte for byte and moves the rest to a side file', async () => {
    using dir = tempDir()
    const { ctx, path, original } = await written(dir.path, 3)
    const lines = original.toString('utf8').split('\n').filter(Boolean)
    const bad = lines.findIndex((line) => line.includes('answer 1'))
    expect(bad).toBeGreaterThan(1)
    const damaged = [...lines]
    damaged[bad] = (damaged[bad] as string).replace('answer 1', 'answer 9')
    writeFileSync(path, `${damaged.join('\n')}\n`)
    await expect(ctx.sessionPersistence.resume('s')).rejects.toSatisfy(refused)
    const backend = new JsonlBackend(dir.path)
    const report = await backend.repair('s')
    expect(report).toMatchObject({ keptLines: bad, sideFile: expect.stringContaining('s.jsonl.damaged-') })
    expect(readFileSync(path, 'utf8')).toBe(`${lines.slice(0, bad).join('\n')}\n`)
    expect(readFileSync(report.sideFile as string, 'utf8')).toBe(`${damaged.slice(bad).join('\n')}\n`)
    const resumed = await ctx.sessionPersistence.resume('s')
    expect(resumed.events.slice(0, bad - 1).map((e) => e.seq)).toEqual([...Array(bad - 1).keys()])
    await ctx.sessionPersistence.close(resumed)
    await ctx.dispose()
  })

  it('sealLine round-trips through openLine', () => {
    const value = { type: 'turn/start', seq: 0, time: 1, data: { note: 'crc "quoted" ünï' } }
    const line = sealLine(value)
    expect(JSON.parse(line)).toMatchObject(value)
    expect(openText(line)).toEqual({ body: JSON.stringify(value), sealed: true })
    expect(openText(JSON.stringify(value))).toEqual({ body: JSON.stringify(value), sealed: false })
    // A line inside a larger buffer, as in a file.
    const file = Buffer.from(`x\n${line}\ny`)
    expect(openLine(file, 2, file.length - 2)).toEqual({ body: JSON.stringify(value), sealed: true })
    // One changed character (here inside a multi-byte one) no longer matches its checksum.
    expect(openText(line.replace('ü', 'ö'))).toMatchObject({
      mismatch: expect.stringMatching(/^checksum [0-9a-f]{8}, recorded [0-9a-f]{8}$/),
    })
    // A seal that is not eight lower-case hex digits is not a seal: the line is read as it is.
    const upper = line.replace(
      /"crc":"([0-9a-f]{8})"/,
      (_, hex: string) => `"crc":"${hex.toUpperCase().replace(/[0-9]/g, 'A')}"`,
    )
    expect(openText(upper)).toMatchObject({ sealed: false, body: upper })
  })
})
