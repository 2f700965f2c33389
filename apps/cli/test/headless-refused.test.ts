// A headless `dsh run` cannot ask anyone: the calls it refused for that are said on stderr with how to
// allow them, and listed in the `--output json` summary, instead of a silent exit 0.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { eventData } from '@dsh/session'
import { completionResponse, startMockLlmServer } from '@dsh/test-support'
import { afterEach, expect, it } from 'vitest'
import { durableEvents, runDsh } from './dsh-child.js'

let home: string
afterEach(() => rmSync(home, { recursive: true, force: true }))

it('names each refused call and the ways to allow it, on stderr and in the json summary', async () => {
  home = mkdtempSync(join(tmpdir(), 'dsh-refused-'))
  writeFileSync(join(home, 'settings.yaml'), 'permissions:\n  ask: ["Bash(npm test:*)"]\n')
  await using model = await startMockLlmServer()
  model.enqueue(
    completionResponse({ toolCalls: [{ id: 'c1', name: 'bash', arguments: JSON.stringify({ command: 'npm test' }) }] }),
    completionResponse({ text: 'could not run the tests' }),
  )
  const run = await runDsh(['run', '--output', 'json', 'run the tests'], { home, modelUrl: model.url })
  expect(run.code, run.stderr).toBe(0)
  expect(run.stderr).toMatch(/^dsh: 1 call needed approval and nobody could give it \(headless\), so it was refused:$/m)
  expect(run.stderr).toMatch(/^dsh: {3}bash: .*npm test.*rule ask Bash\(npm test:\*\)/m)
  expect(run.stderr).toContain('rerun with --yes')
  expect(run.stderr).toContain('--permission-mode')
  expect(run.stderr).toMatch(/permissions: \{ allow: \["Bash\(npm test:\*\)"\] \}/)
  const summary = JSON.parse(run.stdout)
  expect(summary.reason).toBe('completed')
  expect(summary.refused).toEqual([
    expect.objectContaining({
      tool: 'bash',
      summary: expect.stringContaining('npm test'),
      reason: expect.stringContaining('rule ask Bash(npm test:*)'),
    }),
  ])
  // The log agrees: the question was put and answered "unavailable" by the headless answerer.
  expect(eventData(durableEvents(home), 'approval/decided').map((decided) => decided.decision)).toEqual(['unavailable'])

  // With --yes nothing is refused and nothing is said about it.
  model.enqueue(
    completionResponse({ toolCalls: [{ id: 'c2', name: 'bash', arguments: JSON.stringify({ command: 'npm test' }) }] }),
    completionResponse({ text: 'ran them' }),
  )
  const allowed = await runDsh(['run', '--yes', '--output', 'json', 'run the tests'], { home, modelUrl: model.url })
  expect(allowed.code, allowed.stderr).toBe(0)
  expect(allowed.stderr).not.toContain('nobody could give it')
  expect(JSON.parse(allowed.stdout).refused).toBeUndefined()
})
