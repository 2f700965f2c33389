// OpenSSH client configuration (`~/.ssh/config`, or the `ssh.config` setting): the Host / Match
// sections that apply to the remote's host name give its HostName, User, Port and IdentityFile, so
// `--remote build:/srv/app` works for an alias the user's `ssh build` already knows. Parsed by the
// `ssh-config` package; what the remote itself says (`user@`, `:port`) wins, as on the ssh command line.
import { existsSync, readFileSync } from 'node:fs'
import { homedir, hostname, userInfo } from 'node:os'
import { join } from 'node:path'
import { HarnessError } from '@dsh/kernel/errors'
import SSHConfig from 'ssh-config'
import type { RemoteSpec, RemoteTarget } from './index.js'

/** What the config says about one host (absent: not set there). */
export interface HostConfig {
  hostName?: string
  user?: string
  port?: number
  /** IdentityFile entries in order, `~` and `%` tokens expanded. */
  identityFiles: string[]
}

function localUser(): string {
  try {
    return userInfo().username
  } catch {
    return process.env.USER ?? ''
  }
}

/**
 * The settings of `spec.host` in the config file `file` (empty when the file does not exist).
 * `Match exec` is never run: reading a config must not run its commands. Throws `SSH_CONFIG_INVALID`.
 */
export function readHostConfig(file: string, spec: RemoteSpec): HostConfig {
  if (!existsSync(file)) return { identityFiles: [] }
  let computed: Record<string, string | string[]>
  try {
    const config = SSHConfig.parse(readFileSync(file, 'utf8'))
    computed = config.compute(
      { Host: spec.host, ...(spec.user ? { User: spec.user } : {}) },
      { ignoreCase: true, matchExec: false },
    )
  } catch (error) {
    throw new HarnessError(
      'SSH_CONFIG_INVALID',
      `cannot read the SSH client config ${file}: ${(error as Error).message} (fix the file, or point ssh.config / DSH_SSH_CONFIG elsewhere, or at "none")`,
      { file },
    )
  }
  const one = (key: string): string | undefined => {
    const value = computed[key]
    return Array.isArray(value) ? value[0] : value
  }
  const hostName = one('hostname')
  const user = one('user')
  const portText = one('port')
  const port = portText === undefined ? undefined : Number(portText)
  if (port !== undefined && !(Number.isInteger(port) && port > 0 && port < 65536)) {
    throw new HarnessError(
      'SSH_CONFIG_INVALID',
      `${file}: Port ${JSON.stringify(portText)} for host ${spec.host} is not a port number`,
      { file, host: spec.host },
    )
  }
  const resolvedHost = hostName ? expandTokens(hostName, { host: spec.host }) : spec.host
  const remoteUser = spec.user ?? user ?? localUser()
  const raw = computed.identityfile
  const identityFiles = (Array.isArray(raw) ? raw : raw === undefined ? [] : [raw])
    .filter((entry) => entry.toLowerCase() !== 'none')
    .map((entry) => expandTokens(entry, { host: resolvedHost, user: remoteUser, port: spec.port ?? port ?? 22 }, true))
  return {
    ...(hostName ? { hostName: resolvedHost } : {}),
    ...(user ? { user } : {}),
    ...(port !== undefined ? { port } : {}),
    identityFiles,
  }
}

/**
 * The tokens OpenSSH expands in HostName (`%h`, `%%`) and IdentityFile (also `~`, `%d` home, `%u` local
 * user, `%r` remote user, `%p` port, `%l` local host name, `%i` uid). Others are kept as written.
 */
export function expandTokens(
  text: string,
  facts: { host: string; user?: string; port?: number },
  path = false,
): string {
  const home = homedir()
  const tokens: Record<string, string | undefined> = path
    ? {
        '%': '%',
        h: facts.host,
        d: home,
        u: localUser(),
        r: facts.user,
        p: facts.port === undefined ? undefined : String(facts.port),
        l: hostname(),
        i: process.getuid ? String(process.getuid()) : undefined,
      }
    : { '%': '%', h: facts.host }
  const expanded = text.replace(/%(.)/g, (whole, token: string) => tokens[token] ?? whole)
  return path && (expanded === '~' || expanded.startsWith('~/')) ? join(home, expanded.slice(1)) : expanded
}

/** The target to connect to: the remote's own user and port first, then the config's, then the defaults. */
export function resolveTarget(spec: RemoteSpec, host: HostConfig): RemoteTarget {
  return {
    user: spec.user ?? host.user ?? localUser(),
    host: host.hostName ?? spec.host,
    port: spec.port ?? host.port ?? 22,
    path: spec.path,
  }
}
