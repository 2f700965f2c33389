// How the CLI turns its options into layers and an effective tree, for dump and for boot alike.
import { mkdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import {
  applyLayers,
  dshHome,
  type EffectiveTree,
  type Layer,
  loadProfile,
  profileLayers,
  type RowSpec,
  userPatchFiles,
} from '@dsh/composition'
import { peekStringSetting } from '@dsh/settings'
import { parseRemote, REMOTE_ENV, type RemoteSpec } from '@dsh/ssh'
import { remoteWorldRows } from '@dsh/ssh/world'

export interface GlobalOptions {
  profile?: string
  patch?: string[]
  watchConfig?: boolean
  dumpConfig?: boolean
  dumpDefaultConfig?: boolean
  /** `--set KEY=VALUE`: the flag layer of ctx.settings. */
  set?: string[]
  /** `--trust`: load the folder's gated project configuration for this run without recording trust. */
  trust?: boolean
}

export const templatesDir = fileURLToPath(new URL('../profiles', import.meta.url))
const cliDir = fileURLToPath(new URL('..', import.meta.url))
/** How to start this CLI again (a child `dsh acp` of the ACP subagent provider). */
const selfArgv = [process.execPath, fileURLToPath(new URL('../bin/dsh.js', import.meta.url))]

export interface Composition {
  home: string
  profile: string
  layers: Layer[]
  tree: EffectiveTree
  /** The user patch files (existing or not) that `--watch-config` watches. */
  patchFiles: string[] /** The remote machine the execution world runs on (`--remote` or the `remote` setting). */
  remote?: RemoteSpec
}

export interface ComposeRequest {
  options: GlobalOptions
  /** The subcommand whose default profile applies when --profile is absent. */
  command: string
  args?: string[]
  cwd?: string
  env?: Readonly<Record<string, string | undefined>>
  defaultsOnly?: boolean
  /** Rows the command itself adds after the launcher row (e.g. `dsh demo`'s replay adapter). */
  launcherRows?: RowSpec[] /** `--remote user@host:/path`: the SSH execution world (else the `remote` setting, if set). */
  remote?: string
  /**
   * Only settings are needed (`dsh config`): no session store is opened and no remote machine reached,
   * so a database or host that is down does not keep the settings from being read or repaired.
   */
  settingsOnly?: boolean
}

/** The session-store row of the base bundle: it declares `session.store` and opens the store. */
const STORE_SELECT = '@dsh/session/store-pg/select'

/** The surface commands whose own profile is the default; every other command uses headless. */
const SURFACE_PROFILES: Record<string, string> = { web: 'web', chat: 'tui' }

/** The profile a command uses: --profile, else $DSH_PROFILE, else the surface's own (`web`, `tui`), else headless. */
export function profileName(request: ComposeRequest): string {
  const env = request.env ?? process.env
  return request.options.profile ?? env.DSH_PROFILE ?? SURFACE_PROFILES[request.command] ?? 'headless'
}

/** Composes the effective tree with the same layer code that boot uses. */
export function compose(request: ComposeRequest): Composition {
  const env = request.env ?? process.env
  const cwd = request.cwd ?? process.cwd()
  const home = dshHome(env)
  // Sessions, credentials and settings live here: a fresh home is the user's alone (an existing one
  // keeps the mode its owner gave it).
  mkdirSync(home, { recursive: true, mode: 0o700 })
  const name = profileName(request)
  const profile = loadProfile(home, name, templatesDir)
  const launcherRows: RowSpec[] = [
    {
      id: 'launcher',
      use: '@dsh/composition/launcher',
      config: {
        command: request.command,
        args: request.args ?? [],
        cwd,
        profile: name,
        home,
        self: selfArgv,
        ...(request.options.trust ? { trustFolder: true } : {}),
      },
    },
    ...(request.launcherRows ?? []),
  ]
  const layers = profileLayers({
    home,
    profile,
    patches: request.options.patch,
    cwd,
    launcherRows,
    defaultsOnly: request.defaultsOnly,
  })
  const patchFiles = userPatchFiles({ home, profile, patches: request.options.patch, cwd })
  let tree = applyLayers(layers, cliDir)
  if (request.settingsOnly) {
    const rows = tree.rows.map((row) =>
      row.use === STORE_SELECT ? { ...row, config: { ...(row.config as object | undefined), open: false } } : row,
    )
    return { home, profile: name, layers, tree: { ...tree, rows }, patchFiles }
  }
  const remote =
    request.remote !== undefined
      ? { value: request.remote, source: '--remote' }
      : peekStringSetting('remote', {
          home,
          cwd,
          env,
          envName: REMOTE_ENV,
          flags: request.options.set,
          trustFolder: request.options.trust === true,
        })
  if (remote === undefined || request.defaultsOnly) return { home, profile: name, layers, tree, patchFiles }
  // The execution world is swapped as a group: the same rows with their SSH providers.
  const target = parseRemote(remote.value)
  layers.push({
    kind: 'launcher',
    label: `remote world (${remote.source})`,
    rows: remoteWorldRows(tree.rows, remote.value),
  })
  tree = applyLayers(layers, cliDir)
  return { home, profile: name, layers, tree, patchFiles, remote: target }
}
