// An in-process web host: the in-process dsh of @dsh/test-support with questions, commands, jobs and
// the sandbox policy, the web host row, and small HTTP / WebSocket clients that can forge headers.
import { request } from 'node:http'
import PermissionsService from '@dsh/agent/approval/permissions'
import { defineTool } from '@dsh/agent/tools'
import builtinCommands from '@dsh/interaction/builtin-commands'
import CommandsService from '@dsh/interaction/commands'
import UserQuestionsService from '@dsh/interaction/questions'
import type { ScriptedResponse } from '@dsh/llm/scripted'
import PresetsService from '@dsh/presets'
import SettingsService from '@dsh/settings'
import { startInProcess } from '@dsh/test-support/in-process'
import JobsService from '@dsh/world/jobs'
import BwrapSandbox from '@dsh/world/sandbox/bwrap'
import LocalSandboxPolicy from '@dsh/world/sandbox/policy'
import SandboxBash from '@dsh/world/shell/bash-sandbox'
import LocalSubprocess from '@dsh/world/subprocess/local'
import WebSocket from 'ws'
import type { WebHostHandle, WebListenOptions } from '../../src/web/index.js'
import WebHostService from '../../src/web/server.js'

export async function startHost(
  script: ScriptedResponse[] = [],
  listen: WebListenOptions = {},
  rows: {
    presets?: boolean
    settingsHome?: string
    sessionsDir?: string
    /** The real bubblewrap-confined bash (`ctx.shell`) with this workspace. */
    sandboxWorkspace?: string
    /** The permission rules row (`ctx.permissions`). */
    permissions?: boolean
  } = {},
) {
  const { root, adapter } = await startInProcess({
    script,
    ...(rows.sessionsDir ? { sessionsDir: rows.sessionsDir } : {}),
    before: (root) => {
      if (rows.settingsHome) root.plugin(SettingsService, { home: rows.settingsHome, cwd: rows.settingsHome, env: {} })
      if (rows.presets) root.plugin(PresetsService, { project: false, user: false })
      if (rows.permissions) root.plugin(PermissionsService)
      root.plugin(UserQuestionsService)
      root.plugin(CommandsService)
      root.plugin(JobsService)
      root.plugin(builtinCommands)
      root.plugin(LocalSandboxPolicy, {
        mode: 'workspace-write',
        ...(rows.sandboxWorkspace ? { workspaceRoot: rows.sandboxWorkspace } : {}),
      })
      if (rows.sandboxWorkspace) {
        root.plugin(LocalSubprocess)
        root.plugin(BwrapSandbox)
        root.plugin(SandboxBash, { cwd: rows.sandboxWorkspace })
      }
    },
  })
  const written: string[] = []
  root.tools.register(
    defineTool<{ text: string }>({
      name: 'note',
      description: 'Writes a note (asks first).',
      parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
      execute: (args) => {
        written.push(args.text)
        return 'noted'
      },
    }),
  )
  root.on('tools/pre-execute', async (input, next) => (input.toolName === 'note' ? { action: 'ask' } : next()))
  const fiber = root.plugin(WebHostService, { staticDir: '/nonexistent' })
  await fiber
  // The directory new sessions start in (clients send it as `cwd`; the host baseline names it too).
  const cwd = listen.cwd ?? process.cwd()
  const handle: WebHostHandle = await root.webHost.listen({ port: 0, ...listen, cwd })
  const base = `http://127.0.0.1:${handle.port}`
  // The page holds the access token (its cookie); `call` presents it as the page would.
  if (handle.token) tokens.set(base, handle.token)
  return {
    root,
    cwd,
    adapter,
    handle,
    base,
    written,
    async [Symbol.asyncDispose]() {
      await handle.close()
      await fiber.dispose()
    },
  }
}

const tokens = new Map<string, string>()

/**
 * One unary call as the page makes it: with the host's access token, unless `headers` present one
 * (or a cookie) of their own. `rawCall` sends none, as `curl` from a tool would.
 */
export function call(
  base: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const own = Object.keys(headers).some((name) => ['x-dsh-token', 'authorization', 'cookie'].includes(name))
  const token = tokens.get(base)
  return rawCall(base, method, path, body, own || !token ? headers : { ...headers, 'x-dsh-token': token })
}

/** One unary call over node:http (fetch cannot forge a Host header), with exactly these headers. */
export function rawCall(
  base: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const payload = body === undefined ? undefined : JSON.stringify(body)
  return new Promise((resolve, reject) => {
    const req = request(
      base + path,
      { method, headers: { ...(payload === undefined ? {} : { 'content-type': 'application/json' }), ...headers } },
      (res) => {
        let text = ''
        res.setEncoding('utf8').on('data', (chunk: string) => {
          text += chunk
        })
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text || '{}') }))
      },
    )
    req.on('error', reject)
    req.end(payload)
  })
}

/** A downlink stream client that records frames; `opened` rejects with the HTTP status of a refused upgrade. */
export function stream(base: string, path: string, headers: Record<string, string> = {}) {
  const frames: Array<Record<string, unknown>> = []
  const socket = new WebSocket(base.replace('http', 'ws') + path, { headers })
  const waiters: Array<() => void> = []
  socket.on('message', (data) => {
    frames.push(JSON.parse(String(data)))
    for (const wake of waiters.splice(0)) wake()
  })
  const opened = new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve())
    socket.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)))
    socket.once('error', reject)
  })
  return {
    frames,
    socket,
    opened,
    /** Resolves once `predicate` holds for the frames received so far. */
    async until(predicate: (frames: Array<Record<string, unknown>>) => boolean, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs
      while (!predicate(frames)) {
        if (Date.now() > deadline) throw new Error(`timed out; frames: ${JSON.stringify(frames).slice(0, 2000)}`)
        await new Promise<void>((resolve) => {
          waiters.push(resolve)
          setTimeout(resolve, 50)
        })
      }
    },
    close: () => socket.close(),
  }
}

export { text } from '@dsh/test-support/in-process'

/** Seqs of the events in session frames (baseline events and live events), in arrival order. */
export function seqsOf(frames: Array<Record<string, unknown>>): number[] {
  const seqs: number[] = []
  for (const frame of frames) {
    if (frame.type === 'session/baseline')
      for (const event of frame.events as Array<{ seq: number }>) seqs.push(event.seq)
    if (frame.type === 'session/event') seqs.push((frame.event as { seq: number }).seq)
  }
  return seqs
}
