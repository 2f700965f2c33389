// npm, run in the plugin directory ($DSH_HOME): the one installer, so a plugin's own dependencies
// come from the user's registry and cache exactly as for any npm project. Peer dependencies are
// never installed by npm here (`legacy-peer-deps`): dsh links its own `@dsh/*` packages (host.ts).
import { spawn } from 'node:child_process'
import { HarnessError } from '@dsh/kernel'

export interface NpmFailure {
  failed: true
  code: number | null
  /** npm's own error lines (`npm error ...`), the rest of its output dropped. */
  lines: string[]
}

const FLAGS = ['--no-audit', '--no-fund', '--loglevel=error', '--legacy-peer-deps']

export interface NpmSuccess {
  failed: false
  stdout: string
}

/**
 * Runs `npm ...args --prefix dir`; resolves with its stdout on success, the failure otherwise. Package
 * scripts never run unless `scripts` says so (`dsh plugin add --allow-scripts`): they are code of a
 * plugin's author, and of every package it depends on.
 */
export function npm(
  args: string[],
  dir: string,
  env: NodeJS.ProcessEnv,
  options: { scripts?: boolean } = {},
): Promise<NpmSuccess | NpmFailure> {
  const flags = options.scripts ? FLAGS : [...FLAGS, '--ignore-scripts']
  return new Promise((resolve, reject) => {
    const proc = spawn('npm', [...args, '--prefix', dir, ...flags], {
      cwd: dir,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    proc.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk
    })
    let stderr = ''
    proc.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk
    })
    proc.on('error', (error: NodeJS.ErrnoException) =>
      reject(
        error.code === 'ENOENT'
          ? new HarnessError(
              'PLUGIN_NPM_MISSING',
              'npm is not on PATH: dsh plugin installs plugins with npm (it comes with Node.js)',
              {},
            )
          : error,
      ),
    )
    proc.on('close', (code) => {
      if (code === 0) return resolve({ failed: false, stdout })
      const lines = stderr
        .split('\n')
        .filter((line) => /^npm (error|ERR!)/.test(line) && !/A complete log of this run/.test(line))
        .map((line) => line.replace(/^npm (error|ERR!) ?/, ''))
        .filter((line) => line.trim() !== '')
      resolve({ failed: true, code, lines: lines.length > 0 ? lines : stderr.trim().split('\n').slice(-5) })
    })
  })
}
