// A registry for the `@dsh` scope only, serving the tarballs `npm pack` made: the install test points
// npm's scoped registry at it (`npm_config_@dsh:registry`), so `@dsh/*` comes from this checkout's
// tarballs and never from npmjs.org, where the names may belong to somebody else. Third-party packages
// still come from the configured registry (or npm's cache).
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'

export interface ScopeRegistry {
  url: string
  /** Package names requested so far (proof the install went through this registry). */
  served: Set<string>
  close(): Promise<void>
}

interface Entry {
  manifest: Record<string, unknown> & { name: string; version: string }
  file: string
}

function readTarballs(dir: string): Map<string, Entry> {
  const entries = new Map<string, Entry>()
  for (const file of readdirSync(dir).filter((name) => name.endsWith('.tgz'))) {
    const path = join(dir, file)
    const manifest = JSON.parse(execFileSync('tar', ['-xzOf', path, 'package/package.json'], { encoding: 'utf8' }))
    entries.set(manifest.name, { manifest, file: path })
  }
  return entries
}

export async function startScopeRegistry(tarballDir: string): Promise<ScopeRegistry> {
  const entries = readTarballs(tarballDir)
  const served = new Set<string>()
  let url = ''
  const packument = (entry: Entry) => {
    const bytes = readFileSync(entry.file)
    const { name, version } = entry.manifest
    return {
      name,
      'dist-tags': { latest: version },
      versions: {
        [version]: {
          ...entry.manifest,
          _id: `${name}@${version}`,
          dist: {
            tarball: `${url}/-/${encodeURIComponent(name)}/${version}.tgz`,
            integrity: `sha512-${createHash('sha512').update(bytes).digest('base64')}`,
            shasum: createHash('sha1').update(bytes).digest('hex'),
          },
        },
      },
    }
  }
  const server: Server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname)
    const tarball = /^\/-\/(.+)\/[^/]+\.tgz$/.exec(path)
    const entry = entries.get(tarball ? (tarball[1] as string) : path.slice(1))
    if (!entry) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not found"}')
      return
    }
    served.add(entry.manifest.name)
    if (tarball) res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(readFileSync(entry.file))
    else res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(packument(entry)))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return { url, served, close: () => new Promise((resolve) => server.close(() => resolve())) }
}
