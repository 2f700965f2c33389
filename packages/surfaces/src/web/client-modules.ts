// The browser-side plugins of one web host: rows register client modules (`ctx.webHost.
// registerClientModule`), the host serves each file under its content hash and tells every page the
// current manifest, at start (host baseline) and whenever the tree changes (`host/client-modules`).
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { isAbsolute } from 'node:path'
import { fileURLToPath } from 'node:url'
import { HarnessError } from '@dsh/kernel'
import type { ClientModuleEntry } from '../wire/types.js'
import type { ClientModuleSpec } from './index.js'

interface Registered {
  entry: ClientModuleEntry
  bytes: Buffer
}

const ID = /^[a-z0-9][a-z0-9_.-]{0,63}$/

/** The served path of a module: its id and the first 16 hex digits of the SHA-256 of its bytes. */
export const CLIENT_MODULE_PATH = /^\/api\/client-modules\/([a-z0-9][a-z0-9_.-]*)\.([0-9a-f]{16})\.js$/

export class ClientModules {
  private readonly modules = new Map<string, Registered>()
  private readonly listeners = new Set<(manifest: ClientModuleEntry[]) => void>()

  /**
   * Reads the file now (a module is what it was at registration; re-register to change it) and
   * returns the disposer that takes it out of the manifest. Throws `CLIENT_MODULE_INVALID` for a bad id,
   * an id already registered, or a file that cannot be read.
   */
  register(spec: ClientModuleSpec): () => void {
    if (!ID.test(spec.id))
      throw invalid(`client module id ${JSON.stringify(spec.id)} must be lowercase letters, digits, "-", "_" or "."`)
    if (this.modules.has(spec.id))
      throw invalid(`client module ${JSON.stringify(spec.id)} is already registered; give each module its own id`)
    const path = spec.path instanceof URL ? fileURLToPath(spec.path) : spec.path
    if (!isAbsolute(path)) throw invalid(`client module ${spec.id}: path ${JSON.stringify(path)} must be absolute`)
    let bytes: Buffer
    try {
      bytes = readFileSync(path)
    } catch (error) {
      throw invalid(`client module ${spec.id}: cannot read ${path} (${(error as Error).message})`)
    }
    const hash = createHash('sha256').update(bytes).digest('hex').slice(0, 16)
    const registered: Registered = {
      entry: { id: spec.id, hash, url: `/api/client-modules/${spec.id}.${hash}.js` },
      bytes,
    }
    this.modules.set(spec.id, registered)
    this.changed()
    return () => {
      if (this.modules.get(spec.id) !== registered) return
      this.modules.delete(spec.id)
      this.changed()
    }
  }

  /** The manifest a page loads, in registration order. */
  manifest(): ClientModuleEntry[] {
    return [...this.modules.values()].map((module) => module.entry)
  }

  /** The bytes of `id` when `hash` is its current hash (an old hash is gone with its version). */
  file(id: string, hash: string): Buffer | undefined {
    const module = this.modules.get(id)
    return module?.entry.hash === hash ? module.bytes : undefined
  }

  /** Calls `listener` with the new manifest after every change; returns the unsubscriber. */
  onChange(listener: (manifest: ClientModuleEntry[]) => void): () => void {
    this.listeners.add(listener)
    return () => void this.listeners.delete(listener)
  }

  private changed(): void {
    const manifest = this.manifest()
    for (const listener of this.listeners) listener(manifest)
  }
}

function invalid(message: string): HarnessError {
  return new HarnessError('CLIENT_MODULE_INVALID', message, {})
}
