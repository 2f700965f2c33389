// The example GitHub Actions workflows (issue 39) are valid for the Actions workflow schema (checked by
// action-validator, the schema GitHub's own editor uses), and every dsh command and flag they run exists:
// each is looked up in the built CLI's own help.
import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { validateWorkflow } from '@action-validator/core'
import { describe, expect, it } from 'vitest'

const dir = fileURLToPath(new URL('../examples/github-actions/', import.meta.url))
const bin = fileURLToPath(new URL('../apps/cli/bin/dsh.js', import.meta.url))
const workflows = readdirSync(dir).filter((name) => name.endsWith('.yml'))
const help = (command: string) =>
  execFileSync(process.execPath, [bin, command, '--help'], { encoding: 'utf8', env: { PATH: process.env.PATH } })

describe('examples/github-actions', () => {
  it('has the two workflows', () => expect(workflows.sort()).toEqual(['dsh-fix-issue.yml', 'dsh-review.yml']))

  it.each(workflows)('%s is a valid workflow', (name) => {
    expect(validateWorkflow(readFileSync(join(dir, name), 'utf8')).errors).toEqual([])
  })

  it('the validator does catch a broken workflow', () => {
    expect(validateWorkflow('on: push\njobs:\n  a:\n    runs-on: x\n    stepz: []\n').errors).not.toEqual([])
  })

  it.each(workflows)('%s runs only dsh commands and flags that exist', (name) => {
    const text = readFileSync(join(dir, name), 'utf8').replace(/>-\n\s+|\n\s{10,}/g, ' ')
    const runs = [...text.matchAll(/dsh (?:--trust )?(run|review)\b([^\n]*)/g)]
    expect(runs.length).toBeGreaterThan(0)
    for (const [, command, rest] of runs) {
      const flags = [...(rest ?? '').matchAll(/(?<=\s)--[a-z-]+/g)].map((match) => match[0])
      const text = help(command as string)
      for (const flag of flags) expect(text, `dsh ${command} ${flag}`).toContain(flag)
    }
  })
})
