// Folder trust on the wire: the page shows what a folder's configuration would enable before any of
// it loads, and the person at the page trusts it. A grant is a control-plane change: the web host
// serves it only to a request that carries the page's access token, as every other route.
import { projectTrust } from '@dsh/settings/trust'
import { op } from './operation.js'
import { Schema as S } from './schema.js'
import type { FolderTrustView } from './types.js'

const cwdParams = S.object({ cwd: S.string({ description: 'the folder (default: the host’s own)' }) })

export const trustOperations = {
  'trust/status': op({
    summary:
      'The folder’s configuration that can run code or reach the network, and whether each item is trusted as it is now.',
    params: cwdParams,
    errors: ['TRUST_FILE_INVALID'],
    rpc: true,
    web: { method: 'GET', path: '/api/trust' },
    handler: (_host, params, scope): FolderTrustView => {
      const folder = scope.cwd(params.cwd, 'read')
      const trust = projectTrust(scope.ctx)
      return { folder, trusted: trust.record(folder) !== undefined, items: trust.status(folder) }
    },
  }),
  'trust/grant': op({
    summary:
      'Trusts the folder’s configuration as it is now (what `dsh trust` does). MCP servers and hooks read at start load when dsh restarts; presets and settings at once.',
    params: cwdParams,
    errors: ['TRUST_FILE_INVALID'],
    rpc: {
      off: 'a person trusts a folder: at the page, in the chat’s prompt or with `dsh trust`; a program passes --trust',
    },
    web: { method: 'POST', path: '/api/trust' },
    handler: (_host, params, scope): FolderTrustView => {
      const folder = scope.cwd(params.cwd, 'read')
      const trust = projectTrust(scope.ctx)
      trust.grant(folder)
      return { folder, trusted: true, items: trust.status(folder) }
    },
  }),
}
