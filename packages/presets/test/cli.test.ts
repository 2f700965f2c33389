// `dsh presets ls|show` from the built CLI: the shipped presets and a project one, and the effective
// configuration of `code` and `plan` with the provenance of each part.
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, expect, it } from 'vitest'

const bin = fileURLToPath(new URL('../../../apps/cli/bin/dsh.js', import.meta.url))
const homes: string[] = []
afterEach(() => {
  for (const home of homes.splice(0)) rmSync(home, { recursive: true, force: true })
})

function dsh(cwd: string, args: string[]) {
  const proc = spawn(process.execPath, [bin, ...args], {
    cwd,
    env: { PATH: process.env.PATH, DSH_HOME: join(cwd, 'home') },
  })
  let stdout = ''
  let stderr = ''
  proc.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk
  })
  proc.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk
  })
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    proc.on('close', (code) => resolve({ code, stdout, stderr })),
  )
}

it('lists the presets this directory sees and shows one with where each part came from', async () => {
  const cwd = mkdtempSync(join(tmpdir(), 'dsh-presets-cli-'))
  homes.push(cwd)
  mkdirSync(join(cwd, '.dsh', 'presets', 'review'), { recursive: true })
  writeFileSync(
    join(cwd, '.dsh', 'presets', 'review', 'preset.yml'),
    'description: Reviews.\nmodel: deepseek:deepseek-v4-flash\ntools: { deny: ["job_*", bash] }\n',
  )
  const [listed, code, review, missing] = await Promise.all([
    dsh(cwd, ['presets', 'ls', '--json']),
    dsh(cwd, ['presets', 'show', 'code']),
    dsh(cwd, ['presets', 'show', 'review', '--json']),
    dsh(cwd, ['presets', 'show', 'nope']),
  ])
  expect(listed.code).toBe(0)
  const rows = (JSON.parse(listed.stdout) as { presets: Array<{ name: string; origin: string; default: boolean }> })
    .presets
  expect(rows.map((row) => `${row.name}:${row.origin}${row.default ? ':default' : ''}`)).toEqual([
    'ask:shipped',
    'code:shipped:default',
    'minimal:shipped',
    'plan:shipped',
    'review:project',
  ])

  expect(code.code).toBe(0)
  const lines = code.stdout.split('\n')
  expect(lines[0]).toMatch(/^preset: code {2}# shipped: .*shipped\/code$/)
  expect(lines).toContain('model: deepseek:deepseek-v4-pro  # global: agent-loop row (profile)')
  expect(lines).toContain('permissionMode: workspace-write  # global: sandbox-policy row (profile)')
  expect(lines).toContain('tools:  # global: tool rows (profile)')
  expect(lines).toContain('  - base  # global: system prompt rows (profile)')
  expect(lines.find((line) => line.startsWith('  offered: '))).toMatch(/\bbash\b.*\bwrite\b/)

  expect(review.code).toBe(0)
  const file = join(cwd, '.dsh', 'presets', 'review', 'preset.yml')
  const described = JSON.parse(review.stdout)
  expect(described.model).toEqual({ value: 'deepseek:deepseek-v4-flash', from: 'preset', where: file })
  expect(described.tools.from).toBe('preset')
  expect(described.tools.value.hidden).toEqual(['bash', 'job_kill', 'job_list', 'job_output'])
  expect(described.permissionMode.from).toBe('global')

  expect(missing.code).not.toBe(0)
  expect(missing.stderr).toContain('no preset "nope"; available: ask, code, minimal, plan, review')
})
