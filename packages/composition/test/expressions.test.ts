import { HarnessError } from '@dsh/kernel'
import { describe, expect, it } from 'vitest'
import { ConfigExpr, evaluateConfig } from '../src/index.js'

const scope = { env: { HOME_DIR: '/home/u', EMPTY: '' }, platform: 'linux' }

describe('config expressions', () => {
  it('evaluates env lookups, defaults and platform tests deep inside config', () => {
    const config = {
      dir: new ConfigExpr('env', 'HOME_DIR'),
      fallback: new ConfigExpr('env', 'NOT_SET:/tmp/default'),
      emptyDefault: new ConfigExpr('env', 'NOT_SET:'),
      setButEmpty: new ConfigExpr('env', 'EMPTY:ignored'),
      list: [new ConfigExpr('platform', 'linux'), new ConfigExpr('platform', 'win32,darwin')],
      plain: { n: 1 },
    }
    expect(evaluateConfig(config, scope, 'row "r" config')).toEqual({
      dir: '/home/u',
      fallback: '/tmp/default',
      emptyDefault: '',
      setButEmpty: '',
      list: [true, false],
      plain: { n: 1 },
    })
  })

  it('fails with CONFIG_ENV_MISSING naming the variable, the place and the fix', () => {
    let error: unknown
    try {
      evaluateConfig({ nested: { key: new ConfigExpr('env', 'MY_SECRET') } }, scope, 'row "llm" config')
    } catch (caught) {
      error = caught
    }
    expect(HarnessError.is(error, 'CONFIG_ENV_MISSING')).toBe(true)
    expect((error as HarnessError).facts).toEqual({ variable: 'MY_SECRET', where: 'row "llm" config.nested.key' })
    expect((error as Error).message).toBe(
      'row "llm" config.nested.key: environment variable MY_SECRET is not set; set it, or give a default with !env MY_SECRET:value',
    )
  })
})
