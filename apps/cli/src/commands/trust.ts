// `dsh trust [PATH]`: trust a folder's configuration that can run code or reach the network (its
// `.mcp.json`, hooks, presets with rows, project settings), as it is now; `--revoke` forgets it;
// `--list` names the trusted folders. What was trusted is recorded by content hash, so a later edit
// of any of those files makes it inert again until the folder is trusted anew.
import { resolve } from 'node:path'
import { dshHome } from '@dsh/composition'
import { FolderTrust, type ItemState } from '@dsh/settings/trust'
import type { ComposeRequest } from '../config.js'
import type { Io } from '../io.js'

export interface TrustOptions {
  revoke?: boolean
  list?: boolean
  json?: boolean
}

export function describeItems(
  items: ReadonlyArray<Pick<ItemState, 'path' | 'summary'> & { admitted?: boolean }>,
): string[] {
  return items.map(
    (item) =>
      `  ${item.path}: ${item.summary}${item.admitted === undefined ? '' : item.admitted ? '' : ' (not trusted)'}`,
  )
}

export async function trust(
  request: ComposeRequest,
  path: string | undefined,
  options: TrustOptions,
  io: Io,
): Promise<number> {
  const store = new FolderTrust(dshHome(request.env ?? process.env))
  if (options.list) {
    const folders = store.folders()
    if (options.json) io.out(JSON.stringify(folders, null, 2))
    else if (folders.length === 0) io.out('no trusted folders')
    else
      for (const folder of folders)
        io.out(`${folder.folder}  (trusted ${folder.trustedAt}, ${Object.keys(folder.items).length} items)`)
    return 0
  }
  const folder = resolve(request.cwd ?? process.cwd(), path ?? '.')
  if (options.revoke) {
    const was = store.revoke(folder)
    io.out(was ? `${folder}: no longer trusted` : `${folder} was not trusted`)
    return 0
  }
  const record = store.grant(folder)
  const items = store.status(folder)
  if (options.json) {
    io.out(JSON.stringify({ folder, trustedAt: record.trustedAt, items }, null, 2))
    return 0
  }
  io.out(`${folder}: trusted`)
  if (items.length === 0) io.out('  (it has no configuration that runs code; files added later ask again)')
  else {
    io.out('  these now load, as they are now (an edit makes one inert until you trust the folder again):')
    for (const line of describeItems(items)) io.out(line)
  }
  return 0
}
