// The session service over one store, booted in this process (no CLI): what the session benchmarks
// write and read through. Needs `npm run build`.
import { Context } from '@dsh/kernel'
import SessionService from '@dsh/session'
import SessionPersistence from '@dsh/session/store/coordinator'

/** Boots `ctx.sessions` with `store` (a store plugin) keeping its files in `dir`. */
export async function bootSessions(store, dir) {
  const ctx = new Context()
  const fibers = [ctx.plugin(SessionService), ctx.plugin(store, { dir }), ctx.plugin(SessionPersistence, {})]
  while (!ctx.get('sessionPersistence')) await new Promise((resolve) => setImmediate(resolve))
  return {
    ctx,
    dispose: async () => {
      for (const fiber of fibers.reverse()) await fiber.dispose()
    },
  }
}
