// @dsh/ssh/connection: `ctx.ssh` over the ssh2 library. One TCP connection per process, opened and
// verified when the row starts (rows of the remote world inject `ssh`, so none of them activates
// before a verified login); commands are exec channels and file operations one SFTP session on it.
// The remote's host may be an alias of the SSH client config (HostName, User, Port, IdentityFile; see
// ssh-config.ts). Host keys: only a key listed for the host in known_hosts is accepted. Auth: the
// `ssh.identity` key file, else the config's IdentityFile, else the ssh-agent, else ~/.ssh/id_ed25519,
// id_ecdsa, id_rsa.
import { createHash } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { type Context, HarnessError, Service } from '@dsh/kernel'
import type { Client, ClientChannel, ConnectConfig, SFTPWrapper } from 'ssh2'
import {
  formatRemote,
  parseRemote,
  type RemoteInfo,
  type RemoteTarget,
  type SshConnection,
  shellQuote,
} from './index.js'
import { type HostKeyVerdict, hostName, verifyHostKey } from './known-hosts.js'
import type {} from './settings.js'
import { readHostConfig, resolveTarget } from './ssh-config.js'

export interface SshConnectionConfig {
  /** `[user@]host:/path` (host may be an SSH config alias) or `ssh://user@host:port/path`. Default: the `remote` setting. */
  target?: string
  /** The OpenSSH client config to read; false reads none. Default: the `ssh.config` setting, else ~/.ssh/config. */
  sshConfig?: string | false
  /** known_hosts files. Default: the `ssh.knownHosts` setting, else ~/.ssh/known_hosts and /etc/ssh/ssh_known_hosts. */
  knownHosts?: string[]
  /** A private key file. Default: the `ssh.identity` setting, else the agent, else ~/.ssh/id_*. */
  identity?: string
  /** Milliseconds to wait for the handshake and login. Default 20000. */
  readyTimeoutMs?: number
}

const DEFAULT_KNOWN_HOSTS = () => [join(homedir(), '.ssh', 'known_hosts'), '/etc/ssh/ssh_known_hosts']

/** The SHA256 fingerprint OpenSSH prints for a key blob. */
export function fingerprint(blob: Buffer): string {
  return `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`
}

function keyType(blob: Buffer): string {
  return blob.length > 4 ? blob.subarray(4, 4 + blob.readUInt32BE(0)).toString() : 'unknown'
}

/**
 * ssh2 is an optional peer (decision 487): its install script compiles an optional crypto binding with
 * node-gyp, so installing dsh does not pull it in; the SSH world asks for it when first used.
 */
async function loadSsh2(): Promise<typeof import('ssh2')> {
  try {
    return (await import('ssh2')).default
  } catch (error) {
    throw new HarnessError(
      'DEPENDENCY_MISSING',
      `the SSH world needs the ssh2 package, which is not installed (${(error as Error).message.split('\n')[0]}): install it where dsh is installed (npm install -g ssh2@1 beside a global dsh, npm install ssh2@1 in the project that has @dsh/cli), then run dsh again`,
      { dependency: 'ssh2', feature: 'the SSH world' },
    )
  }
}

export class SshConnectionService extends Service implements SshConnection {
  static readonly provide = 'ssh'
  static readonly inject = ['sshSettings']
  readonly target: RemoteTarget
  // Set by init: dependents activate only after it resolved.
  info!: RemoteInfo
  private client: Client | undefined
  private sftpSession: Promise<SFTPWrapper> | undefined
  private readonly config: SshConnectionConfig
  private readonly knownHosts: string[]
  private readonly identity: string | undefined

  constructor(ctx: Context, config: SshConnectionConfig = {}) {
    super(ctx, 'ssh')
    this.config = config ?? {}
    const settings = ctx.sshSettings
    const spec = this.config.target ?? settings.remote
    if (!spec) {
      throw new HarnessError(
        'SSH_TARGET_INVALID',
        'the SSH world needs a remote: dsh run --remote user@host:/path, or dsh config set remote user@host:/path',
        {},
      )
    }
    const remote = parseRemote(spec)
    const configFile = this.config.sshConfig === undefined ? settings.sshConfig : this.config.sshConfig || undefined
    const hostConfig = configFile ? readHostConfig(configFile, remote) : { identityFiles: [] }
    this.target = resolveTarget(remote, hostConfig)
    const file = settings.knownHosts
    this.knownHosts = this.config.knownHosts ?? (file ? [file] : DEFAULT_KNOWN_HOSTS())
    // As with `ssh -i`, an explicit key wins over the config's; of the config's, the first that exists.
    this.identity =
      this.config.identity ?? settings.identity ?? hostConfig.identityFiles.find((path) => existsSync(path))
    ctx.effect(
      () => () => {
        this.client?.end()
        this.client = undefined
      },
      'ssh.connection',
    )
  }

  describe(): string {
    return formatRemote(this.target)
  }

  async [Service.init](): Promise<void> {
    this.client = await this.connect()
    this.info = await this.readInfo()
  }

  private auth(): Partial<ConnectConfig> {
    if (this.identity) {
      try {
        return { privateKey: readFileSync(this.identity) }
      } catch (error) {
        throw new HarnessError(
          'SSH_AUTH_FAILED',
          `cannot read the SSH identity ${this.identity}: ${(error as Error).message} (set ssh.identity to a private key file)`,
          { identity: this.identity },
        )
      }
    }
    // The agent socket is how every SSH client finds the agent; it is not dsh configuration.
    const agent = process.env.SSH_AUTH_SOCK
    if (agent) return { agent }
    for (const name of ['id_ed25519', 'id_ecdsa', 'id_rsa']) {
      const file = join(homedir(), '.ssh', name)
      if (existsSync(file)) return { privateKey: readFileSync(file) }
    }
    return {}
  }

  private async connect(): Promise<Client> {
    const ssh2 = await loadSsh2()
    const client = new ssh2.Client()
    const { host, port, user } = this.target
    let verdict: HostKeyVerdict | undefined
    let presented: Buffer | undefined
    const auth = this.auth()
    await new Promise<void>((resolve, reject) => {
      client.once('ready', () => resolve())
      client.once('error', (error: Error & { level?: string }) => {
        if (verdict && !verdict.ok && presented) reject(this.hostKeyError(verdict, presented))
        else if (error.level === 'client-authentication') {
          reject(
            new HarnessError(
              'SSH_AUTH_FAILED',
              `${user}@${host} refused every key offered (${'privateKey' in auth ? (this.identity ?? 'a key in ~/.ssh') : 'agent' in auth ? 'the ssh-agent' : 'none found'}): add your public key to ~${user}/.ssh/authorized_keys there, load it into ssh-agent, or set ssh.identity (DSH_SSH_IDENTITY) to the private key file`,
              { host, port, user },
            ),
          )
        } else {
          reject(
            new HarnessError('SSH_CONNECT_FAILED', `cannot connect to ${host}:${port}: ${error.message}`, {
              host,
              port,
            }),
          )
        }
      })
      client.connect({
        host,
        port,
        username: user,
        ...auth,
        readyTimeout: this.config.readyTimeoutMs ?? 20_000,
        keepaliveInterval: 15_000,
        hostVerifier: (key: Buffer) => {
          presented = key
          verdict = verifyHostKey(this.knownHosts, host, port, key)
          return verdict.ok
        },
      })
    })
    client.on('error', (error: Error) => this.ctx.logger('ssh').warn(`connection to ${host}: ${error.message}`))
    return client
  }

  private hostKeyError(verdict: Exclude<HostKeyVerdict, { ok: true }>, key: Buffer): HarnessError {
    const { host, port } = this.target
    const name = hostName(host, port)
    const print = `${keyType(key)} ${fingerprint(key)}`
    const files = verdict.files.join(', ')
    const facts = { host, port, fingerprint: fingerprint(key), knownHosts: [...verdict.files] }
    if (verdict.reason === 'revoked') {
      return new HarnessError(
        'SSH_HOST_KEY_REVOKED',
        `the host key of ${name} (${print}) is marked @revoked in ${files}; refusing to connect`,
        facts,
      )
    }
    if (verdict.reason === 'changed') {
      return new HarnessError(
        'SSH_HOST_KEY_CHANGED',
        `the host key of ${name} changed: it now presents ${print}, which is not the key recorded in ${files} (line ${verdict.line}). This may be an attack. If the change is expected, remove the old line (ssh-keygen -R '${name}') and add the new key after checking its fingerprint with the server's administrator`,
        facts,
      )
    }
    const scan = port === 22 ? `ssh-keyscan ${host}` : `ssh-keyscan -p ${port} ${host}`
    return new HarnessError(
      'SSH_HOST_KEY_UNKNOWN',
      `the host key of ${name} (${print}) is not in ${files}: dsh never accepts an unknown host key. Check the fingerprint with the server's administrator, then add it: ${scan} >> ~/.ssh/known_hosts (or connect once with ssh, or point ssh.knownHosts / DSH_SSH_KNOWN_HOSTS at a file that lists it)`,
      facts,
    )
  }

  private async readInfo(): Promise<RemoteInfo> {
    const path = this.target.path
    const script = [
      `cd -- ${shellQuote(path)} 2>/dev/null || { echo 'not a directory' >&2; exit 3; }`,
      'pwd -P',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion, not a template
      'cd -- "${TMPDIR:-/tmp}" && pwd -P',
      `printf '%s\\n' "$HOME"`,
      'env -0',
    ].join('\n')
    const result = await this.run(script)
    if (result.code !== 0) {
      throw new HarnessError(
        'SSH_REMOTE_PATH_INVALID',
        `${path} is not a directory on ${this.target.host} (${result.stderr.trim() || `exit ${result.code}`}): create it there or name an existing directory in --remote`,
        { path, host: this.target.host },
      )
    }
    const [root = path, tmp = '/tmp', home = '/', ...rest] = result.stdout.split('\n')
    const env: Record<string, string> = {}
    for (const entry of rest.join('\n').split('\0')) {
      const equals = entry.indexOf('=')
      if (equals > 0) env[entry.slice(0, equals)] = entry.slice(equals + 1)
    }
    return Object.freeze({ root, tmp, home, env: Object.freeze(env) })
  }

  private live(): Client {
    if (!this.client) {
      throw new HarnessError('SSH_CHANNEL_FAILED', `the SSH connection to ${this.target.host} is closed`, {
        host: this.target.host,
      })
    }
    return this.client
  }

  exec(command: string): Promise<ClientChannel> {
    const client = this.live()
    return new Promise((resolve, reject) => {
      client.exec(command, (error, channel) => {
        if (error) {
          reject(
            new HarnessError(
              'SSH_CHANNEL_FAILED',
              `cannot open a channel to ${this.target.host}: ${error.message}`,
              { host: this.target.host },
              { cause: error },
            ),
          )
        } else resolve(channel)
      })
    })
  }

  async run(command: string, stdin?: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
    const channel = await this.exec(command)
    return new Promise((resolve) => {
      const out: Buffer[] = []
      const err: Buffer[] = []
      let code: number | null = null
      channel.on('data', (chunk: Buffer) => out.push(chunk))
      channel.stderr.on('data', (chunk: Buffer) => err.push(chunk))
      channel.on('exit', (exitCode: number | null) => {
        code = exitCode
      })
      channel.on('close', () =>
        resolve({ code, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') }),
      )
      channel.end(stdin)
    })
  }

  sftp(): Promise<SFTPWrapper> {
    this.sftpSession ??= new Promise((resolve, reject) => {
      this.live().sftp((error, sftp) => {
        if (error) {
          this.sftpSession = undefined
          reject(
            new HarnessError(
              'SSH_CHANNEL_FAILED',
              `cannot open SFTP on ${this.target.host}: ${error.message} (the server needs the sftp subsystem)`,
              { host: this.target.host },
            ),
          )
        } else resolve(sftp)
      })
    })
    return this.sftpSession
  }
}

export default SshConnectionService
