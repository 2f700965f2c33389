// `dsh sessions verify ID|FILE [--signature FILE --key PUBLIC]` and `dsh sessions sign ID --key PRIVATE`:
// the stored hash chain checked event by event (the first altered, missing or moved event named), and
// its head signed with the user's key or checked against such a signature.
import { readFileSync, statSync, writeFileSync } from 'node:fs'
import { HarnessError } from '@dsh/kernel'
import { type ChainVerdict, resolveSessionId, type SessionStore, verifyLines } from '@dsh/session/store'
import type { ComposeRequest } from '../config.js'
import { ExitCode } from '../exit-codes.js'
import type { Io } from '../io.js'
import { withRuntime } from '../runtime.js'
import { checkSignature, readSignature, signHead } from '../session-signature.js'

async function verdictOf(store: SessionStore, id: string): Promise<{ id: string; verdict: ChainVerdict }> {
  if (!store.verify) {
    throw new HarnessError(
      'NOT_AVAILABLE',
      `the ${store.kind ?? 'configured'} session store keeps no hash chain yet (the JSONL store does)`,
      {},
    )
  }
  const full = await resolveSessionId(store, id).catch(() => id)
  return { id: full, verdict: await store.verify(full) }
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile()
  } catch {
    return false
  }
}

/** A session file as `dsh sessions export ID --format jsonl` writes it (the stored lines, chain included). */
function fileVerdict(path: string): { id: string; verdict: ChainVerdict } {
  const buffer = readFileSync(path)
  let id = path
  try {
    const first = buffer.toString('utf8', 0, Math.max(0, buffer.indexOf(0x0a)))
    const header = JSON.parse(first) as { id?: unknown }
    if (typeof header.id === 'string') id = header.id
  } catch {}
  return { id, verdict: verifyLines(buffer) }
}

export async function sessionsVerify(
  request: ComposeRequest,
  id: string,
  options: { signature?: string; key?: string; json?: boolean },
  io: Io,
): Promise<number> {
  if ((options.signature === undefined) !== (options.key === undefined))
    throw new HarnessError('USAGE', '--signature FILE and --key PUBLIC_KEY go together', {})
  const check = async (found: { id: string; verdict: ChainVerdict }) => {
    const { id: sessionId, verdict } = found
    let signed: { ok: true } | { ok: false; why: string } | undefined
    if (verdict.ok && options.signature && options.key) {
      const head = { sessionId, events: verdict.events, lastHash: verdict.lastHash }
      signed = await checkSignature(readSignature(options.signature), head, options.key)
    }
    const ok = verdict.ok && (signed === undefined || signed.ok)
    if (options.json) io.out(JSON.stringify({ sessionId, ...verdict, ...(signed ? { signature: signed } : {}) }))
    else if (!verdict.ok) io.out(`${sessionId}: NOT verified: ${verdict.message}`)
    else {
      const older = verdict.unchained
        ? ` (the first ${verdict.unchained} events predate hash chains and are not covered)`
        : ''
      io.out(`${sessionId}: verified, ${verdict.events} events, chain intact${older}; last hash ${verdict.lastHash}`)
      if (signed?.ok) io.out(`signature: good (made by the key ${options.key} over this chain)`)
      else if (signed) io.out(`signature: BAD: ${signed.why}`)
    }
    return ok ? ExitCode.OK : ExitCode.NOT_VERIFIED
  }
  // A file (an export carried from another machine) is checked as it is, without a store.
  if (isFile(id)) return check(fileVerdict(id))
  return withRuntime(request, io, async ({ runtime }) => check(await verdictOf(runtime.root.sessionStore, id)))
}

export async function sessionsSign(
  request: ComposeRequest,
  id: string,
  options: { key: string; out?: string },
  io: Io,
): Promise<number> {
  return withRuntime(request, io, async ({ runtime }) => {
    const { id: sessionId, verdict } = await verdictOf(runtime.root.sessionStore, id)
    if (!verdict.ok) {
      io.err(`dsh: ${sessionId} does not verify, so it is not signed: ${verdict.message}`)
      return ExitCode.NOT_VERIFIED
    }
    const signature = await signHead({ sessionId, events: verdict.events, lastHash: verdict.lastHash }, options.key)
    const out = options.out ?? `${sessionId}.dsh-sig`
    writeFileSync(out, `${JSON.stringify(signature, null, 2)}\n`)
    io.err(
      `dsh: signed ${sessionId} (${verdict.events} events) with ${options.key} into ${out}; check it with: dsh sessions verify ${sessionId} --signature ${out} --key PUBLIC_KEY`,
    )
    return ExitCode.OK
  })
}
