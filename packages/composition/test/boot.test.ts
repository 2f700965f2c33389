import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { FiberState, HarnessError } from '@dsh/kernel'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { type AuditEntry, applyLayers, boot, dumpTree, type Layer, parseLayerText, TreeRuntime } from '../src/index.js'

const fixtures = fileURLToPath(new URL('./fixtures/', import.meta.url))
let dir: string
let log: string

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'dsh-boot-'))
  log = join(dir, 'log.txt')
})
afterEach(() => rmSync(dir, { recursive: true, force: true }))

const lines = (): string[] => readFileSync(log, 'utf8').trim().split('\n')
const layer = (text: string): Layer => ({
  kind: 'bundle',
  label: 'bundle test',
  file: join(fixtures, 'rows.yml'),
  rows: parseLayerText(text, 'test'),
})

async function bootFailure(text: string): Promise<{ error: HarnessError; audit: AuditEntry[] }> {
  try {
    await boot(applyLayers([layer(text)], fixtures))
  } catch (error) {
    if (!HarnessError.is(error, 'BOOT_FAILED')) throw error
    return { error, audit: error.facts.audit as unknown as AuditEntry[] }
  }
  throw new Error('boot unexpectedly succeeded')
}

describe('boot', () => {
  it('activates rows whatever their order: inject decides, not the list', async () => {
    const tree = applyLayers(
      [
        layer(`
- id: consumer
  use: ./greeter-consumer.mjs
  config: { log: ${JSON.stringify(log)} }
- id: greeter
  use: ./greeter.mjs
  config: { greeting: bonjour }
`),
      ],
      fixtures,
    )
    const runtime = await boot(tree)
    expect(lines()).toEqual(['bonjour'])
    expect(runtime.rowIds).toEqual(['consumer', 'greeter'])
    expect(runtime.fiberOf('consumer')?.state).toBe(FiberState.ACTIVE)
    await runtime.dispose()
  })

  it('the audit names a row pending on a missing service, and the row that should have provided it', async () => {
    const { error, audit } = await bootFailure(`
- id: needy
  use: ./needs-missing.mjs
- id: consumer
  use: ./greeter-consumer.mjs
  config: { log: ${JSON.stringify(log)} }
- id: greeter
  use: ./greeter.mjs
  disabled: true
`)
    expect(audit).toEqual([
      {
        id: 'needy',
        use: './needs-missing.mjs',
        kind: 'pending',
        missing: ['nowhereService'],
        message: 'waiting for service nowhereService (no row provides it)',
      },
      {
        id: 'consumer',
        use: './greeter-consumer.mjs',
        kind: 'pending',
        missing: ['greeter'],
        message: 'waiting for service greeter (no row provides it)',
      },
    ])
    expect(error.message).toContain('needy (./needs-missing.mjs): pending: waiting for service nowhereService')
  })

  it('the audit lists failed plugins, failed imports, non-plugins and config errors', async () => {
    const { audit } = await bootFailure(`
- id: thrower
  use: ./throws.mjs
- id: ghost
  use: ./does-not-exist.mjs
- id: number
  use: ./not-a-plugin.mjs
- id: env
  use: ./greeter.mjs
  config: { greeting: !env DSH_TEST_SURELY_UNSET_VARIABLE }
`)
    expect(audit.map((entry) => [entry.id, entry.kind])).toEqual([
      ['thrower', 'failed'],
      ['ghost', 'import'],
      ['number', 'import'],
      ['env', 'config'],
    ])
    expect(audit[0]?.message).toBe('deliberate failure in plugin body')
    expect(audit[1]?.message).toMatch(/does-not-exist\.mjs/)
    expect(audit[2]?.message).toBe('module "./not-a-plugin.mjs" has no default export that is a Cordis plugin')
    expect(audit[3]?.message).toMatch(/DSH_TEST_SURELY_UNSET_VARIABLE is not set/)
  })

  it('disposes what was built when boot fails: rows in reverse order, disposers reversed within an effect', async () => {
    await bootFailure(`
- id: first
  use: ./recorder.mjs
  config: { log: ${JSON.stringify(log)}, name: first }
- id: second
  use: ./recorder.mjs
  config: { log: ${JSON.stringify(log)}, name: second }
- id: needy
  use: ./needs-missing.mjs
`)
    expect(lines()).toEqual([
      'apply first',
      'apply second',
      'dispose second registered-second',
      'dispose second registered-first',
      'dispose first registered-second',
      'dispose first registered-first',
    ])
  })

  it('boots exactly the tree that --dump-config prints', async () => {
    const tree = applyLayers(
      [
        layer(`
- id: greeter
  use: ./greeter.mjs
  config: { greeting: hi }
- id: rec
  use: ./recorder.mjs
  config: { log: ${JSON.stringify(log)}, name: rec }
- id: off
  use: ./throws.mjs
  disabled: true
`),
        {
          kind: 'patch',
          label: '--patch p.yml',
          file: join(fixtures, 'p.yml'),
          rows: parseLayerText('- id: greeter\n  config: { greeting: yo }', 'p'),
        },
      ],
      fixtures,
    )
    const dumped = parseLayerText(dumpTree(tree), 'dump')
    expect(dumped).toEqual(
      tree.rows.map((row) => ({
        id: row.id,
        use: row.use,
        ...(row.config === undefined ? {} : { config: row.config }),
        ...(row.disabled === false ? {} : { disabled: row.disabled }),
      })),
    )
    // Re-applying the dump as a single layer gives the same rows, and boot runs the enabled ones.
    const redone = applyLayers(
      [{ kind: 'patch', label: 'dump', file: join(fixtures, 'dump.yml'), rows: dumped }],
      fixtures,
    )
    expect(redone.rows.map(({ id, use, config, disabled }) => ({ id, use, config, disabled }))).toEqual(
      tree.rows.map(({ id, use, config, disabled }) => ({ id, use, config, disabled })),
    )
    const runtime = await boot(tree)
    expect(runtime.rowIds).toEqual(['greeter', 'rec'])
    await runtime.dispose()
  })

  it('reconfigures through apply(): only changed rows restart', async () => {
    const runtime = new TreeRuntime()
    const rows = (name: string) =>
      applyLayers(
        [
          layer(`
- id: a
  use: ./recorder.mjs
  config: { log: ${JSON.stringify(log)}, name: a }
- id: b
  use: ./recorder.mjs
  config: { log: ${JSON.stringify(log)}, name: ${name} }
`),
        ],
        fixtures,
      )
    await runtime.apply(rows('b1'))
    const report = await runtime.apply(rows('b2'))
    expect(report).toEqual({ added: ['b'], removed: ['b'] })
    expect(lines()).toEqual([
      'apply a',
      'apply b1',
      'dispose b1 registered-second',
      'dispose b1 registered-first',
      'apply b2',
    ])
    await runtime.dispose()
  })
})
