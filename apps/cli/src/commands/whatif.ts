// `dsh replay ID --from N [--model X] [--preset P] [--message TEXT]` (issue 37, what-if): the session's
// conversation before message N, forked into a new session whose workspace is a scratch copy of the
// files as they were before message N (its rewind checkpoint), and message N sent again live under the
// changed model or preset. The original session and the user's workspace are not touched. Then the two
// branches side by side from message N on: requests, tokens, cost, tool calls, files changed, answer.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { rewindPoints } from '@dsh/interaction/rewind'
import { HarnessError } from '@dsh/kernel'
import { resolveSessionId } from '@dsh/session/store'
import { SessionHost, summarizeBranch } from '@dsh/surfaces/host'
import type { ComposeRequest } from '../config.js'
import { ExitCode } from '../exit-codes.js'
import type { Io } from '../io.js'
import { printable } from '../printable.js'
import { withRuntime } from '../runtime.js'
import type {} from './replay.js'

export interface WhatIfOptions {
  from: number
  model?: string
  preset?: string
  message?: string
  json?: boolean
  keep?: boolean
}

function routeOf(model: string): { provider?: string; model: string } {
  const colon = model.indexOf(':')
  return colon > 0 ? { provider: model.slice(0, colon), model: model.slice(colon + 1) } : { model }
}

export async function whatIf(request: ComposeRequest, target: string, options: WhatIfOptions, io: Io): Promise<number> {
  const scratch = mkdtempSync(join(tmpdir(), 'dsh-whatif-'))
  const workspace = join(scratch, 'workspace')
  mkdirSync(workspace)
  try {
    return await withRuntime(request, io, async ({ runtime }) => {
      const root = runtime.root
      const id = await resolveSessionId(root.sessionStore, target)
      const query = root.get('sessionQuery')
      if (!query) throw new HarnessError('CONFIG_NO_QUERY', 'the profile has no session-query row', {})
      const original = await query.read(id)
      const points = rewindPoints(original.events)
      const point = points.find((candidate) => candidate.number === options.from)
      if (!point)
        throw new HarnessError(
          'REWIND_POINT_UNKNOWN',
          `session ${id} has messages 1 to ${points.length}; --from ${options.from} is not one (dsh sessions rewind ${id.slice(0, 8)} lists them)`,
          { id, from: options.from },
        )
      const snapshots = root.get('snapshots')
      if (!point.snapshot || !snapshots)
        throw new HarnessError(
          'REWIND_NO_CHECKPOINT',
          `message ${point.number} has no workspace checkpoint, so there is no copy of the files as they were to run it on`,
          { id, from: options.from },
        )
      await snapshots.materialize(original.header.cwd, point.snapshot, workspace)
      root.sessions.defineEvent('replay/of')
      const host = new SessionHost(root, {
        name: 'dsh replay --from',
        closeReason: 'the what-if ended',
        answerApprovals: false,
        answerQuestions: false,
        log: (line) => io.err(`dsh: ${line}`),
      })
      try {
        await host.resume(id)
        const result = await host.rewind(
          id,
          { point: point.number, mode: 'conversation', cwd: workspace },
          {
            ...(options.model ? { model: routeOf(options.model) } : {}),
            ...(options.preset ? { preset: options.preset } : {}),
          },
        )
        const agent = host.agent(result.sessionId)
        // Approvals: nobody is asked; a call that needs one is refused, as in `dsh run` without --yes.
        agent.session.append(
          'replay/of',
          {
            of: id,
            tools: 'run',
            workspace: 'checkpoint',
            from: point.number,
            ...(options.model ? { model: options.model } : {}),
          },
          { ignorable: true },
        )
        io.err(`dsh: what-if from message ${point.number} in ${result.sessionId} (workspace ${workspace})`)
        agent.followup(options.message ?? point.text)
        await agent.whenIdle()
        await root.sessions.flush(agent.session)
        const originalBranch = summarizeBranch(id, original.events, point.turnSeq)
        const whatIfBranch = summarizeBranch(
          result.sessionId,
          agent.session.events,
          agent.session.header.seedLength ?? 0,
        )
        if (options.json)
          io.out(JSON.stringify({ from: point.number, original: originalBranch, whatIf: whatIfBranch }, null, 2))
        else {
          const row = (name: string, a: string, b: string) => `${name.padEnd(14)} ${a.padEnd(34)} ${b}`
          const list = (items: string[]) => (items.length === 0 ? '-' : items.join(', '))
          io.out(row('', `original ${id.slice(0, 8)}`, `what-if ${result.sessionId.slice(0, 8)}`))
          io.out(row('requests', String(originalBranch.requests), String(whatIfBranch.requests)))
          io.out(
            row(
              'tokens in/out',
              `${originalBranch.tokens.input}/${originalBranch.tokens.output}`,
              `${whatIfBranch.tokens.input}/${whatIfBranch.tokens.output}`,
            ),
          )
          io.out(row('cost', originalBranch.cost, whatIfBranch.cost))
          io.out(row('tool calls', list(originalBranch.toolCalls), list(whatIfBranch.toolCalls)))
          io.out(row('files changed', list(originalBranch.filesChanged), list(whatIfBranch.filesChanged)))
          io.out(`original answer: ${printable(originalBranch.answer.slice(0, 300))}`)
          io.out(`what-if answer:  ${printable(whatIfBranch.answer.slice(0, 300))}`)
        }
        return ExitCode.OK
      } finally {
        await host.close()
      }
    })
  } finally {
    if (options.keep) io.err(`dsh: the what-if's workspace is kept: ${workspace}`)
    else rmSync(scratch, { recursive: true, force: true })
  }
}
