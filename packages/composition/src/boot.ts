// Boot: apply an effective tree under a fresh root, wait for it to settle, audit it. A tree that does
// not fully activate is disposed and reported; dsh never runs half a product.
import { HarnessError } from '@dsh/kernel'
import type { EffectiveTree } from './layers.js'
import { type AuditEntry, formatAudit, type RuntimeOptions, TreeRuntime } from './runtime.js'

/**
 * Boots `tree`. Resolves with the running tree when every enabled row is active. Otherwise disposes
 * what was built (rows in reverse order) and throws `BOOT_FAILED` whose facts list the audit entries
 * (but those `options.tolerate` accepts).
 */
export async function boot(
  tree: EffectiveTree,
  options: RuntimeOptions & {
    /** Audit entries that do not stop the boot (`dsh config` runs without the rows a session store feeds). */
    tolerate?: (entry: AuditEntry) => boolean
  } = {},
): Promise<TreeRuntime> {
  const runtime = new TreeRuntime(options)
  let audit: AuditEntry[]
  try {
    await runtime.apply(tree)
    audit = (await runtime.audit()).filter((entry) => !options.tolerate?.(entry))
  } catch (error) {
    await runtime.dispose()
    throw error
  }
  if (audit.length > 0) {
    await runtime.dispose()
    throw new HarnessError('BOOT_FAILED', `these rows did not activate:\n${formatAudit(audit)}`, { audit })
  }
  return runtime
}
