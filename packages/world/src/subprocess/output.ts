// Bounded output capture: the first `headBytes` and the last `tailBytes` stay in memory; once the
// output outgrows both, everything (from byte 0) is written to a spill file and appended from then on.
import { closeSync, openSync, readSync, writeSync } from 'node:fs'
import type { OutputRange, OutputSnapshot } from './index.js'

const decoder = () => new TextDecoder('utf-8', { fatal: false })

export class OutputBuffer {
  private head: Buffer[] = []
  private headSize = 0
  private tail: Buffer[] = []
  private tailSize = 0
  /** Absolute position of the first byte held in `tail`. */
  private tailStart = 0
  private total = 0
  private fd: number | undefined
  private spillPath: string | undefined
  private spillError: string | undefined
  private readonly listeners = new Set<(chunk: string) => void>()
  private readonly live = decoder()

  constructor(
    private readonly headBytes: number,
    private readonly tailBytes: number,
    /** Creates the spill file path on first overflow; `undefined` disables spilling. */
    private readonly spillFile: (() => string) | undefined,
  ) {}

  push(chunk: Buffer): void {
    if (chunk.length === 0) return
    const start = this.total
    this.total += chunk.length
    if (this.fd === undefined && this.total > this.headBytes + this.tailBytes && this.spillFile && !this.spillError) {
      this.openSpill()
    }
    if (this.fd !== undefined) {
      try {
        writeSync(this.fd, chunk)
      } catch (error) {
        this.spillError = (error as Error).message
        this.closeSpill()
      }
    }
    let rest = chunk
    if (this.headSize < this.headBytes) {
      const take = rest.subarray(0, this.headBytes - this.headSize)
      this.head.push(take)
      this.headSize += take.length
      rest = rest.subarray(take.length)
    }
    if (rest.length > 0) {
      if (this.tailSize === 0) this.tailStart = start + (chunk.length - rest.length)
      this.tail.push(rest)
      this.tailSize += rest.length
      while (this.tailSize > this.tailBytes && this.tail.length > 0) {
        const first = this.tail[0] as Buffer
        const excess = this.tailSize - this.tailBytes
        if (first.length <= excess) {
          this.tail.shift()
          this.tailSize -= first.length
          this.tailStart += first.length
        } else {
          this.tail[0] = first.subarray(excess)
          this.tailSize -= excess
          this.tailStart += excess
        }
      }
    }
    const text = this.live.decode(chunk, { stream: true })
    if (text) for (const listener of this.listeners) listener(text)
  }

  onOutput(listener: (chunk: string) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  get totalBytes(): number {
    return this.total
  }

  snapshot(): OutputSnapshot {
    const head = Buffer.concat(this.head)
    const tail = Buffer.concat(this.tail)
    const omitted = this.tailStart - this.headSize
    const spill = this.spillPath === undefined ? {} : { spillPath: this.spillPath }
    if (omitted <= 0) {
      return { text: decoder().decode(Buffer.concat([head, tail])), totalBytes: this.total, truncated: false, ...spill }
    }
    const where = this.spillPath ? ` (complete output: ${this.spillPath})` : ''
    const text = `${decoder().decode(head)}\n[... ${omitted} bytes omitted${where} ...]\n${decoder().decode(tail)}`
    return { text, totalBytes: this.total, truncated: true, ...spill }
  }

  read(start: number, maxBytes: number): OutputRange {
    const from = Math.max(0, Math.min(start, this.total))
    const end = Math.min(this.total, from + Math.max(0, maxBytes))
    if (this.spillPath && !this.spillError) {
      const fd = openSync(this.spillPath, 'r')
      try {
        const buffer = Buffer.alloc(end - from)
        const read = readSync(fd, buffer, 0, buffer.length, from)
        return { text: decoder().decode(buffer.subarray(0, read)), next: from + read, lost: 0 }
      } finally {
        closeSync(fd)
      }
    }
    // Without a spill file: bytes in the head, or in the tail window; a gap in between is lost.
    const parts: Buffer[] = []
    let lost = 0
    let at = from
    if (at < this.headSize) {
      const head = Buffer.concat(this.head)
      parts.push(head.subarray(at, Math.min(end, this.headSize)))
      at = Math.min(end, this.headSize)
    }
    if (at < end) {
      if (at < this.tailStart) {
        lost = Math.min(end, this.tailStart) - at
        at = Math.min(end, this.tailStart)
      }
      if (at < end) parts.push(Buffer.concat(this.tail).subarray(at - this.tailStart, end - this.tailStart))
    }
    return { text: decoder().decode(Buffer.concat(parts)), next: end, lost }
  }

  close(): void {
    this.closeSpill()
  }

  private openSpill(): void {
    try {
      const path = (this.spillFile as () => string)()
      this.fd = openSync(path, 'wx', 0o600)
      this.spillPath = path
      // Everything so far is still in memory: head and tail are contiguous until the first overflow.
      for (const part of [...this.head, ...this.tail]) writeSync(this.fd, part)
    } catch (error) {
      this.spillError = (error as Error).message
      this.closeSpill()
    }
  }

  private closeSpill(): void {
    if (this.fd !== undefined) {
      try {
        closeSync(this.fd)
      } catch {}
      this.fd = undefined
    }
  }
}
