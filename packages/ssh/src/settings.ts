// @dsh/ssh/settings: `ctx.sshSettings`, the settings keys of the SSH world, declared by a base row so
// that `dsh config` knows them in every profile, with typed getters for the connection row (which
// injects this service, so it reads the keys only once they are declared). `remote` is also read
// before boot: it decides which rows compose.

import { homedir } from 'node:os'
import { join } from 'node:path'
import { type Context, Service } from '@dsh/kernel'
import type {} from '@dsh/settings'
import { parseRemote, REMOTE_ENV } from './index.js'

declare module 'cordis' {
  interface Context {
    sshSettings: SshSettings
  }
}

export class SshSettings extends Service {
  static readonly provide = 'sshSettings'
  static readonly inject = ['settings']
  private readonly home: Context

  constructor(ctx: Context) {
    super(ctx, 'sshSettings')
    this.home = ctx
    ctx.settings.define('remote', {
      schema: { type: 'string' },
      description:
        'run every tool on a remote machine over SSH (the execution world): user@host:/path, an ~/.ssh/config alias as alias:/path, or ssh://user@host:port/path',
      env: REMOTE_ENV,
      allowed:
        '[user@]host:/absolute/path (host may be a Host alias of ~/.ssh/config) or ssh://[user@]host[:port]/absolute/path',
      check: (value) => {
        try {
          parseRemote(value)
          return undefined
        } catch (error) {
          return (error as Error).message
        }
      },
    })
    ctx.settings.define('ssh.knownHosts', {
      schema: { type: 'string' },
      description:
        'the known_hosts file listing trusted SSH host keys (default ~/.ssh/known_hosts and /etc/ssh/ssh_known_hosts)',
      env: 'DSH_SSH_KNOWN_HOSTS',
    })
    ctx.settings.define('ssh.identity', {
      schema: { type: 'string' },
      description:
        'the private key file for SSH logins (default: the IdentityFile of ~/.ssh/config for the host, else the ssh-agent, else ~/.ssh/id_ed25519, id_ecdsa, id_rsa)',
      env: 'DSH_SSH_IDENTITY',
    })
    ctx.settings.define('ssh.config', {
      schema: { type: 'string' },
      description:
        'the OpenSSH client config whose Host/Match sections give the remote host its HostName, User, Port and IdentityFile (default ~/.ssh/config; none: read no file)',
      env: 'DSH_SSH_CONFIG',
    })
  }

  get remote(): string | undefined {
    return this.home.settings.get('remote') || undefined
  }

  get knownHosts(): string | undefined {
    return this.home.settings.get('ssh.knownHosts') || undefined
  }

  get identity(): string | undefined {
    return this.home.settings.get('ssh.identity') || undefined
  }

  /** The SSH client config file, or undefined for `none` (no file is read). */
  get sshConfig(): string | undefined {
    const value = this.home.settings.get('ssh.config') || join(homedir(), '.ssh', 'config')
    return value === 'none' ? undefined : value
  }
}

export default SshSettings
