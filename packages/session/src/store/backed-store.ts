// The `ctx.sessionStore` service of a provider whose work is done by a plain backend object (Cordis
// hands out a proxy of a service, so state lives in the backend; tests swap its methods).
import { type Context, Service } from '@dsh/kernel'
import type { SessionStore, SessionSummary, StoredSession, WriteBatch } from './index.js'

/** The operations every provider's backend has; optional ones stay on the provider. */
export type StoreBackend = Pick<SessionStore, 'locate' | 'write' | 'read' | 'repairTail' | 'summaries' | 'release'> &
  Required<Pick<SessionStore, 'remove'>>

export abstract class BackedStore extends Service implements SessionStore {
  abstract readonly kind: string
  abstract readonly leaseDir: string
  abstract readonly backend: StoreBackend

  constructor(ctx: Context) {
    super(ctx, 'sessionStore')
  }

  locate(id: string): string {
    return this.backend.locate(id)
  }
  write(id: string, batch: WriteBatch): Promise<void> {
    return this.backend.write(id, batch)
  }
  read(id: string): Promise<StoredSession | undefined> {
    return this.backend.read(id)
  }
  repairTail(id: string, stored: StoredSession): Promise<void> {
    return this.backend.repairTail(id, stored)
  }
  summaries(): Promise<SessionSummary[]> {
    return this.backend.summaries()
  }
  remove(id: string): Promise<boolean> {
    return this.backend.remove(id)
  }
  release(id: string): Promise<void> {
    return this.backend.release(id)
  }
}
