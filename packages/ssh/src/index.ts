// @dsh/ssh: the SSH execution world. `ctx.ssh` is one authenticated connection to one remote machine
// (host key checked against known_hosts); the world's providers (`/subprocess`, `/shell`, `/fs`,
// `/sandbox`, `/policy`) run every tool there through channels of that connection. The `remote`
// setting and `dsh run --remote` select it; see docs/decisions/330-ssh-execution-world.md.
import { HarnessError } from '@dsh/kernel/errors'
import type { ClientChannel, SFTPWrapper } from 'ssh2'

declare module 'cordis' {
  interface Context {
    ssh: SshConnection
  }
}

declare module '@dsh/settings' {
  interface SettingsMap {
    remote: string
    'ssh.knownHosts': string
    'ssh.identity': string
    'ssh.config': string
  }
}

/**
 * The remote as written (`--remote`, the `remote` setting): the host may be an alias of the SSH client
 * config, and user and port may be left to it (see ssh-config.ts).
 */
export interface RemoteSpec {
  user?: string
  host: string
  port?: number
  /** Absolute directory on the remote machine. */
  path: string
}

/** Where the remote world works: `user@host:port` (the SSH config applied) and the workspace directory there. */
export interface RemoteTarget {
  user: string
  host: string
  port: number
  /** Absolute directory on the remote machine. */
  path: string
}

/** Facts read from the remote machine once the connection is up. */
export interface RemoteInfo {
  /** The workspace with its symlinks resolved on the remote machine. */
  root: string
  home: string
  /** The temp directory, canonical. */
  tmp: string
  /** The login environment of a command (what `env` prints there). */
  env: Readonly<Record<string, string>>
}

/** `ctx.ssh`. Provider: `@dsh/ssh/connection` (ssh2). */
export interface SshConnection {
  readonly target: RemoteTarget
  /** Resolved by the provider's start: every dependent row activates after a verified login. */
  readonly info: RemoteInfo
  /** `user@host[:port]:/path`, for prompts and messages. */
  describe(): string
  /** Runs `command` through the remote user's login shell on a new channel of the connection. */
  exec(command: string): Promise<ClientChannel>
  /** Runs `command` to its end and returns its output and exit code (for short helper commands). */
  run(command: string, stdin?: string): Promise<{ code: number | null; stdout: string; stderr: string }>
  /** The connection's SFTP session (opened once). */
  sftp(): Promise<SFTPWrapper>
}

/** The variable of the `remote` setting. */
export const REMOTE_ENV = 'DSH_REMOTE'

const SPEC_HELP =
  'give the remote as user@host:/absolute/path, a Host alias of ~/.ssh/config as alias:/absolute/path, or ssh://user@host:port/absolute/path (the directory where tools work)'

/**
 * Parses `[user@]host:/path`, `[user@]host:port:/path` or `ssh://[user@]host[:port]/path`; the host may
 * be an alias of the SSH client config. Throws `SSH_TARGET_INVALID`.
 */
export function parseRemote(spec: string): RemoteSpec {
  const text = spec.trim()
  let user: string | undefined
  let host: string | undefined
  let port: number | undefined
  let path: string | undefined
  const url = /^ssh:\/\/(?:([^@/]+)@)?(\[[^\]]+\]|[^:/]+)(?::(\d+))?(\/.*)$/.exec(text)
  const scp = /^(?:([^@/]+)@)?(\[[^\]]+\]|[^:/]+):(?:(\d+):)?(\/.*)$/.exec(text)
  const match = url ?? scp
  if (match) {
    user = match[1]
    host = match[2]?.replace(/^\[|\]$/g, '')
    if (match[3]) port = Number(match[3])
    path = match[4]
  }
  if (!match || !host || !path || (port !== undefined && !(port > 0 && port < 65536))) {
    throw new HarnessError('SSH_TARGET_INVALID', `cannot read the remote "${spec}": ${SPEC_HELP}`, { spec })
  }
  return {
    ...(user ? { user } : {}),
    host,
    ...(port !== undefined ? { port } : {}),
    path: path.length > 1 ? path.replace(/\/+$/, '') : path,
  }
}

/** `user@host[:port]:/path`. */
export function formatRemote(target: RemoteTarget): string {
  return `${target.user}@${target.host}${target.port === 22 ? '' : `:${target.port}`}:${target.path}`
}

/** A word for a POSIX shell: single-quoted, with embedded quotes escaped. */
export function shellQuote(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`
}

/** Error codes of the seam. */
export const SSH_ERROR_CODES = [
  'SSH_TARGET_INVALID',
  'SSH_CONFIG_INVALID',
  'SSH_HOST_KEY_UNKNOWN',
  'SSH_HOST_KEY_CHANGED',
  'SSH_HOST_KEY_REVOKED',
  'SSH_AUTH_FAILED',
  'SSH_CONNECT_FAILED',
  'SSH_REMOTE_PATH_INVALID',
  'SSH_CHANNEL_FAILED',
] as const
