// The settings page's API on an in-process host with the settings and presets rows: a setting written
// through it lands in the user file (checked first, nothing written when invalid) and applies to the
// next session; `/api/models` lists the routed providers and the default model.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type {} from '@dsh/session/store-pg/select'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { call, startHost } from './harness.js'

let home: string
beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'dsh-web-settings-api-'))
})
afterEach(() => rmSync(home, { recursive: true, force: true }))

describe('the settings API', () => {
  it('writes the default preset to the user file, and the next session takes it', async () => {
    await using host = await startHost([], {}, { presets: true, settingsHome: home })
    const before = await call(host.base, 'GET', '/api/settings')
    expect((before.body.settings as Array<{ key: string }>).find((row) => row.key === 'preset')).toMatchObject({
      value: 'code',
      source: 'default',
      env: 'DSH_PRESET',
    })
    const set = await call(host.base, 'PUT', '/api/settings/values/preset', { value: 'plan' })
    expect(set).toMatchObject({ status: 200, body: { key: 'preset', value: 'plan', source: 'user' } })
    expect(readFileSync(join(home, 'settings.yaml'), 'utf8')).toBe('preset: plan\n')
    const created = await call(host.base, 'POST', '/api/sessions', { cwd: host.cwd })
    expect(created.body.preset).toBe('plan')
    const baseline = await call(host.base, 'DELETE', '/api/settings/values/preset')
    expect(baseline.body).toEqual({ removed: true })
    expect((await call(host.base, 'POST', '/api/sessions', { cwd: host.cwd })).body.preset).toBe('code')
  })

  it('refuses an invalid value with the allowed ones and writes nothing', async () => {
    await using host = await startHost([], {}, { presets: true, settingsHome: home })
    const refused = await call(host.base, 'PUT', '/api/settings/values/preset', { value: 'Not A Name' })
    expect(refused.status).toBe(400)
    expect(refused.body.error).toMatchObject({ code: 'CONFIG_SETTINGS_INVALID' })
    expect(JSON.stringify(refused.body.error)).toContain('allowed: a preset name')
    const unknown = await call(host.base, 'PUT', '/api/settings/values/nosuch', { value: 1 })
    expect(unknown.body.error).toMatchObject({ code: 'CONFIG_SETTING_UNKNOWN' })
    expect(() => readFileSync(join(home, 'settings.yaml'), 'utf8')).toThrow()
  })

  it('lists the providers with the default model', async () => {
    await using host = await startHost([], {}, { settingsHome: home })
    const models = await call(host.base, 'GET', '/api/models')
    expect(models.status).toBe(200)
    const providers = models.body.providers as Array<{ provider: string; configured: boolean }>
    expect(providers.map((row) => row.provider)).toContain('scripted')
    expect(models.body.current).toMatch(/^scripted:/)
  })
})

describe('the settings API and passwords inside URLs', () => {
  it('masks the PostgreSQL password of session.store in GET /api/settings', async () => {
    await using host = await startHost([], {}, { settingsHome: home })
    // The row that declares it (session-store-select) would connect at start; declared here alone.
    host.root.settings.define('session.store', { schema: { type: 'string' }, default: 'jsonl', description: 'store' })
    writeFileSync(join(home, 'settings.yaml'), 'session.store: postgres://bob:hunter2@db.lan:5432/dsh\n')
    const view = await call(host.base, 'GET', '/api/settings')
    expect(JSON.stringify(view.body)).not.toContain('hunter2')
    const row = (view.body.settings as Array<{ key: string; value: unknown }>).find((r) => r.key === 'session.store')
    expect(row?.value).toBe('postgres://bob:***@db.lan:5432/dsh')
  })
})
