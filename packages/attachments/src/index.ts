// @dsh/attachments: the attachment seam `ctx.attachments`. Blobs (images a person attaches, a tool
// reads or an MCP server returns) are content-addressed by sha256; the session log holds only the
// reference (`ImageBlock.ref = sha256:<hex>`). A provider must make a blob durable before `put`
// resolves, so an event written after it can never point at a missing blob, even after a crash.
// Providers: `@dsh/attachments/local` (files under $DSH_HOME/blobs).
import { HarnessError, Service } from '@dsh/kernel'

export { refsIn } from './refs.js'
export { IMAGE_TYPES, type ImageInfo, imageInfo, sniffType } from './sniff.js'

declare module 'cordis' {
  interface Context {
    attachments: Attachments
  }
}

/** What a stored blob is: its reference, type and size; for images the pixel size and what was done to fit. */
export interface StoredBlob {
  /** `sha256:<64 hex>`. */
  ref: string
  mimeType: string
  bytes: number
  width?: number
  height?: number
  /** Set when the image was scaled down to fit the limits: the size it had before. */
  original?: { width: number; height: number; bytes: number }
}

export interface PutOptions {
  /** The type the caller claims; the bytes decide (a mismatch is refused). */
  mimeType?: string
  /** A file name for error messages. */
  name?: string
}

/** The limits a provider enforces; every refusal names the limit and how to get under it. */
export interface AttachmentLimits {
  /** Largest blob accepted, before any scaling (default 20 MiB). */
  maxBytes: number
  /** Images larger than this (bytes) are re-encoded smaller (default 5 MiB, what most providers take). */
  maxImageBytes: number
  /** Images with a longer edge than this are scaled down (default 2048 px). */
  maxImageEdge: number
  /** Accepted types (default png, jpeg, gif, webp). */
  types: readonly string[]
}

export const DEFAULT_LIMITS: AttachmentLimits = Object.freeze({
  maxBytes: 20 * 1024 * 1024,
  maxImageBytes: 5 * 1024 * 1024,
  maxImageEdge: 2048,
  types: Object.freeze(['image/png', 'image/jpeg', 'image/gif', 'image/webp']),
})

/** What `sweep` did: the blobs it removed and those it kept because they are too young to judge. */
export interface SweepReport {
  removed: string[]
  keptYoung: number
}

/**
 * The `ctx.attachments` seam. Error codes: ATTACHMENT_TOO_LARGE, ATTACHMENT_TYPE_UNSUPPORTED,
 * ATTACHMENT_NOT_FOUND, ATTACHMENT_REF_INVALID.
 */
export abstract class Attachments extends Service {
  abstract readonly limits: AttachmentLimits
  /** Checks, scales images to the limits, stores, and resolves once the blob is durable. */
  abstract put(bytes: Uint8Array, options?: PutOptions): Promise<StoredBlob>
  /** The bytes of a stored blob; ATTACHMENT_NOT_FOUND when it is missing. */
  abstract get(ref: string): Promise<Uint8Array>
  /**
   * Stores bytes exactly as given under `ref` (an import of blobs exported elsewhere): no checks
   * beyond the hash, which must match (ATTACHMENT_CORRUPT otherwise), and no scaling.
   */
  abstract adopt(ref: string, bytes: Uint8Array): Promise<void>
  abstract has(ref: string): Promise<boolean>
  /** Every stored reference. */
  abstract list(): Promise<string[]>
  /**
   * Removes blobs not in `keep`. `candidates` limits the sweep to those refs (e.g. the refs of a
   * deleted session); blobs younger than `minAgeMs` stay, since a live process may have written one
   * whose event is not durable yet.
   */
  abstract sweep(
    keep: ReadonlySet<string>,
    options?: { candidates?: Iterable<string>; minAgeMs?: number },
  ): Promise<SweepReport>
}

const REF = /^sha256:[0-9a-f]{64}$/

/** Checks a reference's shape; ATTACHMENT_REF_INVALID otherwise (a ref is never a path). */
export function checkRef(ref: string): string {
  if (typeof ref !== 'string' || !REF.test(ref)) {
    throw new HarnessError(
      'ATTACHMENT_REF_INVALID',
      `not an attachment reference: ${JSON.stringify(ref)} (expected sha256:<64 hex>)`,
      {
        ref: String(ref),
      },
    )
  }
  return ref
}
