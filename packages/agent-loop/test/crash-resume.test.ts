// Kill during a tool body, resume from the durable log, and check the model's next request: the
// call the process died in is closed with TOOL_OUTCOME_UNKNOWN, never retried blindly.
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { dataOf, startInProcess, text } from '@dsh/test-support/in-process'
import { expect, it } from 'vitest'

const child = fileURLToPath(new URL('./fixtures/crash-child.mjs', import.meta.url))

it('resumes after SIGKILL in a tool body and shows TOOL_OUTCOME_UNKNOWN to the model', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'dsh-crash-'))
  const marker = join(dir, 'in-tool-body')
  try {
    const proc = spawn(process.execPath, [child, dir, marker], { stdio: ['ignore', 'ignore', 'pipe'] })
    let stderr = ''
    proc.stderr.on('data', (chunk) => {
      stderr += chunk
    })
    const started = Date.now()
    while (!existsSync(marker)) {
      if (proc.exitCode !== null || Date.now() - started > 15_000)
        throw new Error(`child never reached the tool body:\n${stderr}`)
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    const id = readFileSync(marker, 'utf8')
    const exited = proc.exitCode === null ? new Promise((resolve) => proc.once('exit', resolve)) : Promise.resolve()
    proc.kill('SIGKILL')
    await exited

    const { root, adapter } = await startInProcess({
      cwd: dir,
      sessionsDir: dir,
      approval: false,
      script: [text('I will check whether the deploy happened before retrying.')],
    })

    const session = await root.sessionPersistence.resume(id)
    const results = dataOf(session, 'tool/result')
    expect(results.map((r) => [r.message.toolCallId, r.code])).toEqual([['call_deploy', 'TOOL_OUTCOME_UNKNOWN']])
    expect(dataOf(session, 'turn/end').map((d) => (d as { reason: string }).reason)).toEqual(['interrupted'])

    const agent = await root.agents.create({ session })
    agent.followup('did it deploy?')
    await agent.whenIdle()
    const request = adapter.dispatches[0]?.request.messages ?? []
    expect(request.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'user'])
    const toolMessage = request[2] as { toolCallId: string; isError: boolean; content: Array<{ text: string }> }
    expect(toolMessage.toolCallId).toBe('call_deploy')
    expect(toolMessage.isError).toBe(true)
    expect(toolMessage.content[0]?.text).toMatch(/TOOL_OUTCOME_UNKNOWN/)
    expect(dataOf(session, 'turn/end').map((d) => (d as { reason: string }).reason)).toEqual([
      'interrupted',
      'completed',
    ])
    root.invariants.assert()
    await agent.dispose()
    await root.sessions.flush()
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

/** Starts the crash child at barrier `kind`, kills it with SIGKILL once it got there; the session id. */
async function killAt(dir: string, kind: string): Promise<string> {
  const marker = join(dir, `at-${kind}`)
  const proc = spawn(process.execPath, [child, dir, marker, kind], { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  proc.stderr.on('data', (chunk) => {
    stderr += chunk
  })
  const started = Date.now()
  while (!existsSync(marker)) {
    if (proc.exitCode !== null || Date.now() - started > 15_000)
      throw new Error(`child never reached ${kind}:\n${stderr}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  const id = readFileSync(marker, 'utf8')
  const exited = proc.exitCode === null ? new Promise((resolve) => proc.once('exit', resolve)) : Promise.resolve()
  proc.kill('SIGKILL')
  await exited
  return id
}

// One kill at each barrier kind of the checkpoint policy (issue 35): the barriers that only write
// (model dispatch) or do nothing (a read-only tool's body) still leave a log that resumes cleanly,
// closes what was open and goes on; the turn-end sync leaves the completed turn as it was.
it.each([
  ['dispatch', ['interrupted'], []],
  ['read-only', ['interrupted'], [['call_deploy', 'TOOL_OUTCOME_UNKNOWN']]],
  ['turn-end', ['completed'], []],
] as const)(
  'a SIGKILL at the %s barrier resumes cleanly',
  async (kind, reasons, results) => {
    const dir = mkdtempSync(join(tmpdir(), `dsh-crash-${kind}-`))
    try {
      const id = await killAt(dir, kind)
      const { root, adapter } = await startInProcess({
        cwd: dir,
        sessionsDir: dir,
        approval: false,
        script: [text('carrying on')],
      })
      const session = await root.sessionPersistence.resume(id)
      expect(dataOf(session, 'user/message').map((m) => m.message.content)).toEqual([
        [{ type: 'text', text: 'deploy to prod' }],
      ])
      if (kind === 'dispatch') expect(dataOf(session, 'request/header')).toHaveLength(1)
      expect(dataOf(session, 'tool/result').map((r) => [r.message.toolCallId, r.code])).toEqual(results)
      expect(dataOf(session, 'turn/end').map((d) => d.reason)).toEqual(reasons)
      const agent = await root.agents.create({ session })
      agent.followup('go on')
      await agent.whenIdle()
      expect(adapter.dispatches).toHaveLength(1)
      expect(dataOf(session, 'turn/end').map((d) => d.reason)).toEqual([...reasons, 'completed'])
      root.invariants.assert()
      await agent.dispose()
      await root.sessions.flush()
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  },
  30_000,
)
