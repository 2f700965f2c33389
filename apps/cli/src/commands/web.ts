// `dsh web`: boot the web profile, ask `ctx.webHost` to listen, print where (the URL carries the
// access token the page trades for a cookie; printed alone too when bound beyond loopback), serve
// until SIGINT/SIGTERM, then close the host and the tree.
import { spawn } from 'node:child_process'
import { HarnessError } from '@dsh/kernel'
import type {} from '@dsh/surfaces/web'
import type { ComposeRequest } from '../config.js'
import { ExitCode } from '../exit-codes.js'
import { checkFolderTrust } from '../folder-trust.js'
import type { Io } from '../io.js'
import { withRuntime } from '../runtime.js'
import { armStopGrace } from '../stop-grace.js'

export interface WebOptions {
  host: string
  port: number
  trustedHost?: string[]
  open?: boolean
}

export async function web(request: ComposeRequest, options: WebOptions, io: Io): Promise<number> {
  await checkFolderTrust(request, io, { folders: [request.cwd ?? process.cwd()] })
  return withRuntime(
    request,
    io,
    async ({ runtime }) => {
      const host = runtime.root.get('webHost')
      if (!host) {
        throw new HarnessError(
          'CONFIG_NO_SERVER',
          'the profile has no web-host (@dsh/surfaces/web/server) row; use --profile web',
          {
            surface: 'web',
          },
        )
      }
      const handle = await host.listen({
        host: options.host,
        port: options.port,
        trustedHosts: options.trustedHost ?? [],
        log: (line) => io.err(`dsh web: ${line}`),
      })
      io.out(`dsh web: listening on ${handle.url}`)
      if (handle.tokenForReads) {
        io.out(`dsh web: bound beyond loopback; the access token (shown once) is ${handle.token}`)
      }
      if (options.open) openBrowser(handle.url, io)
      const code = await io.untilSignal()
      // Closing the host and disposing the tree cancel the running turns; a tool body that ignores
      // that cannot hold the process past the grace (which then exits with the signal's code).
      const grace = armStopGrace(runtime.root, io, code)
      try {
        await handle.close()
      } finally {
        grace.release()
      }
      return code === ExitCode.SIGTERM || code === ExitCode.SIGINT ? ExitCode.OK : code
    },
    { watch: true },
  )
}

function openBrowser(url: string, io: Io): void {
  const command = process.platform === 'darwin' ? 'open' : process.platform === 'win32' ? 'explorer' : 'xdg-open'
  const child = spawn(command, [url], { stdio: 'ignore', detached: true })
  child.on('error', () => io.err(`dsh web: could not start ${command}; open ${url} yourself`))
  child.unref()
}
