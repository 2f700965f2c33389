// An editor for the ACP tests: the built CLI's `dsh acp` as a child process, driven by the ACP SDK's
// own client side (`acp.client()` over `ndJsonStream`), with the model behind the mock SSE server.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Readable, Writable } from 'node:stream'
import { fileURLToPath } from 'node:url'
import * as acp from '@agentclientprotocol/sdk'

const bin = fileURLToPath(new URL('../../../../apps/cli/bin/dsh.js', import.meta.url))

export interface Editor {
  proc: ChildProcessWithoutNullStreams
  agent: acp.ClientContext
  /** Every `session/update` by session, in arrival order (for `session/load`, which has no ActiveSession). */
  updates: Map<string, acp.SessionUpdate[]>
  permissions: acp.RequestPermissionRequest[]
  answer: (request: acp.RequestPermissionRequest) => acp.RequestPermissionResponse
  exited: Promise<number | null>
  stderr: () => string
}

/** Where the editor's agent runs: its DSH_HOME (also its cwd), the mock model's URL, a `--patch` file. */
export interface EditorSetup {
  home: string
  modelUrl: string
  patch: string
  /** More environment for the agent process (e.g. DSH_MODEL). */
  env?: Record<string, string>
}

export function editor({ home, modelUrl, patch, env }: EditorSetup): Editor {
  const proc = spawn(process.execPath, [bin, '--patch', patch, 'acp'], {
    cwd: home,
    env: { PATH: process.env.PATH, DSH_HOME: home, DEEPSEEK_API_KEY: 'sk-test', DEEPSEEK_BASE_URL: modelUrl, ...env },
  })
  let stderr = ''
  proc.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk
  })
  const exited = new Promise<number | null>((resolve) => proc.on('close', (code) => resolve(code)))
  const state: Editor = {
    proc,
    agent: undefined as unknown as acp.ClientContext,
    updates: new Map(),
    permissions: [],
    answer: () => ({ outcome: { outcome: 'selected', optionId: 'allow-once' } }),
    exited,
    stderr: () => stderr,
  }
  const app = acp
    .client()
    .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
      state.permissions.push(params)
      return state.answer(params)
    })
    .onNotification(acp.methods.client.session.update, ({ params }) => {
      const list = state.updates.get(params.sessionId) ?? []
      list.push(params.update)
      state.updates.set(params.sessionId, list)
    })
  const connection = app.connect(
    acp.ndJsonStream(
      Writable.toWeb(proc.stdin) as WritableStream<Uint8Array>,
      Readable.toWeb(proc.stdout) as ReadableStream<Uint8Array>,
    ),
  )
  state.agent = connection.agent
  return state
}

/** Reads an active session's updates up to its stop message. */
export async function untilStop(
  session: acp.ActiveSession,
): Promise<{ updates: acp.SessionUpdate[]; stopReason: string }> {
  const updates: acp.SessionUpdate[] = []
  for (;;) {
    const message = await session.nextUpdate()
    if (message.kind === 'stop') return { updates, stopReason: message.stopReason }
    updates.push(message.update)
  }
}

export async function until(check: () => boolean, timeoutMs = 45_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out waiting')
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/** The durable events of a session, as the JSONL store wrote them. */
export function durableEvents(home: string, sessionId: string): Array<{ type: string; data: Record<string, unknown> }> {
  const lines = readFileSync(join(home, 'sessions', `${sessionId}.jsonl`), 'utf8')
    .trim()
    .split('\n')
  return lines.slice(1).map((line) => JSON.parse(line))
}

/** A tool call as the mock model streams it. */
export const call = (id: string, name: string, args: Record<string, unknown>) => ({
  id,
  name,
  arguments: JSON.stringify(args),
})
