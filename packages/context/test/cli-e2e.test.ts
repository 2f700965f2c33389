// The context rows in the product: the built `dsh run` (headless profile, every base row) against the
// mock server, with the token meter's window patched small. Repeated reads of a large file must be
// pruned and compacted, and the run must complete with every raw result in the durable log.
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { completionResponse, type RecordedRequest, startMockLlmServer } from '@dsh/test-support'
import { expect, it } from 'vitest'

const bin = fileURLToPath(new URL('../../../apps/cli/bin/dsh.js', import.meta.url))
const READS = 10

type Body = { messages: Array<{ role: string; content?: string | null }> }
const isSummary = (request: RecordedRequest) =>
  (request.body as Body).messages[0]?.content?.startsWith('You compact the history') === true

it('dsh run prunes and compacts a long read-heavy task under a small window', async () => {
  const home = mkdtempSync(join(tmpdir(), 'dsh-ctx-e2e-'))
  try {
    const line = 'the quick brown fox jumps over the lazy dog, again and again.'
    writeFileSync(join(home, 'big.txt'), `${Array.from({ length: 300 }, (_, i) => `${i} ${line}`).join('\n')}\n`)
    writeFileSync(
      join(home, 'small-window.yml'),
      '- id: token-meter\n  use: "@dsh/context/meter"\n  config: { contextWindow: 15000 }\n',
    )
    // A user skill in $DSH_HOME/skills: its catalog line must reach the system prompt.
    mkdirSync(join(home, 'skills', 'tidy'), { recursive: true })
    writeFileSync(
      join(home, 'skills', 'tidy', 'SKILL.md'),
      '---\nname: tidy\ndescription: Tidy a file.\n---\nSort it.\n',
    )
    let reads = 0
    await using server = await startMockLlmServer({
      respond: (request) => {
        if (isSummary(request)) return completionResponse({ text: `The agent read big.txt ${reads} times.` })
        reads++
        return reads <= READS
          ? completionResponse({
              toolCalls: [{ id: `call_${reads}`, name: 'read', arguments: JSON.stringify({ path: 'big.txt' }) }],
            })
          : completionResponse({ text: 'Read it all.' })
      },
    })
    const proc = spawn(
      process.execPath,
      [bin, '--patch', join(home, 'small-window.yml'), 'run', 'read big.txt ten times'],
      {
        cwd: home,
        env: { PATH: process.env.PATH, DSH_HOME: home, DEEPSEEK_API_KEY: 'sk-test', DEEPSEEK_BASE_URL: server.url },
      },
    )
    let stdout = ''
    let stderr = ''
    proc.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk
    })
    proc.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk
    })
    const code = await new Promise<number | null>((resolve) => proc.on('close', resolve))
    expect(stderr).toBe('')
    expect(code).toBe(0)
    expect(stdout).toBe('Read it all.\n')

    const file = readdirSync(join(home, 'sessions')).find((name) => name.endsWith('.jsonl')) as string
    const events = readFileSync(join(home, 'sessions', file), 'utf8')
      .trim()
      .split('\n')
      .slice(1)
      .map((text) => JSON.parse(text) as { type: string; data: Record<string, unknown>; surfaceOp?: { op: string } })
    const raw = events.filter((e) => e.type === 'tool/result' && e.surfaceOp?.op === 'append')
    const replaced = events.filter((e) => e.type === 'tool/result' && e.surfaceOp?.op === 'replace')
    expect(raw).toHaveLength(READS)
    expect(replaced.length).toBeGreaterThan(0)
    const ends = events.filter((e) => e.type === 'compaction/end')
    expect(ends.length).toBeGreaterThan(0)
    expect(ends.every((e) => e.data.ok === true && e.data.trigger === 'threshold')).toBe(true)
    expect(server.requests.filter(isSummary)).toHaveLength(ends.length)
    // After the first compaction, requests shrink: the last one is far smaller than the largest.
    const sizes = server.requests.filter((r) => !isSummary(r)).map((r) => r.rawBody.length)
    expect(sizes.at(-1) as number).toBeLessThan(Math.max(...sizes))
    expect(events.at(-1)).toMatchObject({ type: 'turn/end', data: { reason: 'completed' } })
    expect((server.requests[0]?.body as Body | undefined)?.messages[0]?.content).toContain('- tidy: Tidy a file.')
  } finally {
    rmSync(home, { recursive: true, force: true })
  }
}, 60_000)
