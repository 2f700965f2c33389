// @dsh/lsp/stdio: the provider of `ctx.lsp`. Language servers run as child processes over stdio, one
// per workspace root and configured server, started in the background when a session opens in a
// workspace with files they handle (`warm`), else on the first question about such a file. While a
// server is still loading its project, a changed file's diagnostics are waited for at most `coldWaitMs`:
// the result says they are coming, and they arrive with a later result (`earlier`).
// A server that exits on its own is restarted on the next question after a back-off (at most
// `maxRestarts` times), and the answer carries a note saying so. A server whose executable is missing
// gives one note per session and is not retried. Servers stop when every session that used them has
// closed, and all of them when this row is disposed.
import { existsSync } from 'node:fs'
import { extname, join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { type Context, Service } from '@dsh/kernel'
import type {} from '@dsh/session'
import { scrubEnv } from '@dsh/world/subprocess'
import type { ServerClient, ServerSpec } from './client.js'
import {
  type LanguageServers,
  type LspAnswer,
  type LspDiagnostic,
  type LspLocation,
  type LspPositionTarget,
  type LspServerStatus,
  type LspSymbol,
  type LspTarget,
  sortDiagnostics,
} from './index.js'
import { checkConfig, findServerExecutable, type LspStdioConfig, type ServerConfig } from './servers.js'
import { extensionsIn } from './warm.js'

export { DEFAULT_SERVERS, findServerExecutable, type LspStdioConfig, type ServerConfig } from './servers.js'

type Wire = typeof import('./wire.js')
let wireModule: Promise<Wire> | undefined
const loadWire = (): Promise<Wire> => (wireModule ??= import('./wire.js'))

interface Slot {
  root: string
  name: string
  config: ServerConfig
  client?: ServerClient
  state: LspServerStatus['state']
  restarts: number
  /** When the next start may happen (back-off after a crash). */
  notBefore: number
  /** Notes for the next answer (a restart happened). */
  pending: string[]
  /** Sessions that asked; the server stops when the last one closes. */
  users: Set<string>
  /** Sessions already told that this server is missing or gave up. */
  told: Set<string>
  /** Why the server is missing or failed. */
  why?: string
  /** The start in progress, shared by everyone who asks meanwhile. */
  starting?: Promise<ServerClient | undefined>
  /** Whether the server has published fresh diagnostics for a change yet (it is warm). */
  published: boolean
  /** Files whose diagnostics a result said were still coming: uri to [root, path]. */
  owed: Map<string, { root: string; path: string }>
}

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms))

/** A question the server cannot answer yet (still loading): the answer is not given, with a note. */
class NotYet extends Error {}

export class StdioLanguageServers extends Service implements LanguageServers {
  static readonly provide = 'lsp'
  static readonly inject = ['sessions']
  // TS-private, not #private: Cordis hands callers a proxy of the service.
  private readonly servers: Record<string, ServerConfig>
  private readonly slots = new Map<string, Slot>()
  private readonly settings: Required<Omit<LspStdioConfig, 'servers'>>

  constructor(ctx: Context, config: LspStdioConfig = {}) {
    const servers = checkConfig(config)
    super(ctx, 'lsp')
    this.servers = servers
    this.settings = {
      diagnosticsTimeoutMs: config?.diagnosticsTimeoutMs ?? 20_000,
      requestTimeoutMs: config?.requestTimeoutMs ?? 30_000,
      maxRestarts: config?.maxRestarts ?? 4,
      restartBaseMs: config?.restartBaseMs ?? 500,
      warm: config?.warm ?? true,
      coldWaitMs: config?.coldWaitMs ?? 3000,
    }
    if (this.settings.warm) {
      // After the session is open, not inside its creation: the workspace scan and the spawn are not
      // on the path to the first request. Timers still pending when the row goes are cleared.
      const timers = new Set<NodeJS.Timeout>()
      const later = (root: string, sessionId: string) => {
        const timer = setTimeout(() => {
          timers.delete(timer)
          this.warm(root, sessionId)
        }, 0)
        timers.add(timer)
      }
      ctx.on('session/created', (session) => later(session.header.cwd, session.id))
      ctx.on('session/restored', (session) => later(session.header.cwd, session.id))
      ctx.effect(
        () => () => {
          for (const timer of timers) clearTimeout(timer)
        },
        'lsp.warm timers',
      )
    }
    ctx.on('session/closed', (session) => {
      for (const slot of this.slots.values()) {
        if (!slot.users.delete(session.id) || slot.users.size > 0) continue
        void this.stop(slot)
      }
    })
    ctx.effect(
      () => () => Promise.all([...this.slots.values()].map((slot) => this.stop(slot))).then(() => undefined),
      'lsp.servers',
    )
  }

  /** Starts, in the background, the servers for the languages present in `root`. */
  warm(root: string, sessionId?: string): void {
    if (!root) return
    // A project, not a folder that happens to hold a script: a marker at the root and its files.
    const servers = Object.entries(this.servers).filter(([, server]) =>
      (server.markers ?? []).some((marker) => existsSync(join(root, marker))),
    )
    if (servers.length === 0) return
    const present = extensionsIn(root)
    for (const [name, server] of servers) {
      const sample = server.extensions.map((ext) => present.get(ext)).find((file) => file !== undefined)
      if (sample === undefined) continue
      const slot = this.slotOf(root, name)
      if (sessionId !== undefined) slot.users.add(sessionId)
      if (slot.client || slot.starting || slot.state === 'missing' || slot.state === 'failed') continue
      void this.warmSlot(slot, sample).catch(() => undefined)
    }
  }

  /** Starts the slot's server and opens one of its files, which makes it load the project. */
  private async warmSlot(slot: Slot, file: string): Promise<void> {
    const client = await this.clientOf(slot, [], undefined)
    if (!client) return
    const uri = pathToFileURL(file).href
    const before = client.publishCount(uri)
    const { version, changed } = await client.sync(file)
    const fresh = await client.diagnosticsAfter(
      uri,
      changed ? before : before - 1,
      version,
      this.settings.diagnosticsTimeoutMs,
    )
    // Its first diagnostics mean the project is loaded: later changes are answered in well under a second.
    if (fresh && slot.client === client) slot.published = true
    // Closed again unless someone asked about it meanwhile: a later question opens it with what is on disk.
    if (client.versionOf(uri) === version) await client.close(file)
  }

  handles(path: string): boolean {
    return this.serverFor(path) !== undefined
  }

  status(): LspServerStatus[] {
    return [...this.slots.values()].map((slot) => ({
      root: slot.root,
      server: slot.name,
      state: slot.state,
      ...(slot.client?.pid === undefined || slot.state === 'stopped' ? {} : { pid: slot.client.pid }),
      restarts: slot.restarts,
    }))
  }

  async diagnostics(target: LspTarget): Promise<LspAnswer<LspDiagnostic[]>> {
    return this.ask(target, [], async (client, file, notes, { toDiagnostic }) => {
      const uri = pathToFileURL(file).href
      const before = client.publishCount(uri)
      const slot = this.slotOf(target.root, client.spec.name)
      const { version, changed } = await client.sync(file)
      // A server still loading its project would hold this result for seconds: wait a little, then
      // owe the diagnostics to a later result.
      const wait = slot.published
        ? this.settings.diagnosticsTimeoutMs
        : Math.min(this.settings.coldWaitMs, this.settings.diagnosticsTimeoutMs)
      const fresh = await client.diagnosticsAfter(uri, changed ? before : before - 1, version, wait)
      slot.owed.delete(uri)
      if (fresh) slot.published = true
      const items = fresh ?? client.lastDiagnostics(uri)
      if (!fresh && !slot.published && items === undefined) {
        slot.owed.set(uri, { root: target.root, path: target.path })
        notes.push(
          `language server ${client.spec.name} is still loading the project; diagnostics for this file will come with a later result`,
        )
        throw new NotYet()
      }
      if (!fresh) {
        notes.push(
          `language server ${client.spec.name} did not report diagnostics for this file within ${wait / 1000} s${items?.length ? '; these are older' : ''}`,
        )
      }
      return sortDiagnostics((items ?? []).map((item) => toDiagnostic(target.root, uri, item)))
    })
  }

  definition(target: LspPositionTarget): Promise<LspAnswer<LspLocation[]>> {
    return this.ask(target, [], async (client, file, _notes, { DefinitionRequest, toLocations }) => {
      const { uri } = await client.sync(file)
      const result = await client.connection.sendRequest(DefinitionRequest.type, {
        textDocument: { uri },
        position: { line: target.line - 1, character: target.column - 1 },
      })
      return toLocations(target.root, result)
    })
  }

  references(target: LspPositionTarget): Promise<LspAnswer<LspLocation[]>> {
    return this.ask(target, [], async (client, file, _notes, { ReferencesRequest, toLocations }) => {
      const { uri } = await client.sync(file)
      const result = await client.connection.sendRequest(ReferencesRequest.type, {
        textDocument: { uri },
        position: { line: target.line - 1, character: target.column - 1 },
        context: { includeDeclaration: true },
      })
      return toLocations(target.root, result)
    })
  }

  hover(target: LspPositionTarget): Promise<LspAnswer<string | undefined>> {
    return this.ask(target, undefined, async (client, file, _notes, { HoverRequest, hoverText }) => {
      const { uri } = await client.sync(file)
      const result = await client.connection.sendRequest(HoverRequest.type, {
        textDocument: { uri },
        position: { line: target.line - 1, character: target.column - 1 },
      })
      return hoverText(result)
    })
  }

  documentSymbols(target: LspTarget): Promise<LspAnswer<LspSymbol[]>> {
    return this.ask(target, [], async (client, file, _notes, { DocumentSymbolRequest, toSymbols }) => {
      const { uri } = await client.sync(file)
      const result = await client.connection.sendRequest(DocumentSymbolRequest.type, { textDocument: { uri } })
      return toSymbols(target.root, uri, result)
    })
  }

  workspaceSymbols(target: LspTarget & { query: string }): Promise<LspAnswer<LspSymbol[]>> {
    return this.ask(target, [], async (client, file, _notes, { WorkspaceSymbolRequest, toSymbols }) => {
      // Servers such as typescript-language-server only know a project once one of its files is open.
      const { uri } = await client.sync(file)
      const result = await client.connection.sendRequest(WorkspaceSymbolRequest.type, { query: target.query })
      return toSymbols(target.root, uri, result)
    })
  }

  private serverFor(path: string): string | undefined {
    const ext = extname(path)
    return Object.entries(this.servers).find(([, server]) => server.extensions.includes(ext))?.[0]
  }

  /** Routes a question to its server (starting or restarting it) and collects the notes. */
  private async ask<T>(
    target: LspTarget,
    empty: T,
    question: (client: ServerClient, file: string, notes: string[], wire: Wire) => Promise<T>,
  ): Promise<LspAnswer<T>> {
    const name = this.serverFor(target.path)
    if (name === undefined) return { answered: false, value: empty, notes: [] }
    const file = resolve(target.root, target.path)
    const slot = this.slotOf(target.root, name)
    if (target.sessionId !== undefined) slot.users.add(target.sessionId)
    const notes: string[] = []
    const client = await this.clientOf(slot, notes, target.sessionId)
    if (!client) return { server: name, answered: false, value: empty, notes }
    const wire = await loadWire()
    try {
      const value = await this.bounded(question(client, file, notes, wire), target.signal)
      return {
        server: name,
        answered: true,
        value,
        notes: [...slot.pending.splice(0), ...notes],
        ...this.earlier(slot, client, wire),
      }
    } catch (error) {
      if (error instanceof NotYet) {
        return {
          server: name,
          answered: false,
          value: empty,
          notes: [...slot.pending.splice(0), ...notes],
          ...this.earlier(slot, client, wire),
        }
      }
      notes.push(`language server ${name} could not answer: ${(error as Error).message}`)
      return { server: name, answered: false, value: empty, notes: [...slot.pending.splice(0), ...notes] }
    }
  }

  /** Diagnostics a server has since published for files an earlier result said were coming. */
  private earlier(slot: Slot, client: ServerClient, wire: Wire): Pick<LspAnswer<unknown>, 'earlier'> {
    const out: NonNullable<LspAnswer<unknown>['earlier']> = []
    for (const [uri, { root, path }] of slot.owed) {
      const items = client.lastDiagnostics(uri)
      if (items === undefined) continue
      slot.owed.delete(uri)
      slot.published = true
      out.push({ path, diagnostics: sortDiagnostics(items.map((item) => wire.toDiagnostic(root, uri, item))) })
    }
    return out.length > 0 ? { earlier: out } : {}
  }

  private slotOf(root: string, name: string): Slot {
    const key = `${root}\u0000${name}`
    let slot = this.slots.get(key)
    if (!slot) {
      slot = {
        root,
        name,
        config: this.servers[name] as ServerConfig,
        state: 'stopped',
        restarts: 0,
        notBefore: 0,
        pending: [],
        users: new Set(),
        told: new Set(),
        published: false,
        owed: new Map(),
      }
      this.slots.set(key, slot)
    }
    return slot
  }

  /** The slot's running client, starting it when needed; undefined (with a note once) when it cannot run. */
  private async clientOf(
    slot: Slot,
    notes: string[],
    sessionId: string | undefined,
  ): Promise<ServerClient | undefined> {
    const tell = (text: string) => {
      const who = sessionId ?? ''
      if (slot.told.has(who)) return
      slot.told.add(who)
      notes.push(text)
    }
    if (slot.state === 'missing' || slot.state === 'failed') {
      tell(slot.why as string)
      return undefined
    }
    if (slot.starting) return slot.starting
    if (slot.client && slot.state !== 'stopped') {
      try {
        await slot.client.ready
        return slot.client
      } catch {
        // Fell over while starting: handled as a crash below.
      }
    }
    slot.starting = this.start(slot, notes, tell).finally(() => {
      slot.starting = undefined
    })
    return slot.starting
  }

  private async start(slot: Slot, notes: string[], tell: (text: string) => void): Promise<ServerClient | undefined> {
    const executable = findServerExecutable(slot.config.command[0] as string, slot.root)
    if (!executable) {
      slot.state = 'missing'
      slot.why = `language server ${slot.name} is not available: "${slot.config.command[0]}" is not installed (not on PATH or in node_modules/.bin); no ${slot.name} diagnostics or code_nav until it is`
      tell(slot.why)
      return undefined
    }
    const wait = slot.notBefore - Date.now()
    if (wait > 0) await sleep(wait)
    const containment = await this.ctx.get('subprocess')?.containment()
    const spec: ServerSpec = {
      name: slot.name,
      argv: [executable, ...slot.config.command.slice(1)],
      languageIds: slot.config.languageIds ?? {},
      env: scrubEnv(process.env),
      ...(slot.config.initializationOptions === undefined
        ? {}
        : { initializationOptions: slot.config.initializationOptions }),
    }
    const client = new (await loadWire()).ServerClient(spec, slot.root, containment?.prefix ?? [])
    slot.client = client
    slot.state = 'starting'
    slot.published = false
    this.ctx.emit('lsp/starting', { server: slot.name, root: slot.root })
    void client.exited.then((exit) => this.onExit(slot, client, exit))
    try {
      await this.bounded(client.ready)
      if (slot.client === client) slot.state = 'ready'
      this.ctx.emit('lsp/ready', { server: slot.name, root: slot.root })
      return client
    } catch (error) {
      notes.push(`language server ${slot.name} did not start: ${(error as Error).message} ${client.stderr}`.trim())
      await client.stop(200)
      return undefined
    }
  }

  private onExit(
    slot: Slot,
    client: ServerClient,
    exit: { expected: boolean; code: number | null; signal: string | null },
  ): void {
    if (slot.client !== client || exit.expected) return
    slot.client = undefined
    slot.restarts++
    const how = exit.signal ? `signal ${exit.signal}` : `exit code ${exit.code}`
    if (slot.restarts > this.settings.maxRestarts) {
      slot.state = 'failed'
      slot.why = `language server ${slot.name} crashed ${slot.restarts} times (last: ${how}); it is not restarted again in this session`
      return
    }
    slot.state = 'restarting'
    slot.notBefore = Date.now() + this.settings.restartBaseMs * 2 ** (slot.restarts - 1)
    slot.pending.push(
      `language server ${slot.name} had stopped (${how}) and was restarted (restart ${slot.restarts} of at most ${this.settings.maxRestarts})`,
    )
  }

  private async stop(slot: Slot): Promise<void> {
    const client = slot.client
    slot.client = undefined
    if (slot.state !== 'missing' && slot.state !== 'failed') slot.state = 'stopped'
    await client?.stop()
  }

  private bounded<T>(work: Promise<T>, signal?: AbortSignal): Promise<T> {
    return new Promise<T>((resolvePromise, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no answer within ${this.settings.requestTimeoutMs / 1000} s`)),
        this.settings.requestTimeoutMs,
      )
      const onAbort = () => reject(new Error('cancelled'))
      signal?.addEventListener('abort', onAbort, { once: true })
      work.then(resolvePromise, reject).finally(() => {
        clearTimeout(timer)
        signal?.removeEventListener('abort', onAbort)
      })
    })
  }
}

export default StdioLanguageServers
