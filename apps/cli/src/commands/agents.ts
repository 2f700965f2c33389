// `dsh agents [ls|stop]`: the view of every running agent (`listAgents` of the session host, the same
// the web's agents panel and `/agents` show), as a table or JSON, and a stop for one of this machine.
import { agentLines, agentNamed, listAgents, stopAgent } from '@dsh/surfaces/host'
import type { ComposeRequest } from '../config.js'
import { ExitCode } from '../exit-codes.js'
import type { Io } from '../io.js'
import { printable } from '../printable.js'
import { withRuntime } from '../runtime.js'

export async function agentsList(request: ComposeRequest, options: { json?: boolean }, io: Io): Promise<number> {
  return withRuntime(request, io, async ({ runtime }) => {
    const rows = await listAgents(runtime.root)
    if (options.json) {
      io.out(JSON.stringify(rows, null, 2))
      return ExitCode.OK
    }
    if (rows.length === 0) {
      io.err('dsh: no agent is running (dsh run --bg "<task>" starts one in the background)')
      return ExitCode.OK
    }
    for (const line of agentLines(rows, Date.now())) io.out(printable(line))
    io.err('dsh: dsh sessions show ID prints a transcript; dsh agents stop ID stops a running one')
    return ExitCode.OK
  })
}

/** Stops a running session of this machine: SIGTERM to its owner, which cancels and saves it. */
export async function agentsStop(request: ComposeRequest, id: string, io: Io): Promise<number> {
  return withRuntime(request, io, async ({ runtime }) => {
    const row = agentNamed(await listAgents(runtime.root), id)
    const { pid } = stopAgent(row)
    io.err(`dsh: asked ${row.sessionId} (pid ${pid}) to stop; it cancels its turn and saves the session`)
    return ExitCode.OK
  })
}
