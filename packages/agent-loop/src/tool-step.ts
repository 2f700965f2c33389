// The tool half of a step: hands the model's calls to the scheduler of `ctx.tools` and turns its
// hooks into durable facts. `tool/call` is appended when a call is taken up (so a call the log never
// recorded never started), `tool/result` strictly in the model's call order, and the checkpoint
// barrier runs before each top-level tool body.

import { toToolResultMessage } from '@dsh/agent/tools'
import type { ToolCallBlock } from '@dsh/llm'
import type { TurnDeps } from './driver.js'
import { turnServices } from './services.js'

const APPEND = { op: 'append' } as const

export async function runToolCalls(deps: TurnDeps, calls: ToolCallBlock[], signal: AbortSignal): Promise<void> {
  const { agent, root } = deps
  const session = agent.session
  const callSeqs = new Map<string, number>()
  const context: string[] = []
  await turnServices(root)
    .tools()
    .executeCalls(calls, {
      signal,
      agentId: agent.id,
      restrictions: agent.toolRestrictions,
      ...(agent.preset === undefined ? {} : { preset: agent.preset }),
      sessionId: session.id,
      onDispatch: (dispatch) => {
        callSeqs.set(dispatch.call.id, session.append('tool/call', { call: dispatch.call }).seq)
      },
      beforeBody: (dispatch) =>
        turnServices(root)
          .sessions()
          .checkpoint(session, 'tool-body', dispatch.call.name, { readOnly: dispatch.readOnly }),
      onResult: (result) => {
        const seq = callSeqs.get(result.toolCallId)
        const data = result.errorCode
          ? { message: toToolResultMessage(result), code: result.errorCode }
          : { message: toToolResultMessage(result) }
        session.append(
          'tool/result',
          data,
          seq === undefined ? { surfaceOp: APPEND } : { surfaceOp: APPEND, sourceEventSeqs: [seq] },
        )
        context.push(...result.additionalContext)
      },
    })
  // Context a tool added reaches the model as input of the next step, logged like any other input.
  for (const text of context) agent.send(text, { target: 'next-step', wake: false })
}
