// `dsh demo`: a newcomer's first run with no key and no network. Copies the shipped sample project to
// a temp dir and replays a recorded session (demo/session.jsonl, recorded with the scripted model by
// scripts/record-demo.mjs) through the real pipeline: real tool calls edit real files, then the demo
// runs the project's tests itself to show the fix is real.
import { spawnSync } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { type Context, HarnessError } from '@dsh/kernel'
import type { SessionEvent } from '@dsh/session'
import type {} from '@dsh/surfaces/headless'
import { removeSessions } from '@dsh/surfaces/host'
import type { ComposeRequest } from '../config.js'
import { ExitCode } from '../exit-codes.js'
import type { Io } from '../io.js'
import { withRuntime } from '../runtime.js'

const demoDir = fileURLToPath(new URL('../../demo/', import.meta.url))

function describe(event: SessionEvent): string | undefined {
  if (event.type === 'assistant/message') {
    const content = event.data.message.content
    const text = content.flatMap((block) => (block.type === 'text' && block.text ? [block.text] : [])).join(' ')
    return text ? `model: ${text}` : undefined
  }
  if (event.type === 'tool/call') {
    const call = event.data.call
    const detail = call.arguments.command ?? call.arguments.path ?? ''
    return `  tool: ${call.name} ${String(detail)}`
  }
  if (event.type === 'tool/result') {
    const data = event.data
    const first =
      (data.message.content.find((block) => block.type === 'text')?.text ?? '')
        .split('\n')
        .find((line) => line.trim()) ?? ''
    return `  ${data.message.isError ? 'error' : 'result'}: ${first.length > 100 ? `${first.slice(0, 97)}...` : first}`
  }
  return undefined
}

export async function demo(request: ComposeRequest, io: Io): Promise<number> {
  const script = JSON.parse(readFileSync(join(demoDir, 'script.json'), 'utf8')) as { task: string }
  const temp = mkdtempSync(join(tmpdir(), 'dsh-demo-'))
  const project = join(temp, 'project')
  // What the tools and the language servers they start put in a temp dir goes under this one too.
  mkdirSync(join(temp, 'tmp'))
  process.env.TMPDIR = join(temp, 'tmp')
  cpSync(join(demoDir, 'sample-project'), project, { recursive: true })
  io.err('dsh demo: replaying a recorded session (demo/session.jsonl) through the real pipeline: no API key,')
  io.err('no network. The model turns are a recording; the tool calls really run, on a copy of a small project:')
  io.err(`  ${project} (removed when the demo ends, with the demo's session)`)
  io.err(`task: ${script.task}`)
  const composeRequest: ComposeRequest = {
    ...request,
    launcherRows: [
      {
        id: 'llm-replay',
        use: '@dsh/llm/replay',
        config: { providers: ['replay'], file: join(demoDir, 'session.jsonl') },
      },
    ],
  }
  try {
    return await withRuntime(composeRequest, io, ({ runtime }) => replay(runtime.root, script.task, project, io))
  } finally {
    rmSync(temp, { recursive: true, force: true })
  }
}

async function replay(root: Context, task: string, project: string, io: Io): Promise<number> {
  const headless = root.get('headless')
  if (!headless)
    throw new HarnessError('CONFIG_NO_RUNNER', 'the profile has no headless runner row (headless-runner)', {})
  const result = await headless.run({
    task,
    cwd: project,
    model: { provider: 'replay', model: 'recording' },
    // A throwaway copy: run unconfined so the demo works where bubblewrap is not installed.
    permissionMode: 'danger-full-access',
    yes: true,
    onEvent: (event) => {
      const line = describe(event)
      if (line) io.err(line)
    },
  })
  io.out(result.text)
  const tests = spawnSync(process.execPath, ['test.js'], { cwd: project, encoding: 'utf8' })
  io.err(`\ndsh demo: re-running the project's tests to check the result (node test.js in ${project}):`)
  io.err(tests.stdout.trimEnd())
  // A replay is not the user's work: it leaves no session in `dsh sessions`.
  if (result.durable) await removeSessions(root, [result.sessionId])
  if (result.reason !== 'completed' || tests.status !== 0) {
    io.err(`dsh demo: the replay ended ${result.reason} and the tests ${tests.status === 0 ? 'pass' : 'still fail'}`)
    return ExitCode.TURN_ERROR
  }
  io.err('dsh demo: the tests pass. Now give dsh a task of your own: dsh run "<task>" (or plain dsh for the chat)')
  return ExitCode.OK
}
