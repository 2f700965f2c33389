// The user's status line (issue 33) in a real pseudo-terminal: `statusline.command` in settings.yaml
// gets the session's state as JSON on stdin and its first line is shown above the footer, refreshed
// after each answer; a command that hangs is stopped and the footer says so instead of stalling.
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { completionResponse } from '@dsh/test-support'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { type Fixture, fixture } from './pty.js'

let f: Fixture
beforeEach(async () => {
  f = await fixture()
})
afterEach(async () => {
  await f.close()
})

it('shows the command first line and passes the session state as JSON', async () => {
  const script = join(f.home, 'statusline.sh')
  const seen = join(f.home, 'seen.json')
  // Keeps what it read, then prints a line made from it (a second line is not shown).
  writeFileSync(
    script,
    `#!/bin/bash\ninput=$(cat)\nprintf '%s' "$input" > ${seen}\nmodel=$(printf '%s' "$input" | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const j=JSON.parse(s);process.stdout.write(j.model.display_name+" in "+j.workspace.current_dir.split("/").pop())})')\necho "[SL] $model"\necho second line\n`,
    { mode: 0o755 },
  )
  writeFileSync(join(f.home, 'settings.yaml'), `statusline.command: ${script}\n`)
  f.server.enqueue(completionResponse({ text: 'Hello there.' }))
  const screen = f.open(['say', 'hi'], { cols: 160 })
  await screen.waitFor('Hello there.')
  await screen.waitFor('[SL] deepseek-v4-pro in work')
  expect(screen.text()).not.toContain('second line')
  const input = JSON.parse(readFileSync(seen, 'utf8'))
  expect(input).toMatchObject({
    hook_event_name: 'Status',
    model: { id: 'deepseek-v4-pro', provider: 'deepseek' },
    workspace: { current_dir: f.work },
    preset: 'code',
    mode: 'workspace-write',
  })
  expect(typeof input.session_id).toBe('string')
  screen.type('\x04')
  expect(await screen.exited).toBe(0)
})

it('a command that hangs is stopped after statusline.timeoutMs and the footer says so', async () => {
  writeFileSync(join(f.home, 'settings.yaml'), 'statusline.command: sleep 30\nstatusline.timeoutMs: 300\n')
  const screen = f.open([], { cols: 160 })
  await screen.waitFor('status line: the status line command took longer than 300 ms')
  await screen.waitFor(/preset code/)
  screen.type('\x04')
  expect(await screen.exited).toBe(0)
})
