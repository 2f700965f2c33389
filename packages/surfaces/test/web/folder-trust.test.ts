// Folder trust through the web host: the page reads what a folder's configuration would enable and
// the person trusts it; the grant is recorded by content hash in the host's dsh home.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { call, startHost } from './harness.js'

let home: string
let project: string
beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'dsh-web-trust-'))
  project = join(home, 'checkout')
  mkdirSync(project)
  writeFileSync(join(project, '.mcp.json'), JSON.stringify({ mcpServers: { db: { command: 'db-server' } } }))
})
afterEach(() => rmSync(home, { recursive: true, force: true }))

describe('folder trust on the web', () => {
  it('shows the untrusted items, trusts them on POST, and an edit makes the file untrusted again', async () => {
    await using host = await startHost([], { cwd: project }, { settingsHome: home })
    const before = await call(host.base, 'GET', '/api/trust')
    expect(before.body).toEqual({
      folder: project,
      trusted: false,
      items: [{ kind: 'mcp', path: '.mcp.json', summary: 'MCP servers: db', admitted: false }],
    })
    const granted = await call(host.base, 'POST', '/api/trust', {})
    expect(granted.body).toMatchObject({ trusted: true, items: [{ path: '.mcp.json', admitted: true }] })
    const recorded = JSON.parse(readFileSync(join(home, 'trust.json'), 'utf8'))
    expect(Object.values(recorded.folders).map((folder) => Object.keys((folder as { items: object }).items))).toEqual([
      ['.mcp.json'],
    ])
    writeFileSync(join(project, '.mcp.json'), JSON.stringify({ mcpServers: { db: { command: 'other' } } }))
    expect((await call(host.base, 'GET', '/api/trust')).body).toMatchObject({
      trusted: true,
      items: [{ path: '.mcp.json', admitted: false }],
    })
  })
})
