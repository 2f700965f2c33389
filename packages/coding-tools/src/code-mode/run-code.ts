// @dsh/coding-tools/code-mode/run-code: the `run_code` tool. The model's program runs in a worker thread inside a
// bare `node:vm` context (worker-source.ts); each `tools.x(args)` it awaits is posted here and run by
// `ctx.tools.executeCall` in the caller's session and agent scope, so validation, pre-execute policy,
// guards, approval and post-processing apply exactly as to a direct call. Each inner call is logged
// as `tool/nested-call` / `tool/nested-result` with the parent's call id before and after it runs.
// Budgets: the whole run's time (the worker is terminated) and the number of inner calls.

import { readFileSync } from 'node:fs'
import { Worker } from 'node:worker_threads'
import { defineTool, type ToolCallContext, ToolError, toToolResultMessage } from '@dsh/agent/tools'
import { type Context, HarnessError } from '@dsh/kernel'
import type { Session } from '@dsh/session'
import { CODE_MODE_EVENTS } from './index.js'
import { WORKER_SOURCE } from './worker-source.js'

export const name = 'code-mode'
export const inject = ['tools', 'sessions']

export interface RunCodeConfig {
  /** Default and maximum time of one run. Defaults 60000 and 300000. */
  timeoutMs?: number
  maxTimeoutMs?: number
  /** Default and maximum inner tool calls of one run. Defaults 50 and 200. */
  maxCalls?: number
  maxCallsLimit?: number
  /** Tools a program may not call (besides run_code itself). */
  deny?: string[]
  /** Bytes of console output kept. Default 20000. */
  maxLogBytes?: number
  /**
   * Characters of the program's result kept; the rest is cut in the worker, before it reaches this
   * thread (larger kept results still spill as every tool result does). Default 1000000.
   */
  maxResultChars?: number
}

type WorkerMessage =
  | { type: 'call'; id: number; name: string; args: string }
  | { type: 'log'; text: string; cut: boolean }
  | { type: 'done'; ok: boolean; text: string }

const textOf = (content: readonly { type: string; text?: string }[]) =>
  content.map((block) => (block.type === 'text' ? block.text : `[${block.type}]`)).join('\n')

function positive(value: unknown, where: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    throw new HarnessError('INVALID_CODE_MODE_CONFIG', `code-mode: ${where} must be an integer >= 1`, { where })
  }
  return value
}

export function apply(ctx: Context, config: RunCodeConfig = {}): void {
  const timeoutMs = positive(config?.timeoutMs ?? 60_000, 'timeoutMs')
  const maxTimeoutMs = positive(config?.maxTimeoutMs ?? 300_000, 'maxTimeoutMs')
  const maxCalls = positive(config?.maxCalls ?? 50, 'maxCalls')
  const maxCallsLimit = positive(config?.maxCallsLimit ?? 200, 'maxCallsLimit')
  const maxLogBytes = positive(config?.maxLogBytes ?? 20_000, 'maxLogBytes')
  const maxResultChars = positive(config?.maxResultChars ?? 1_000_000, 'maxResultChars')
  const denied = new Set(['run_code', ...(config?.deny ?? [])])
  ctx.sessions.defineEvent(...CODE_MODE_EVENTS)

  const runCode = defineTool<{ code: string; timeout_ms?: number; max_calls?: number }>({
    name: 'run_code',
    description: readFileSync(new URL('../../descriptions/code-mode/run_code.md', import.meta.url), 'utf8').trim(),
    parameters: {
      type: 'object',
      properties: {
        code: { type: 'string', description: 'The body of an async function; `return` the result.' },
        timeout_ms: { type: 'integer', minimum: 100, maximum: maxTimeoutMs, description: `Default ${timeoutMs}.` },
        max_calls: { type: 'integer', minimum: 1, maximum: maxCallsLimit, description: `Default ${maxCalls}.` },
      },
      required: ['code'],
      additionalProperties: false,
    },
    presentation: (args) => ({ kind: 'terminal', title: 'Run code', command: args.code }),
    execute: (args, call) => run(args, call),
  })
  ctx.tools.register(runCode)

  async function run(args: { code: string; timeout_ms?: number; max_calls?: number }, call: ToolCallContext) {
    const session: Session | undefined = call.sessionId === undefined ? undefined : ctx.sessions.get(call.sessionId)
    const scope = { ...(call.agentId === undefined ? {} : { agentId: call.agentId }) }
    const names = ctx.tools
      .tools(scope)
      .map((tool) => tool.name)
      .filter((tool) => !denied.has(tool))
    const budget = args.max_calls ?? maxCalls
    const limit = args.timeout_ms ?? timeoutMs
    const logs: string[] = []
    let logBytes = 0
    let logCut = false
    let calls = 0
    // Inner calls run one at a time, in the order the program makes them; a stopped run cancels them.
    let queue: Promise<unknown> = Promise.resolve()
    const cancel = new AbortController()
    const follow = () => cancel.abort(call.signal.reason)
    call.signal.addEventListener('abort', follow, { once: true })

    const inner = async (toolName: string, argsText: string): Promise<string> => {
      if (cancel.signal.aborted) throw new Error('run_code has stopped')
      if (++calls > budget) throw new Error(`call budget exhausted: at most ${budget} tool calls per run_code run`)
      const id = `${call.callId}.${calls}`
      const parsed: unknown = JSON.parse(argsText)
      const block = { type: 'tool-call' as const, id, name: toolName, arguments: parsed as Record<string, unknown> }
      const nested = session?.append(
        'tool/nested-call',
        { call: block, parentCallId: call.callId },
        { ignorable: true },
      )
      const result = await ctx.tools.executeCall(block, {
        signal: cancel.signal,
        ...scope,
        ...(call.sessionId === undefined ? {} : { sessionId: call.sessionId }),
      })
      const message = toToolResultMessage(result)
      session?.append(
        'tool/nested-result',
        { message, ...(result.errorCode ? { code: result.errorCode } : {}), parentCallId: call.callId },
        { ignorable: true, ...(nested ? { sourceEventSeqs: [nested.seq] } : {}) },
      )
      return JSON.stringify({ isError: result.isError, text: textOf(result.content) })
    }

    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { code: args.code, tools: names, syncTimeoutMs: limit, maxLogChars: maxLogBytes, maxResultChars },
      resourceLimits: { maxOldGenerationSizeMb: 128 },
      env: {},
      stdout: true,
      stderr: true,
    })
    const outcome = await new Promise<{ ok: boolean; text: string }>((resolve) => {
      const stop = (ok: boolean, text: string) => {
        clearTimeout(timer)
        call.signal.removeEventListener('abort', onAbort)
        if (!ok) cancel.abort(new Error(text))
        void worker.terminate()
        resolve({ ok, text })
      }
      const timer = setTimeout(() => stop(false, `run_code stopped: the program ran past its ${limit} ms limit`), limit)
      const onAbort = () => stop(false, 'run_code was cancelled')
      call.signal.addEventListener('abort', onAbort, { once: true })
      worker.on('message', (message: WorkerMessage) => {
        if (message.type === 'log') {
          logBytes += Buffer.byteLength(message.text)
          if (message.cut) logCut = true
          if (logBytes <= maxLogBytes) logs.push(message.text)
          else logCut = true
        } else if (message.type === 'done') stop(message.ok, message.text)
        else {
          queue = queue.then(() =>
            inner(message.name, message.args).then(
              (text) => worker.postMessage({ id: message.id, ok: true, text }),
              (error: unknown) =>
                worker.postMessage({
                  id: message.id,
                  ok: false,
                  error: error instanceof Error ? error.message : String(error),
                }),
            ),
          )
        }
      })
      worker.on('error', (error) => stop(false, `run_code failed: ${error.message}`))
      worker.on('exit', () => stop(false, 'run_code stopped: the program ended without a result'))
    })
    await queue
    call.signal.removeEventListener('abort', follow)
    const made = Math.min(calls, budget)
    const parts = [
      ...(logs.length ? [`[console]\n${logs.join('\n')}${logCut ? '\n[console output cut]' : ''}`] : []),
      ...(outcome.text ? [outcome.ok ? outcome.text : `[error] ${outcome.text}`] : []),
      `[run_code: ${made} tool call${made === 1 ? '' : 's'}]`,
    ]
    if (!outcome.ok) throw new ToolError(parts.join('\n'), 'RUN_CODE_FAILED')
    return parts.join('\n')
  }
}

export default { name, inject, apply }
