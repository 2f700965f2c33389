// Scaling an image down to what models accept (longest edge, encoded bytes). sharp (libvips, shipped
// as prebuilt npm packages) is loaded only when an image is over a limit, so reading ordinary images
// and starting dsh never pay for it. See docs/decisions/231-attachment-images-sharp.md.
import { HarnessError } from '@dsh/kernel'
import type { AttachmentLimits } from './index.js'
import type { ImageInfo } from './sniff.js'

export interface FittedImage {
  bytes: Uint8Array
  mimeType: string
  width: number
  height: number
}

/** Re-encodes `bytes` when it is over a limit; undefined when it already fits. */
export async function fitImage(
  bytes: Uint8Array,
  info: ImageInfo,
  limits: Pick<AttachmentLimits, 'maxImageBytes' | 'maxImageEdge'>,
): Promise<FittedImage | undefined> {
  const longest = Math.max(info.width, info.height)
  if (longest <= limits.maxImageEdge && bytes.byteLength <= limits.maxImageBytes) return undefined
  const { default: sharp } = await import('sharp')
  let edge = Math.min(longest, limits.maxImageEdge)
  // Animated GIFs keep their first frame; the other formats keep their type while it fits, then JPEG.
  let format: 'png' | 'jpeg' | 'gif' | 'webp' =
    info.mimeType === 'image/png'
      ? 'png'
      : info.mimeType === 'image/gif'
        ? 'gif'
        : info.mimeType === 'image/webp'
          ? 'webp'
          : 'jpeg'
  for (let attempt = 0; attempt < 6; attempt++) {
    const { data, info: out } = await sharp(bytes)
      .rotate()
      .resize({ width: edge, height: edge, fit: 'inside', withoutEnlargement: true })
      .toFormat(format)
      .toBuffer({ resolveWithObject: true })
    if (data.byteLength <= limits.maxImageBytes) {
      return {
        bytes: new Uint8Array(data.buffer, data.byteOffset, data.byteLength),
        mimeType: `image/${format}`,
        width: out.width,
        height: out.height,
      }
    }
    if (format !== 'jpeg' && attempt >= 1) format = 'jpeg'
    edge = Math.max(64, Math.floor(edge * Math.min(0.9, Math.sqrt(limits.maxImageBytes / data.byteLength))))
  }
  throw new HarnessError(
    'ATTACHMENT_TOO_LARGE',
    `the image could not be brought under ${limits.maxImageBytes} bytes by scaling; attach a smaller image`,
    { bytes: bytes.byteLength, maxImageBytes: limits.maxImageBytes },
  )
}
