// Row `attachments`, module `@dsh/attachments/local`: blobs as files `<dir>/sha256/<2 hex>/<64 hex>`
// (default dir `$DSH_HOME/blobs`). A blob is written to a temporary file, fsynced, renamed into place
// and its directory fsynced before `put` resolves: the event that references it comes after, so a
// crash can leave an unreferenced blob (swept later) but never a reference without its blob.
import { createHash, randomBytes } from 'node:crypto'
import { mkdir, open, readdir, readFile, rename, stat, unlink, utimes } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import type {} from '@dsh/composition'
import { launcherHome } from '@dsh/composition/launcher'
import { type Context, HarnessError } from '@dsh/kernel'
import { fitImage } from './fit.js'
import {
  type AttachmentLimits,
  Attachments,
  checkRef,
  DEFAULT_LIMITS,
  type PutOptions,
  type StoredBlob,
  type SweepReport,
} from './index.js'
import { imageInfo, sniffType } from './sniff.js'

export interface LocalAttachmentsConfig extends Partial<AttachmentLimits> {
  /** Where blobs live (default `$DSH_HOME/blobs`). */
  dir?: string
}

const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`

export class LocalAttachments extends Attachments {
  static readonly provide = 'attachments'
  readonly dir: string
  readonly limits: AttachmentLimits

  constructor(ctx: Context, config: LocalAttachmentsConfig = {}) {
    super(ctx, 'attachments')
    const { dir, ...limits } = config ?? {}
    const home = launcherHome(ctx)
    this.dir = resolve(dir || join(home, 'blobs'))
    this.limits = Object.freeze({ ...DEFAULT_LIMITS, ...limits })
  }

  fileOf(ref: string): string {
    const hex = checkRef(ref).slice('sha256:'.length)
    return join(this.dir, 'sha256', hex.slice(0, 2), hex)
  }

  async put(input: Uint8Array, options: PutOptions = {}): Promise<StoredBlob> {
    const name = options.name ? `${options.name}: ` : ''
    const limits = this.limits
    if (input.byteLength > limits.maxBytes) {
      throw new HarnessError(
        'ATTACHMENT_TOO_LARGE',
        `${name}${mib(input.byteLength)} is over the attachment limit of ${mib(limits.maxBytes)}; attach a smaller file (or raise maxBytes of the attachments row)`,
        { bytes: input.byteLength, maxBytes: limits.maxBytes },
      )
    }
    const mimeType = sniffType(input)
    if (!mimeType || !limits.types.includes(mimeType)) {
      throw new HarnessError(
        'ATTACHMENT_TYPE_UNSUPPORTED',
        `${name}${mimeType ? `${mimeType} is` : 'these bytes are'} not an accepted attachment type (accepted: ${limits.types.join(', ')}); convert it to one of them`,
        { mimeType: mimeType ?? options.mimeType ?? null, accepted: [...limits.types] },
      )
    }
    if (
      options.mimeType &&
      options.mimeType !== mimeType &&
      !(options.mimeType === 'image/jpg' && mimeType === 'image/jpeg')
    ) {
      throw new HarnessError(
        'ATTACHMENT_TYPE_UNSUPPORTED',
        `${name}claimed to be ${options.mimeType} but the bytes are ${mimeType}; send the right type`,
        { mimeType: options.mimeType, detected: mimeType },
      )
    }
    const info = imageInfo(input)
    if (!info) {
      throw new HarnessError(
        'ATTACHMENT_TYPE_UNSUPPORTED',
        `${name}the ${mimeType} image is damaged (no readable size)`,
        {
          mimeType,
        },
      )
    }
    const fitted = await fitImage(input, info, limits)
    const bytes = fitted?.bytes ?? input
    const ref = `sha256:${createHash('sha256').update(bytes).digest('hex')}`
    await this.write(ref, bytes)
    const blob: StoredBlob = {
      ref,
      mimeType: fitted?.mimeType ?? mimeType,
      bytes: bytes.byteLength,
      width: fitted?.width ?? info.width,
      height: fitted?.height ?? info.height,
    }
    if (fitted) blob.original = { width: info.width, height: info.height, bytes: input.byteLength }
    return Object.freeze(blob)
  }

  async adopt(ref: string, bytes: Uint8Array): Promise<void> {
    const hash = `sha256:${createHash('sha256').update(bytes).digest('hex')}`
    if (hash !== checkRef(ref)) {
      throw new HarnessError(
        'ATTACHMENT_CORRUPT',
        `the bytes given for ${ref} hash to ${hash}; the export is damaged`,
        {
          ref,
          hash,
        },
      )
    }
    await this.write(ref, bytes)
  }

  private async write(ref: string, bytes: Uint8Array): Promise<void> {
    const file = this.fileOf(ref)
    const now = new Date()
    // Already stored: refresh its age so a concurrent sweep does not take it before our event lands.
    if (
      await utimes(file, now, now).then(
        () => true,
        () => false,
      )
    )
      return
    const dir = resolve(file, '..')
    await mkdir(dir, { recursive: true, mode: 0o700 })
    const temp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`
    const handle = await open(temp, 'wx', 0o600)
    try {
      await handle.writeFile(bytes)
      await handle.sync()
    } finally {
      await handle.close()
    }
    await rename(temp, file)
    const directory = await open(dir, 'r')
    try {
      await directory.sync()
    } finally {
      await directory.close()
    }
  }

  async get(ref: string): Promise<Uint8Array> {
    const file = this.fileOf(ref)
    let bytes: Buffer
    try {
      bytes = await readFile(file)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
      throw new HarnessError(
        'ATTACHMENT_NOT_FOUND',
        `attachment ${ref} is not in ${this.dir} (removed, or the session came from another machine without its blobs: import it with \`dsh sessions import\`)`,
        { ref, dir: this.dir },
      )
    }
    const hash = `sha256:${createHash('sha256').update(bytes).digest('hex')}`
    if (hash !== ref) {
      throw new HarnessError(
        'ATTACHMENT_CORRUPT',
        `attachment file ${file} does not hash to ${ref}; delete it and attach the file again`,
        {
          ref,
          file,
        },
      )
    }
    return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  }

  async has(ref: string): Promise<boolean> {
    return stat(this.fileOf(ref)).then(
      (found) => found.isFile(),
      () => false,
    )
  }

  async list(): Promise<string[]> {
    const root = join(this.dir, 'sha256')
    const refs: string[] = []
    for (const prefix of await readdir(root).catch(() => [] as string[])) {
      for (const name of await readdir(join(root, prefix)).catch(() => [] as string[])) {
        if (/^[0-9a-f]{64}$/.test(name) && name.startsWith(prefix)) refs.push(`sha256:${name}`)
      }
    }
    return refs.sort()
  }

  async sweep(
    keep: ReadonlySet<string>,
    options: { candidates?: Iterable<string>; minAgeMs?: number } = {},
  ): Promise<SweepReport> {
    const minAgeMs = options.minAgeMs ?? 60 * 60 * 1000
    const candidates = options.candidates ? [...new Set(options.candidates)] : await this.list()
    const report: SweepReport = { removed: [], keptYoung: 0 }
    const now = Date.now()
    for (const ref of candidates) {
      if (keep.has(ref)) continue
      const file = this.fileOf(ref)
      const found = await stat(file).catch(() => undefined)
      if (!found) continue
      if (now - found.mtimeMs < minAgeMs) {
        report.keptYoung++
        continue
      }
      await unlink(file).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== 'ENOENT') throw error
      })
      report.removed.push(ref)
    }
    return report
  }
}

export default LocalAttachments
