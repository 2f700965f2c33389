import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import {
  applyLayers,
  boot,
  type Layer,
  parseLayerText,
  readLayer,
  type WatchReport,
  watchConfig,
} from '../src/index.js'

const fixtures = fileURLToPath(new URL('./fixtures/', import.meta.url))
let dir: string
let log: string
let patch: string

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'dsh-watch-'))
  log = join(dir, 'log.txt')
  patch = join(dir, 'patch.yml')
})
afterEach(() => rmSync(dir, { recursive: true, force: true }))

function nextReport(reports: WatchReport[]): Promise<WatchReport> {
  const seen = reports.length
  return new Promise((resolve, reject) => {
    const started = Date.now()
    const poll = setInterval(() => {
      const report = reports[seen]
      if (report) {
        clearInterval(poll)
        resolve(report)
      } else if (Date.now() - started > 5000) {
        clearInterval(poll)
        reject(new Error('no watch report within 5 s'))
      }
    }, 10)
  })
}

describe('watchConfig', () => {
  it('applies a good edit and keeps the last good tree on a bad one', async () => {
    const base: Layer = {
      kind: 'bundle',
      label: 'bundle test',
      file: join(fixtures, 'rows.yml'),
      rows: parseLayerText(
        `- id: rec\n  use: ./recorder.mjs\n  config: { log: ${JSON.stringify(log)}, name: v1 }`,
        't',
      ),
    }
    writeFileSync(patch, '')
    const compose = () => applyLayers([base, readLayer('patch', '--patch', patch)], fixtures)
    const runtime = await boot(compose())
    const reports: WatchReport[] = []
    const stop = watchConfig({ runtime, files: [patch], compose, onReport: (r) => reports.push(r), debounceMs: 20 })

    // A good edit: the row restarts with its new config.
    let pending = nextReport(reports)
    writeFileSync(patch, `- id: rec\n  config: { log: ${JSON.stringify(log)}, name: v2 }\n`)
    expect(await pending).toEqual({ ok: true, added: ['rec'], removed: ['rec'], warnings: [] })

    // Malformed YAML: rejected, nothing restarts.
    pending = nextReport(reports)
    writeFileSync(patch, '- id: rec\n  config: [unclosed\n')
    const bad = await pending
    expect(bad.ok).toBe(false)
    expect(!bad.ok && bad.error).toMatch(/invalid YAML[\s\S]*keeping the last good configuration/)

    // A row that fails to activate: rolled back to the last good tree.
    pending = nextReport(reports)
    writeFileSync(patch, `- id: extra\n  use: ${JSON.stringify(join(fixtures, 'throws.mjs'))}\n`)
    const failed = await pending
    expect(!failed.ok && failed.error).toMatch(/extra .*plugin failed: deliberate failure[\s\S]*restored the last good/)

    expect(runtime.rowIds).toEqual(['rec'])
    await stop()
    await runtime.dispose()
    // The failing edit also reverted "rec" to its bundle config (v1); the rollback restored v2.
    const cycle = (name: string) => [`dispose ${name} registered-second`, `dispose ${name} registered-first`]
    expect(readFileSync(log, 'utf8').trim().split('\n')).toEqual([
      'apply v1',
      ...cycle('v1'),
      'apply v2',
      ...cycle('v2'),
      'apply v1',
      ...cycle('v1'),
      'apply v2',
      ...cycle('v2'),
    ])
  })
})
