// The README's commands that run offline and cheaply, taken from its ```sh blocks as written and run
// against the built CLI in a temp DSH_HOME (from the checkout's root, where the README's relative paths
// point). A listed command that is no longer in the README fails the test, so the list cannot go stale
// silently; a command that is in the README must work as written.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, expect, it } from 'vitest'
import { runDsh } from './dsh-child.js'

const checkout = fileURLToPath(new URL('../../..', import.meta.url))
const home = mkdtempSync(join(tmpdir(), 'dsh-readme-'))
afterAll(() => rmSync(home, { recursive: true, force: true }))

/** Every `dsh ...` command line of the README's sh blocks, comments and `npx ` dropped. */
function readmeCommands(): string[] {
  const readme = readFileSync(join(checkout, 'README.md'), 'utf8')
  const blocks = [...readme.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((match) => match[1] as string)
  return blocks
    .flatMap((block) => block.split('\n'))
    .map((line) => line.replace(/\s+#.*$/, '').trim())
    .filter((line) => /^(npx )?dsh( |$)/.test(line))
    .map((line) => line.replace(/^npx /, ''))
}

/** The offline, cheap ones, in the order they run (the plugin lines build on each other). */
const RUNNABLE = [
  'dsh --help',
  'dsh sessions',
  'dsh agents',
  'dsh worktrees',
  'dsh models',
  'dsh config list',
  'dsh --profile headless --dump-config',
  'dsh --profile web --dump-default-config',
  'dsh plugin add ./examples/plugin-hello',
  'dsh plugin ls',
  'dsh --dump-config',
  'dsh plugin rm dsh-plugin-hello',
]

/** npm as the user has it, but never the network: the plugin comes from this checkout. */
const npmEnv = { HOME: process.env.HOME, npm_config_offline: 'true', npm_config_update_notifier: 'false' }

it("runs the README's offline commands as written", async () => {
  const commands = readmeCommands()
  for (const command of RUNNABLE) expect(commands, `the README no longer has \`${command}\``).toContain(command)
  const outputs: Record<string, string> = {}
  for (const command of RUNNABLE) {
    const args = command.split(' ').slice(1)
    const run = await runDsh(args, { home, cwd: checkout, env: npmEnv })
    expect(run.code, `${command}\n${run.stderr}`).toBe(0)
    outputs[command] = run.stdout
  }
  expect(outputs['dsh --help']).toContain('Exit codes:')
  expect(outputs['dsh plugin add ./examples/plugin-hello']).toContain('installed dsh-plugin-hello@1.0.0')
  expect(outputs['dsh plugin ls']).toContain('dsh-plugin-hello@1.0.0  enabled')
  expect(outputs['dsh --dump-config']).toContain('# from bundle dsh-plugin-hello (named by home patch)')
  expect(readFileSync(join(home, 'patch.yml'), 'utf8')).not.toContain('dsh-plugin-hello')
}, 300_000)
