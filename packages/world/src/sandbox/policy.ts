// @dsh/world/sandbox/policy: `ctx.sandboxPolicy`. The mode of a session comes from (newest first) a
// switch in this process, the session log's last `sandbox/mode` event, the configured default.
// Writable roots are derived from the mode: the workspace plus the temp dirs, canonicalized. A ceiling
// (the row's `ceiling`, a child's bound to its parent) clamps whatever the session asked for: a child
// never exceeds its parent (issue 34, docs/decisions/430-children-bounded-by-their-parent.md).
import { homedir, tmpdir } from 'node:os'
import type {} from '@dsh/agent/approval'
import { type Context, directService, HarnessError, Service } from '@dsh/kernel'
import type { Session, SessionService } from '@dsh/session'
import type {} from '@dsh/settings/credentials'
import {
  canonicalPath as canonical,
  checkMode,
  isNetworkPolicy,
  isSandboxMode,
  type NetworkPolicy,
  narrowest,
  type PermissionPreset,
  type SandboxMode,
  type SandboxPolicy,
  type SandboxPolicyService,
} from './index.js'
import { dshHomePaths, type ProtectedPath, protectedPaths } from './protected.js'
import { secretPaths, userRuntime } from './secrets.js'

export { BROWSER_PROFILES, HOME_SECRETS, homeSecrets } from './secrets.js'

export interface SandboxPolicyConfig {
  /** The mode of sessions that never switched. Default `read-only` (the fail-safe; bundles override). */
  mode?: SandboxMode
  /** The workspace. Default: the session's cwd, else the process cwd. */
  workspaceRoot?: string
  /** Extra writable roots for workspace-write (besides the workspace and the temp dirs). */
  writableRoots?: string[]
  /** Permission presets by name; `setMode` accepts a preset name or a mode. Defaults: one per mode. */
  presets?: Record<string, PermissionPreset>
  /** Network of confined commands for sessions that never chose one. Default `on`. */
  network?: NetworkPolicy
  /** More paths hidden from confined calls, besides the built-in list (`~/` is the home). */
  secretPaths?: string[]
  /** The user's home for the built-in secret list. Default: the OS home directory. */
  home?: string
  /**
   * The user's runtime directory and agent sockets, hidden whole. Default: `/run/user/$UID` on Linux
   * plus the sockets `SSH_AUTH_SOCK`, `DBUS_SESSION_BUS_ADDRESS` and `GPG_AGENT_INFO` name.
   */
  runtime?: string[]
  /** More paths writes need approval for (relative to the workspace, or absolute), besides the built-in list. */
  protectedPaths?: string[]
  /**
   * The widest mode any session of this process may have (default `danger-full-access`: no ceiling).
   * A parent dsh sets it for a dsh it starts as an ACP child (`DSH_SANDBOX_CEILING`).
   */
  ceiling?: SandboxMode
  /** `off`: no session of this process reaches the network (`DSH_SANDBOX_NETWORK_CEILING`). Default `on`. */
  networkCeiling?: NetworkPolicy
}

/** What bounds a session: the narrowest mode and network it may have. */
interface Ceiling {
  mode: SandboxMode
  network: NetworkPolicy
}

type Logged = { read: number; mode?: SandboxMode; network?: NetworkPolicy; bound?: Ceiling }

export const DEFAULT_PRESETS: Readonly<Record<string, PermissionPreset>> = Object.freeze({
  'read-only': { mode: 'read-only', approval: 'ask' },
  'workspace-write': { mode: 'workspace-write', approval: 'ask' },
  'danger-full-access': { mode: 'danger-full-access', approval: 'never' },
  offline: { mode: 'workspace-write', approval: 'ask', network: 'off' },
})

export class LocalSandboxPolicy extends Service implements SandboxPolicyService {
  static readonly provide = 'sandboxPolicy'
  private readonly overrides = new Map<string, SandboxMode>()
  private readonly networkOverrides = new Map<string, NetworkPolicy>()
  private readonly defaultMode: SandboxMode
  private readonly defaultNetwork: NetworkPolicy
  private readonly presetTable: Record<string, PermissionPreset>
  protected readonly config: SandboxPolicyConfig
  private readonly home: Context
  // Asked on every tool call and sandbox note: read without Cordis's per-call proxies (decision 351).
  private readonly sessions: () => SessionService | undefined
  private readonly credentials: () => Context['credentials'] | undefined
  /** The last logged mode and network of each session, and how far its log was read for them. */
  private readonly logged = new WeakMap<Session, Logged>()
  /** Live children bound to their parent session (`bind`): a parent that narrows narrows them. */
  private readonly parents = new Map<string, string>()
  private readonly ceiling: Ceiling

  constructor(ctx: Context, config: SandboxPolicyConfig = {}) {
    super(ctx, 'sandboxPolicy')
    this.home = ctx
    this.sessions = directService(ctx, 'sessions')
    this.credentials = directService(ctx, 'credentials')
    this.config = config ?? {}
    this.defaultMode = checkMode(this.config.mode ?? 'read-only', 'sandboxPolicy config mode')
    this.defaultNetwork = checkNetwork(this.config.network ?? 'on', 'sandboxPolicy config network')
    this.presetTable = { ...DEFAULT_PRESETS, ...(this.config.presets ?? {}) }
    this.ceiling = {
      mode: checkMode(this.config.ceiling ?? 'danger-full-access', 'sandboxPolicy config ceiling'),
      network: checkNetwork(this.config.networkCeiling ?? 'on', 'sandboxPolicy config networkCeiling'),
    }
    // A resumed session gets its preset's approval policy back (the mode itself is read from the log).
    ctx.on('session/restored', (session) => {
      const approval = ctx.get('approval')
      const logged = session.events.some((event) => event.type === 'sandbox/mode')
      const preset = logged ? this.presetTable[this.mode(session.id)] : undefined
      if (approval && preset) approval.setPolicy(session.id, preset.approval)
    })
    for (const [name, preset] of Object.entries(this.presetTable)) {
      checkMode(preset?.mode, `sandboxPolicy preset ${name}`)
      if (preset.network !== undefined) checkNetwork(preset.network, `sandboxPolicy preset ${name} network`)
      if (preset.approval !== 'ask' && preset.approval !== 'never') {
        throw new HarnessError(
          'SANDBOX_MODE_INVALID',
          `sandboxPolicy preset ${name}: approval must be "ask" or "never"`,
          {
            preset: name,
          },
        )
      }
    }
  }

  presets(): Readonly<Record<string, PermissionPreset>> {
    return this.presetTable
  }

  mode(sessionId?: string): SandboxMode {
    return narrowest(this.ownMode(sessionId), this.ceilingOf(sessionId).mode)
  }

  /** The session's network: a switch in this process, else its last logged choice, else the default. */
  network(sessionId?: string): NetworkPolicy {
    return this.ceilingOf(sessionId).network === 'off' ? 'off' : this.ownNetwork(sessionId)
  }

  /** The mode the session chose (or was given), before any ceiling. */
  private ownMode(sessionId: string | undefined): SandboxMode {
    if (sessionId === undefined) return this.defaultMode
    return this.overrides.get(sessionId) ?? this.fromLog(sessionId)?.mode ?? this.defaultMode
  }

  private ownNetwork(sessionId: string | undefined): NetworkPolicy {
    if (sessionId === undefined) return this.defaultNetwork
    return this.networkOverrides.get(sessionId) ?? this.fromLog(sessionId)?.network ?? this.defaultNetwork
  }

  /**
   * The widest the session may be: the row's ceiling, the bound its log records, and (while the child
   * is bound in this process) its parent's current mode and network, so a parent that narrows later
   * narrows its children too. `seen` stops a cycle a hand-edited log could make.
   */
  private ceilingOf(sessionId: string | undefined, seen = new Set<string>()): Ceiling {
    let { mode, network } = this.ceiling
    if (sessionId === undefined || seen.has(sessionId)) return { mode, network }
    seen.add(sessionId)
    const bounds = [this.fromLog(sessionId)?.bound]
    const parent = this.parents.get(sessionId)
    if (parent !== undefined) {
      const above = this.ceilingOf(parent, seen)
      bounds.push({
        mode: narrowest(this.ownMode(parent), above.mode),
        network: above.network === 'off' ? 'off' : this.ownNetwork(parent),
      })
    }
    for (const bound of bounds) {
      if (!bound) continue
      mode = narrowest(mode, bound.mode)
      if (bound.network === 'off') network = 'off'
    }
    return { mode, network }
  }

  bind(childSessionId: string, parentSessionId: string): { mode: SandboxMode; dispose(): void } {
    if (childSessionId === parentSessionId) {
      throw new HarnessError('SANDBOX_MODE_INVALID', 'sandboxPolicy.bind: a session cannot bound itself', {
        session: childSessionId,
      })
    }
    this.parents.set(childSessionId, parentSessionId)
    const bound = { session: parentSessionId, mode: this.mode(parentSessionId), network: this.network(parentSessionId) }
    const mode = this.mode(childSessionId)
    const network = this.network(childSessionId)
    const requested = this.ownMode(childSessionId)
    this.session(childSessionId)?.append('sandbox/mode', {
      mode,
      network,
      ...(requested === mode ? {} : { requested }),
      bound,
    })
    this.overrides.set(childSessionId, mode)
    this.networkOverrides.set(childSessionId, network)
    return {
      mode,
      dispose: () => {
        if (this.parents.get(childSessionId) === parentSessionId) this.parents.delete(childSessionId)
      },
    }
  }

  /**
   * The session's last logged mode and network (each checked, not trusted: a log may name a preset, or
   * come from a hand-edited file). Reads only the events appended since the last call: the log only grows.
   */
  private fromLog(sessionId: string): Logged | undefined {
    const session = this.session(sessionId)
    if (!session) return undefined
    let seen = this.logged.get(session)
    if (!seen) {
      seen = { read: 0 }
      this.logged.set(session, seen)
    }
    const events = session.events
    for (; seen.read < events.length; seen.read++) {
      const event = events[seen.read]
      if (event?.type !== 'sandbox/mode') continue
      const mode: unknown = event.data.mode
      const named = isSandboxMode(mode) ? mode : this.presetTable[String(mode)]?.mode
      if (named) seen.mode = named
      const network: unknown = event.data.network
      if (isNetworkPolicy(network)) seen.network = network
      // A bound only ever narrows: a later event cannot lift an earlier one.
      const bound: unknown = event.data.bound
      if (bound && typeof bound === 'object') {
        const { mode: max, network: net } = bound as { mode?: unknown; network?: unknown }
        const boundMode = isSandboxMode(max) ? max : 'read-only'
        seen.bound = {
          mode: seen.bound ? narrowest(seen.bound.mode, boundMode) : boundMode,
          network: net === 'on' && seen.bound?.network !== 'off' ? 'on' : 'off',
        }
      }
    }
    return seen
  }

  resolve(sessionId?: string, mode?: SandboxMode): SandboxPolicy {
    const effective = mode === undefined ? this.mode(sessionId) : checkMode(mode, 'sandboxPolicy.resolve')
    const workspace = this.canonical(
      this.config.workspaceRoot ??
        (sessionId ? this.session(sessionId)?.header.cwd : undefined) ??
        this.defaultWorkspace(),
    )
    const writable =
      effective === 'read-only'
        ? []
        : [
            ...new Set([
              workspace,
              ...this.tempRoots(),
              ...(this.config.writableRoots ?? []).map((root) => this.canonical(root)),
            ]),
          ]
    const confined = effective !== 'danger-full-access'
    const location = this.location()
    const policy = {
      mode: effective,
      workspaceRoot: workspace,
      writableRoots: Object.freeze(writable),
      secretPaths: Object.freeze(confined ? this.secretsFor(workspace) : []),
      network: confined ? this.network(sessionId) : 'on',
      ...(location === undefined ? {} : { location }),
    }
    // Worked out on first read: the system prompt resolves a policy on every request and never reads
    // them; the fence and the sandboxes read them at once, from the same resolve.
    let guarded: readonly ProtectedPath[] | undefined
    Object.defineProperty(policy, 'protectedPaths', {
      enumerable: true,
      get: () => (guarded ??= Object.freeze(confined ? this.guardedFor(workspace) : [])),
    })
    return Object.freeze(policy) as SandboxPolicy
  }

  // The machine-specific parts of a policy. A remote execution world overrides them with that
  // machine's paths; modes, presets and the logged mode stay the same.

  /** The canonical form of a path on the machine tools run on. */
  protected canonical(path: string): string {
    return canonical(path)
  }

  /** The workspace of calls without a session. */
  protected defaultWorkspace(): string {
    return process.cwd()
  }

  /** The temp directories writable under workspace-write. */
  protected tempRoots(): string[] {
    return [canonical('/tmp'), canonical(tmpdir())]
  }

  /** The workspace's protected names, the policy's own, and dsh's home. */
  protected guardedFor(workspace: string): ProtectedPath[] {
    const canonicalOf = (path: string) => this.canonical(path)
    const home = this.credentials()?.home
    return [
      ...protectedPaths(workspace, canonicalOf, this.config.protectedPaths),
      ...(home ? dshHomePaths(home, workspace, canonicalOf) : []),
    ]
  }

  /** The existing credential stores hidden from confined calls. */
  protected secretsFor(workspace: string): string[] {
    return secretPaths({
      home: this.config.home ?? homedir(),
      dshHome: this.credentials()?.home,
      workspace,
      extra: this.config.secretPaths,
      runtime: this.config.runtime ?? userRuntime(),
    })
  }

  /** Where the tools work, when it is not this machine (e.g. `on the remote machine ...`). */
  protected location(): string | undefined {
    return undefined
  }

  setMode(
    sessionId: string,
    modeOrPreset: SandboxMode | string,
    options: { network?: NetworkPolicy | string } = {},
  ): SandboxMode {
    const preset = this.presetTable[modeOrPreset]
    const wanted = preset ? preset.mode : checkMode(modeOrPreset, 'sandboxPolicy.setMode')
    const wantedNetwork = checkNetwork(
      options.network ?? preset?.network ?? this.network(sessionId),
      'sandboxPolicy.setMode network',
    )
    // A ceiling clamps rather than refuses: the session runs, never wider than it may, and its log
    // says what was asked and what it got.
    const ceiling = this.ceilingOf(sessionId)
    const mode = narrowest(wanted, ceiling.mode)
    const network = ceiling.network === 'off' ? 'off' : wantedNetwork
    const clamped = mode !== wanted
    const previous = this.mode(sessionId)
    this.session(sessionId)?.append('sandbox/mode', { mode, network, ...(clamped ? { requested: modeOrPreset } : {}) })
    this.overrides.set(sessionId, mode)
    this.networkOverrides.set(sessionId, network)
    const approval = this.ctx.get('approval')
    const binding = clamped ? this.presetTable[mode] : (preset ?? this.presetTable[mode])
    if (approval && binding) approval.setPolicy(sessionId, binding.approval)
    this.ctx.emit('sandbox/mode-changed', { sessionId, mode, previous })
    return mode
  }

  private session(sessionId: string) {
    return (this.sessions() ?? this.ctx.get('sessions'))?.get(sessionId)
  }
}

function checkNetwork(value: unknown, where: string): NetworkPolicy {
  if (!isNetworkPolicy(value)) {
    throw new HarnessError('SANDBOX_MODE_INVALID', `${where}: network must be "on" or "off"`, { value: String(value) })
  }
  return value
}

export default LocalSandboxPolicy
