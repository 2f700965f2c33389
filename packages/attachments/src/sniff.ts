// What a blob is, from its bytes: the image types models accept are recognized by their magic
// numbers (a claimed type never decides), and their pixel size read from the header.
import { createRequire } from 'node:module'

// image-size loads on the first image, not with every session.
const require = createRequire(import.meta.url)
const imageSize = (bytes: Uint8Array): ReturnType<typeof import('image-size').imageSize> =>
  (require('image-size') as typeof import('image-size')).imageSize(bytes)

export const IMAGE_TYPES: readonly string[] = Object.freeze(['image/png', 'image/jpeg', 'image/gif', 'image/webp'])

const ascii = (bytes: Uint8Array, at: number, text: string) =>
  [...text].every((char, i) => bytes[at + i] === char.charCodeAt(0))

/** The image type of `bytes` by magic number, or undefined for anything else. */
export function sniffType(bytes: Uint8Array): string | undefined {
  if (bytes.length >= 8 && bytes[0] === 0x89 && ascii(bytes, 1, 'PNG\r\n\x1a\n')) return 'image/png'
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return 'image/jpeg'
  if (bytes.length >= 6 && (ascii(bytes, 0, 'GIF87a') || ascii(bytes, 0, 'GIF89a'))) return 'image/gif'
  if (bytes.length >= 12 && ascii(bytes, 0, 'RIFF') && ascii(bytes, 8, 'WEBP')) return 'image/webp'
  return undefined
}

export interface ImageInfo {
  mimeType: string
  width: number
  height: number
}

/** Type and pixel size of an image, or undefined when the bytes are no image we accept (or are damaged). */
export function imageInfo(bytes: Uint8Array): ImageInfo | undefined {
  const mimeType = sniffType(bytes)
  if (!mimeType) return undefined
  try {
    const { width, height } = imageSize(bytes)
    if (!width || !height) return undefined
    return { mimeType, width, height }
  } catch {
    return undefined
  }
}
