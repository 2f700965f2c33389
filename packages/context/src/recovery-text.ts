// The words every surface shows for a retry (the terminal chat, `dsh run`'s stderr, the web page): one
// sentence a person reads while waiting. Browser-safe: no Node imports.

interface RetryFact {
  attempt: number
  maxAttempts: number
  code: string
  status?: number
  delayMs: number
}

const CAUSES: Record<string, string> = {
  RATE_LIMIT: 'rate limited',
  PROVIDER_UNAVAILABLE: 'the model provider is unavailable',
  NETWORK: 'cannot reach the model endpoint',
  TIMEOUT: 'the model did not answer in time',
}

function seconds(ms: number): string {
  return ms < 1000 ? `${Math.max(0, Math.round(ms))} ms` : `${Math.round(ms / 100) / 10} s`
}

/** "rate limited (HTTP 429), retrying in 2 s (2/4)". */
export function describeRetry(retry: RetryFact): string {
  const cause = CAUSES[retry.code] ?? retry.code.toLowerCase().replace(/_/g, ' ')
  const status = retry.status ? ` (HTTP ${retry.status})` : ''
  return `${cause}${status}, retrying in ${seconds(retry.delayMs)} (${retry.attempt}/${retry.maxAttempts})`
}

/** "gave up after 4 retries: ...". */
export function describeGiveUp(giveUp: { attempts: number; reason: string }): string {
  return `gave up after ${giveUp.attempts} ${giveUp.attempts === 1 ? 'retry' : 'retries'}: ${giveUp.reason}`
}
