// Before a session command boots: a folder whose configuration could run code or reach the network
// and is not trusted (or changed since) gets it inert, and the user hears so. The terminal chat asks;
// every other command says what did not load and how to trust it (`dsh trust`, or `--trust` once).

import { resolve } from 'node:path'
import { createInterface } from 'node:readline'
import { dshHome } from '@dsh/composition'
import { FolderTrust } from '@dsh/settings/trust'
import { describeItems } from './commands/trust.js'
import type { ComposeRequest } from './config.js'
import type { Io } from './io.js'

export interface FolderTrustCheck {
  /** The folders whose configuration this command reads (the launcher's cwd and a `--cwd`). */
  folders: string[]
  /** Ask on the terminal (the chat, before its screen opens). */
  ask?: { input: NodeJS.ReadableStream; output: NodeJS.WritableStream }
}

export async function checkFolderTrust(request: ComposeRequest, io: Io, check: FolderTrustCheck): Promise<void> {
  if (request.options.trust) return
  const store = new FolderTrust(dshHome(request.env ?? process.env))
  const damaged = store.damaged
  if (damaged) io.err(`dsh: ${damaged}; until then no folder counts as trusted`)
  for (const folder of [...new Set(check.folders.map((dir) => resolve(dir)))]) {
    const pending = store.pending(folder)
    if (pending.length === 0) continue
    const lines = [
      `dsh: ${folder} has configuration that can run code or reach the network, and you have not trusted it${store.record(folder) ? ' as it is now' : ''}:`,
      ...describeItems(pending),
    ]
    if (check.ask) {
      for (const line of lines) io.err(line)
      const answer = await askLine(check.ask, 'Trust this folder and load it? [y/N] ')
      if (/^y(es)?$/i.test(answer.trim())) {
        try {
          store.grant(folder)
          io.err(`dsh: trusted ${folder} (dsh trust --revoke undoes it)`)
        } catch (error) {
          io.err(`dsh: cannot record the trust: ${(error as Error).message}`)
        }
        continue
      }
      io.err('dsh: not trusted: it stays inert in this session (run `dsh trust` to load it later)')
      continue
    }
    for (const line of lines) io.err(line)
    io.err('dsh: none of it loads; review it, then run `dsh trust` (or pass --trust to load it for this run only)')
  }
}

export function askLine(ask: NonNullable<FolderTrustCheck['ask']>, prompt: string): Promise<string> {
  const rl = createInterface({ input: ask.input, output: ask.output, terminal: false })
  return new Promise((done) => {
    let answered = false
    rl.question(prompt, (answer) => {
      answered = true
      rl.close()
      done(answer)
    })
    rl.on('close', () => {
      if (!answered) done('')
    })
  })
}
