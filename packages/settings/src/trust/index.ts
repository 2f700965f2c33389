// @dsh/settings/trust: folder trust. A folder's configuration that can run code, reach the network or
// change what dsh sends (`projectConfigItems`) is inert until the user trusts the folder (`dsh trust`,
// the prompt of the terminal chat and the web page, or `--trust` for one run). Every reader of such a
// file asks `projectTrust(ctx).admits(folder, path)` before it loads it.
import { homedir } from 'node:os'
import { join, resolve } from 'node:path'
import type {} from '@dsh/composition'
import type { Context } from '@dsh/kernel'
import type {} from '../index.js'
import { FolderTrust } from './store.js'

export { projectConfigItems, type TrustItem, type TrustItemKind } from './items.js'
export {
  contentHash,
  type FolderRecord,
  FolderTrust,
  type FolderTrustOptions,
  folderKey,
  type ItemState,
} from './store.js'

const instances = new Map<string, FolderTrust>()

/**
 * The trust record of this process's dsh home: `home` when a row names its own, else the settings
 * service's, else the launcher's home (else $DSH_HOME, else ~/.dsh).
 */
export function projectTrust(ctx: Context, home?: string): FolderTrust {
  const settings = ctx.get('settings')
  const launcher = ctx.get('launcher')?.config
  if (settings && (home === undefined || resolve(home) === settings.trust.home)) return settings.trust
  const dir = resolve(home ?? launcher?.home ?? process.env.DSH_HOME ?? join(homedir(), '.dsh'))
  const assume = launcher?.trustFolder === true
  const key = `${dir}\0${assume}\0${launcher?.cwd ?? ''}`
  let trust = instances.get(key)
  if (!trust) {
    trust = new FolderTrust(dir, { assume, ...(launcher?.cwd ? { cwd: launcher.cwd } : {}) })
    instances.set(key, trust)
  }
  return trust
}
