// The questions a host holds for its client: an approval or an `ask_user` question waits here until
// the client answers, the asking turn aborts, or the host closes. The first settlement wins.
import { HarnessError } from '@dsh/kernel'

/** One question waiting for a person. */
export interface Pending<Q> {
  readonly id: string
  /** The question exactly as the owning seam asked it. */
  readonly question: Q
  /** Aborts when the asking turn is cancelled (the entry is then already settled). */
  readonly signal: AbortSignal
}

export class PendingRegistry<Q, A> {
  private readonly entries = new Map<string, { pending: Pending<Q>; settle(answer: A): void }>()

  constructor(
    /** Names the kind in `NOT_FOUND` errors: `approval` or `question`. */
    private readonly kind: 'approval' | 'question',
    private readonly onSettled: (id: string, answer: A) => void,
  ) {}

  /** Holds `question` until it is settled; `aborted` is the answer when `signal` aborts first. */
  ask(
    id: string,
    question: Q,
    signal: AbortSignal,
    aborted: A,
    onRequested: (pending: Pending<Q>) => void,
  ): Promise<A> {
    return new Promise((resolve) => {
      const settle = (answer: A) => {
        if (!this.entries.delete(id)) return
        signal.removeEventListener('abort', onAbort)
        this.onSettled(id, answer)
        resolve(answer)
      }
      const onAbort = () => settle(aborted)
      const pending: Pending<Q> = { id, question, signal }
      this.entries.set(id, { pending, settle })
      signal.addEventListener('abort', onAbort)
      onRequested(pending)
      if (signal.aborted) onAbort()
    })
  }

  list(): Pending<Q>[] {
    return [...this.entries.values()].map((entry) => entry.pending)
  }

  has(id: string): boolean {
    return this.entries.has(id)
  }

  /** Settles one entry. Throws `APPROVAL_NOT_FOUND` / `QUESTION_NOT_FOUND` when it is already settled. */
  settle(id: string, answer: A): void {
    const entry = this.entries.get(id)
    if (!entry) {
      const code = this.kind === 'approval' ? 'APPROVAL_NOT_FOUND' : 'QUESTION_NOT_FOUND'
      const fact = this.kind === 'approval' ? 'requestId' : 'questionId'
      throw new HarnessError(code, `no pending ${this.kind} ${id} (answered or cancelled)`, { [fact]: id })
    }
    entry.settle(answer)
  }

  /** Settles every entry with `answer` (the host is closing). */
  settleAll(answer: A): void {
    for (const entry of [...this.entries.values()]) entry.settle(answer)
  }
}
