// `dsh rpc` and `dsh acp`: boot the surface's profile, serve its protocol on stdin/stdout until the
// client shuts down or closes stdin (or a signal arrives), then dispose the tree. stdout carries the
// protocol only: console output is sent to stderr for the life of the command.
import { type Context, HarnessError } from '@dsh/kernel'
import type {} from '@dsh/surfaces/acp'
import type {} from '@dsh/surfaces/rpc'
import type { ComposeRequest } from '../config.js'
import { ExitCode } from '../exit-codes.js'
import { checkFolderTrust } from '../folder-trust.js'
import type { Io } from '../io.js'
import { withRuntime } from '../runtime.js'
import { armStopGrace } from '../stop-grace.js'

type Surface = 'rpc' | 'acp'

const ROWS: Record<Surface, string> = {
  rpc: 'rpc-server (@dsh/surfaces/rpc/server)',
  acp: 'acp-agent (@dsh/surfaces/acp/agent)',
}

/** Keeps stray console output of plugins off the protocol stream. Returns the restore function. */
function consoleToStderr(): () => void {
  const saved = { log: console.log, info: console.info, debug: console.debug }
  const toStderr = (...args: unknown[]) => console.error(...args)
  console.log = toStderr
  console.info = toStderr
  console.debug = toStderr
  return () => Object.assign(console, saved)
}

export async function serve(surface: Surface, request: ComposeRequest, io: Io): Promise<number> {
  const env = request.env ?? process.env
  // The surface's own profile is the default (compose otherwise falls back to headless).
  const options = { ...request.options, profile: request.options.profile ?? env.DSH_PROFILE ?? surface }
  const restoreConsole = consoleToStderr()
  try {
    await checkFolderTrust(request, io, { folders: [request.cwd ?? process.cwd()] })
    return await withRuntime({ ...request, options }, io, ({ runtime }) => serveOn(surface, runtime.root, io), {
      watch: true,
    })
  } finally {
    restoreConsole()
    process.stdin.pause()
  }
}

async function serveOn(surface: Surface, root: Context, io: Io): Promise<number> {
  let signalCode: number | undefined
  const server = root.get(surface)
  if (!server) {
    throw new HarnessError('CONFIG_NO_SERVER', `the profile has no ${ROWS[surface]} row; use --profile ${surface}`, {
      surface,
    })
  }
  const connection = server.serve({
    input: process.stdin,
    output: process.stdout,
    log: (line) => io.err(`dsh ${surface}: ${line}`),
  })
  let grace: { release(): void } | undefined
  const stopSignals = io.onSignal((signal) => {
    if (signalCode !== undefined) io.forceExit(signalCode)
    signalCode = signal === 'SIGTERM' ? ExitCode.SIGTERM : ExitCode.SIGINT
    // Closing the connection and disposing the tree cancel the running turns; a tool body that
    // ignores that cannot hold the process past the grace.
    grace = armStopGrace(root, io, signalCode)
    void connection.close()
  })
  try {
    await connection.closed
  } finally {
    grace?.release()
    stopSignals()
  }
  return signalCode ?? ExitCode.OK
}
