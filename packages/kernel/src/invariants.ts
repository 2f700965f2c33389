// The invariants registry (`ctx.invariants`): packages register runtime checks of the relations they
// own; tests and debug surfaces run them all. A failing check is reported under its owning package.
import { type Context, Service } from 'cordis'
import { HarnessError } from './errors.js'

declare module 'cordis' {
  interface Context {
    invariants: InvariantsService
  }
}

/**
 * A check returns nothing when the relation holds, or one or more messages describing what is broken.
 * Throwing counts as a violation too (with the thrown message).
 */
export type InvariantCheck = () => void | string | string[]

export interface InvariantViolation {
  /** The package that registered the check, e.g. `@dsh/session`. */
  owner: string
  /** The relation's name, unique within its owner. */
  name: string
  message: string
}

interface Registration {
  owner: string
  name: string
  check: InvariantCheck
}

export class InvariantsService extends Service {
  static readonly provide = 'invariants'
  // Not a #private field: Cordis hands callers a proxy of the service, which #fields reject.
  private readonly checks = new Map<string, Registration>()

  constructor(ctx: Context) {
    super(ctx, 'invariants')
  }

  /**
   * Registers a check for the lifetime of the calling plugin (an effect on its fiber).
   * Throws `DUPLICATE_INVARIANT` when `owner/name` is already registered.
   */
  register(owner: string, name: string, check: InvariantCheck): () => void {
    const key = `${owner}/${name}`
    return this.ctx.effect(() => {
      if (this.checks.has(key)) {
        throw new HarnessError('DUPLICATE_INVARIANT', `invariant ${key} is already registered`, { owner, name })
      }
      this.checks.set(key, { owner, name, check })
      return () => {
        this.checks.delete(key)
      }
    }, `invariants.register(${key})`)
  }

  /** Names of the registered checks, as `owner/name`. */
  list(): string[] {
    return [...this.checks.keys()]
  }

  /** Runs every registered check and returns the violations (empty when all hold). */
  run(): InvariantViolation[] {
    const violations: InvariantViolation[] = []
    for (const { owner, name, check } of this.checks.values()) {
      let result: ReturnType<InvariantCheck>
      try {
        result = check()
      } catch (error) {
        result = error instanceof Error ? error.message : String(error)
      }
      const messages = result === undefined ? [] : Array.isArray(result) ? result : [result]
      for (const message of messages) violations.push({ owner, name, message })
    }
    return violations
  }

  /** Runs every check; throws `INVARIANT_VIOLATED` naming each failing package and relation. */
  assert(): void {
    const violations = this.run()
    if (violations.length === 0) return
    const lines = violations.map((v) => `${v.owner}: ${v.name}: ${v.message}`)
    throw new HarnessError('INVARIANT_VIOLATED', `invariants violated:\n${lines.join('\n')}`, { violations })
  }
}

export default InvariantsService
