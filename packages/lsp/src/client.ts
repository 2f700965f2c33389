// One language server process for one workspace root: spawn, initialize, keep documents in sync with
// disk, collect published diagnostics, shut down. The provider (stdio.ts) owns restarts and routing.
import { type ChildProcess, spawn } from 'node:child_process'
import { pathToFileURL } from 'node:url'
import {
  ConfigurationRequest,
  createProtocolConnection,
  type Diagnostic,
  DidChangeTextDocumentNotification,
  DidCloseTextDocumentNotification,
  DidOpenTextDocumentNotification,
  ExitNotification,
  InitializedNotification,
  InitializeRequest,
  type ProtocolConnection,
  PublishDiagnosticsNotification,
  RegistrationRequest,
  ShutdownRequest,
  StreamMessageReader,
  StreamMessageWriter,
  WorkDoneProgressCreateRequest,
} from 'vscode-languageserver-protocol/node'
import { readSourceText } from './source.js'

export interface ServerSpec {
  /** The configured name (`typescript`, `python`...). */
  name: string
  /** Executable and arguments, already resolved to a runnable path. */
  argv: string[]
  /** languageId per file extension (`.ts` -> `typescript`). */
  languageIds: Record<string, string>
  env: Record<string, string>
  /** `initializationOptions` sent to the server. */
  initializationOptions?: unknown
}

interface Published {
  version?: number
  items: Diagnostic[]
  /** Increases with every publish, so a waiter can tell a new publish from an old one. */
  count: number
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

export class ServerClient {
  readonly child: ChildProcess
  readonly connection: ProtocolConnection
  readonly ready: Promise<void>
  /** Settles when the process is gone: `expected` is false for a crash. */
  readonly exited: Promise<{ expected: boolean; code: number | null; signal: string | null }>
  private readonly docs = new Map<string, { version: number; text: string }>()
  private readonly published = new Map<string, Published>()
  private readonly waiters = new Set<() => void>()
  private stopping = false
  private stderrTail = ''

  constructor(
    readonly spec: ServerSpec,
    readonly root: string,
    prefix: readonly string[],
  ) {
    const [command, ...args] = [...prefix, ...spec.argv]
    // Its own process group, so shutdown can end the server and anything it started.
    this.child = spawn(command as string, args, {
      cwd: root,
      env: spec.env,
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    })
    const spawned = new Promise<void>((resolve, reject) => {
      this.child.once('spawn', resolve)
      this.child.once('error', reject)
    })
    this.exited = new Promise((resolve) => {
      this.child.once('close', (code, signal) => {
        for (const wake of this.waiters) wake()
        resolve({ expected: this.stopping, code, signal })
      })
      // A failed spawn emits `error` and then `close`; nothing else to do here.
      this.child.on('error', () => {})
    })
    this.child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      this.stderrTail = (this.stderrTail + chunk).slice(-2000)
    })
    this.connection = createProtocolConnection(
      new StreamMessageReader(this.child.stdout as NodeJS.ReadableStream),
      new StreamMessageWriter(this.child.stdin as NodeJS.WritableStream),
    )
    this.connection.onNotification(PublishDiagnosticsNotification.type, (params) => {
      const previous = this.published.get(params.uri)
      this.published.set(params.uri, {
        ...(params.version === undefined ? {} : { version: params.version }),
        items: params.diagnostics,
        count: (previous?.count ?? 0) + 1,
      })
      for (const wake of this.waiters) wake()
    })
    // Servers ask the client things (settings, capability registration, progress tokens): answer
    // with nothing, which every server takes as "defaults".
    this.connection.onRequest(ConfigurationRequest.type, (params) => params.items.map(() => null))
    this.connection.onRequest(RegistrationRequest.type, () => undefined)
    this.connection.onRequest(WorkDoneProgressCreateRequest.type, () => undefined)
    this.connection.onError(() => {})
    this.connection.onClose(() => {})
    this.connection.listen()
    // In a PID namespace (containment) our pid means nothing to the server, which would take the
    // client for dead and exit; the namespace already ends the server with us.
    this.ready = spawned.then(() => this.initialize(prefix.length > 0 ? null : process.pid))
  }

  get pid(): number | undefined {
    return this.child.pid
  }

  /** The last lines the server wrote on stderr (for crash notes). */
  get stderr(): string {
    return this.stderrTail.trim().split('\n').slice(-3).join(' | ')
  }

  private async initialize(processId: number | null): Promise<void> {
    const rootUri = pathToFileURL(this.root).href
    await this.connection.sendRequest(InitializeRequest.type, {
      processId,
      rootUri,
      workspaceFolders: [{ uri: rootUri, name: 'workspace' }],
      initializationOptions: this.spec.initializationOptions ?? null,
      capabilities: {
        textDocument: {
          synchronization: { didSave: false, dynamicRegistration: false },
          publishDiagnostics: { relatedInformation: false, versionSupport: true },
          definition: { linkSupport: false },
          references: {},
          hover: { contentFormat: ['markdown', 'plaintext'] },
          documentSymbol: { hierarchicalDocumentSymbolSupport: true },
        },
        workspace: { symbol: {}, workspaceFolders: true, configuration: false },
      },
    })
    await this.connection.sendNotification(InitializedNotification.type, {})
  }

  /** Sends the file's current disk content (open, or a full change when it differs). Returns its uri and version. */
  async sync(file: string): Promise<{ uri: string; version: number; changed: boolean }> {
    await this.ready
    const uri = pathToFileURL(file).href
    const text = await readSourceText(file)
    const open = this.docs.get(uri)
    if (!open) {
      const ext = file.slice(file.lastIndexOf('.'))
      const languageId = this.spec.languageIds[ext] ?? ext.slice(1)
      this.docs.set(uri, { version: 1, text })
      await this.connection.sendNotification(DidOpenTextDocumentNotification.type, {
        textDocument: { uri, languageId, version: 1, text },
      })
      return { uri, version: 1, changed: true }
    }
    if (open.text === text) return { uri, version: open.version, changed: false }
    const version = open.version + 1
    this.docs.set(uri, { version, text })
    await this.connection.sendNotification(DidChangeTextDocumentNotification.type, {
      textDocument: { uri, version },
      contentChanges: [{ text }],
    })
    return { uri, version, changed: true }
  }

  /** The version `sync` last sent for `uri`, if it is open. */
  versionOf(uri: string): number | undefined {
    return this.docs.get(uri)?.version
  }

  /** Closes a file opened by `sync` (the next `sync` opens it afresh). */
  async close(file: string): Promise<void> {
    const uri = pathToFileURL(file).href
    if (!this.docs.delete(uri)) return
    await this.connection.sendNotification(DidCloseTextDocumentNotification.type, { textDocument: { uri } })
  }

  /**
   * The diagnostics of `uri` published after `since` publishes (the count before the sync) at
   * `version` or later; undefined when none arrived within `timeoutMs` (or the server died). Servers
   * may publish in stages (TypeScript: syntax, then semantics), so after a publish this waits until
   * `settleMs` pass without another one.
   */
  async diagnosticsAfter(
    uri: string,
    since: number,
    version: number,
    timeoutMs: number,
    settleMs = 500,
  ): Promise<Diagnostic[] | undefined> {
    const deadline = Date.now() + timeoutMs
    const fresh = () => {
      const latest = this.published.get(uri)
      return latest && latest.count > since && (latest.version === undefined || latest.version >= version)
        ? latest
        : undefined
    }
    let seen: Published | undefined
    let quietUntil = Number.POSITIVE_INFINITY
    for (;;) {
      const latest = fresh()
      if (latest && latest !== seen) {
        seen = latest
        quietUntil = Date.now() + settleMs
      }
      const now = Date.now()
      if (seen && now >= quietUntil) return seen.items
      if (now >= deadline || this.child.exitCode !== null || this.child.signalCode !== null) return seen?.items
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer)
          this.waiters.delete(wake)
          resolve()
        }
        const timer = setTimeout(wake, Math.min(deadline, quietUntil) - now)
        this.waiters.add(wake)
      })
    }
  }

  /** How many times `uri` was published so far (call before `sync`). */
  publishCount(uri: string): number {
    return this.published.get(uri)?.count ?? 0
  }

  /** The last diagnostics of `uri`, whenever they were published. */
  lastDiagnostics(uri: string): Diagnostic[] | undefined {
    return this.published.get(uri)?.items
  }

  /** Polite shutdown, then the process group: SIGTERM, SIGKILL after `graceMs`. Idempotent. */
  async stop(graceMs = 1000): Promise<void> {
    if (this.stopping) return void (await this.exited)
    this.stopping = true
    const alive = () => this.child.exitCode === null && this.child.signalCode === null
    if (alive() && this.child.pid !== undefined) {
      try {
        await Promise.race([this.connection.sendRequest(ShutdownRequest.type), sleep(graceMs)])
        await this.connection.sendNotification(ExitNotification.type)
      } catch {
        // A dead or broken connection: the signals below end it.
      }
      await Promise.race([this.exited, sleep(graceMs)])
      this.signal('SIGTERM')
      await Promise.race([this.exited, sleep(graceMs)])
      this.signal('SIGKILL')
    }
    this.connection.dispose()
    await this.exited
  }

  private signal(name: NodeJS.Signals): void {
    if (this.child.pid === undefined) return
    try {
      process.kill(-this.child.pid, name)
    } catch {
      // The group is already gone.
    }
  }
}
