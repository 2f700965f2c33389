// Containment: every process tree started here must die with dsh, even when dsh is SIGKILLed and
// even when a descendant ignores SIGTERM or leaves the process group with `setsid`. The reliable
// mechanism on Linux is a PID namespace whose init dies with its parent: when the namespace's init
// dies, the kernel kills every process in it. bubblewrap gives exactly that (`--unshare-pid
// --die-with-parent`) without confining anything else here (`--dev-bind / /`). Where it is not usable,
// `setpriv --pdeathsig KILL` covers the direct child only. See docs/decisions/192-containment.md.
import { execFile } from 'node:child_process'
import { accessSync, constants } from 'node:fs'
import { basename, delimiter, join, resolve } from 'node:path'
import type { Containment } from './index.js'

/**
 * `auto`: a PID namespace when usable, else pdeathsig, else nothing. `pid-namespace` / `pdeathsig`:
 * that mechanism or a spawn failure. `none`: plain process groups (the owner's dispose still reaps).
 */
export type ContainMode = 'auto' | 'pid-namespace' | 'pdeathsig' | 'none'

function works(file: string, args: string[]): Promise<string | undefined> {
  return new Promise((resolve) => {
    execFile(file, args, { timeout: 5000 }, (error, _stdout, stderr) =>
      resolve(
        error
          ? (error as { code?: unknown }).code === 'ENOENT'
            ? 'not installed'
            : stderr.trim() || error.message
          : undefined,
      ),
    )
  })
}

/** The PID-namespace wrapper: the whole filesystem as it is, a fresh /proc for the namespace. */
export function pidNamespacePrefix(bwrap: string): string[] {
  return [bwrap, '--dev-bind', '/', '/', '--proc', '/proc', '--unshare-pid', '--die-with-parent', '--']
}

/** Probes the mechanisms `mode` allows, best first. Linux only; elsewhere `none`. */
export async function probeContainment(mode: ContainMode, bwrap = 'bwrap'): Promise<Containment> {
  if (mode === 'none') return { mechanism: 'none', prefix: [], detail: 'containment is off (contain: none)' }
  if (process.platform !== 'linux') {
    return { mechanism: 'none', prefix: [], detail: `no containment mechanism on ${process.platform}` }
  }
  const reasons: string[] = []
  if (mode === 'auto' || mode === 'pid-namespace') {
    const prefix = pidNamespacePrefix(bwrap)
    const why = await works(prefix[0] as string, [...prefix.slice(1), 'true'])
    if (why === undefined) return { mechanism: 'pid-namespace', prefix, detail: `PID namespace via ${bwrap}` }
    reasons.push(`PID namespace via ${bwrap}: ${why}`)
  }
  if (mode === 'auto' || mode === 'pdeathsig') {
    const prefix = ['setpriv', '--pdeathsig', 'KILL', '--']
    const why = await works('setpriv', ['--pdeathsig', 'KILL', '--', 'true'])
    if (why === undefined) {
      return {
        mechanism: 'pdeathsig',
        prefix,
        detail: `setpriv --pdeathsig (direct child only${reasons.length ? `; ${reasons.join('; ')}` : ''})`,
      }
    }
    reasons.push(`setpriv: ${why}`)
  }
  return { mechanism: 'none', prefix: [], detail: `no containment: ${reasons.join('; ')}` }
}

/** True when `argv` already runs in a PID namespace that dies with its parent (the bwrap sandbox). */
export function alreadyContained(argv: readonly string[]): boolean {
  return basename(argv[0] ?? '') === 'bwrap' && argv.includes('--unshare-pid') && argv.includes('--die-with-parent')
}

/**
 * Where `file` would be executed from (`execvp` rules), or undefined. A wrapper turns "no such
 * executable" into the wrapper's exit status 1, so the lookup is done before spawning to keep the
 * spawn-failure error.
 */
export function findExecutable(file: string, cwd: string, path: string | undefined): string | undefined {
  const candidates = file.includes('/')
    ? [resolve(cwd, file)]
    : (path ?? '').split(delimiter).map((dir) => join(resolve(cwd, dir || '.'), file))
  for (const candidate of candidates) {
    try {
      accessSync(candidate, constants.X_OK)
      return candidate
    } catch {}
  }
  return undefined
}
