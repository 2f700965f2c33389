// Signing a session's hash chain with a key the user holds, and checking such a signature. What is
// signed is the chain's head (session id, event count, last hash): the chain commits to every event,
// so the signature covers the whole session as it was when signed. Two kinds of keys: an Ed25519 key
// in PEM (signed and checked with node:crypto), and an OpenSSH key (signed and checked by the user's
// own `ssh-keygen -Y`, namespace `dsh-session`).
import { execFile } from 'node:child_process'
import { createPrivateKey, createPublicKey, type KeyObject, sign, verify } from 'node:crypto'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { HarnessError } from '@dsh/kernel'

export const SIGNATURE_NAMESPACE = 'dsh-session'

/** The head of a verified chain: what a signature covers. */
export interface ChainHead {
  sessionId: string
  events: number
  lastHash: string
}

/** A signature file (`dsh sessions sign`), JSON. */
export interface SessionSignature extends ChainHead {
  format: 'dsh-session-signature/1'
  /** `ed25519`: base64 over the head's text; `ssh`: an armored `ssh-keygen -Y sign` signature. */
  algorithm: 'ed25519' | 'ssh'
  /** The signer's public key (PEM or an OpenSSH line), for information: checking takes the user's. */
  publicKey: string
  signature: string
  signedAt: string
}

/** The exact bytes signed. */
export function signedText(head: ChainHead): string {
  return `${SIGNATURE_NAMESPACE} v1\nsession ${head.sessionId}\nevents ${head.events}\nlast ${head.lastHash}\n`
}

function usage(message: string): HarnessError {
  return new HarnessError('USAGE', message, {})
}

function run(command: string, args: string[], input: string): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve, reject) => {
    const child = execFile(command, args, { encoding: 'utf8', timeout: 30_000 }, (error, out, err) => {
      const code = error && typeof error.code === 'number' ? error.code : error ? -1 : 0
      if (error && typeof error.code === 'string')
        return reject(usage(`${command} is not available (${error.code}); install openssh-client to use OpenSSH keys`))
      resolve({ code, out, err })
    })
    child.stdin?.end(input)
  })
}

function pemPrivateKey(path: string, text: string): KeyObject {
  let key: KeyObject
  try {
    key = createPrivateKey(text)
  } catch (error) {
    throw usage(
      `${path} is not a private key dsh can read (${(error as Error).message}); give an Ed25519 key in PEM or OpenSSH format`,
    )
  }
  if (key.asymmetricKeyType !== 'ed25519')
    throw usage(
      `${path} is a ${key.asymmetricKeyType} key; sign with an Ed25519 key (openssl genpkey -algorithm ed25519, or ssh-keygen -t ed25519)`,
    )
  return key
}

/** Signs `head` with the private key at `keyPath` (Ed25519 PEM, or any key `ssh-keygen -Y sign` takes). */
export async function signHead(head: ChainHead, keyPath: string): Promise<SessionSignature> {
  if (!existsSync(keyPath)) throw usage(`no key file ${keyPath}`)
  const text = readFileSync(keyPath, 'utf8')
  const base = { format: 'dsh-session-signature/1' as const, ...head, signedAt: new Date().toISOString() }
  if (text.includes('BEGIN OPENSSH PRIVATE KEY')) {
    const signed = await run('ssh-keygen', ['-Y', 'sign', '-f', keyPath, '-n', SIGNATURE_NAMESPACE], signedText(head))
    if (signed.code !== 0) throw usage(`ssh-keygen could not sign with ${keyPath}: ${signed.err.trim()}`)
    const publicKey = existsSync(`${keyPath}.pub`)
      ? readFileSync(`${keyPath}.pub`, 'utf8').trim()
      : (await run('ssh-keygen', ['-y', '-f', keyPath], '')).out.trim()
    return { ...base, algorithm: 'ssh', publicKey, signature: signed.out }
  }
  const key = pemPrivateKey(keyPath, text)
  const signature = sign(null, Buffer.from(signedText(head)), key).toString('base64')
  const publicKey = createPublicKey(key).export({ type: 'spki', format: 'pem' }).toString()
  return { ...base, algorithm: 'ed25519', publicKey, signature }
}

/** Reads a signature file, or says why it is not one. */
export function readSignature(path: string): SessionSignature {
  let value: Partial<SessionSignature>
  try {
    value = JSON.parse(readFileSync(path, 'utf8')) as Partial<SessionSignature>
  } catch (error) {
    throw usage(
      `${path} is not a signature file (${(error as Error).message}); make one with dsh sessions sign ID --key KEY`,
    )
  }
  if (value.format !== 'dsh-session-signature/1' || typeof value.signature !== 'string')
    throw usage(`${path} is not a dsh session signature (format dsh-session-signature/1)`)
  return value as SessionSignature
}

/**
 * Whether `signature` was made over `head` by the key whose public half is at `publicKeyPath` (a PEM
 * public key, or an OpenSSH `ssh-ed25519 ...` line for an `ssh` signature). The reason when not.
 */
export async function checkSignature(
  signature: SessionSignature,
  head: ChainHead,
  publicKeyPath: string,
): Promise<{ ok: true } | { ok: false; why: string }> {
  if (signature.sessionId !== head.sessionId)
    return { ok: false, why: `the signature is for session ${signature.sessionId}` }
  if (signature.events !== head.events || signature.lastHash !== head.lastHash)
    return {
      ok: false,
      why: `the session changed since it was signed: signed at ${signature.events} events (last hash ${signature.lastHash.slice(0, 12)}), now ${head.events} (${head.lastHash.slice(0, 12)})`,
    }
  if (!existsSync(publicKeyPath)) throw usage(`no key file ${publicKeyPath}`)
  const text = readFileSync(publicKeyPath, 'utf8').trim()
  if (signature.algorithm === 'ssh') {
    const dir = mkdtempSync(join(tmpdir(), 'dsh-verify-'))
    try {
      const allowed = join(dir, 'allowed_signers')
      const sig = join(dir, 'session.sig')
      writeFileSync(allowed, `dsh ${text.split('\n')[0]}\n`)
      writeFileSync(sig, signature.signature)
      const args = ['-Y', 'verify', '-f', allowed, '-I', 'dsh', '-n', SIGNATURE_NAMESPACE, '-s', sig]
      const checked = await run('ssh-keygen', args, signedText(head))
      return checked.code === 0
        ? { ok: true }
        : { ok: false, why: `ssh-keygen: ${(checked.err || checked.out).trim().split('\n')[0]}` }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }
  let key: KeyObject
  try {
    key = createPublicKey(text)
  } catch (error) {
    throw usage(`${publicKeyPath} is not a public key dsh can read (${(error as Error).message})`)
  }
  const good = verify(null, Buffer.from(signedText(head)), key, Buffer.from(signature.signature, 'base64'))
  return good ? { ok: true } : { ok: false, why: 'the signature was not made by this key' }
}
