// Real images for tests, made with sharp (no fixture files to keep in sync).
import sharp from 'sharp'

/** A solid-colour PNG of the given size. */
export async function png(width: number, height: number, colour = '#3366cc'): Promise<Uint8Array> {
  const data = await sharp({ create: { width, height, channels: 3, background: colour } })
    .png()
    .toBuffer()
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength)
}

/** Noise a PNG cannot compress: `width * height * 3` bytes of pixels stay about that big. */
export async function noisyPng(width: number, height: number): Promise<Uint8Array> {
  const pixels = Buffer.alloc(width * height * 3)
  let state = 0x2545f491
  for (let i = 0; i < pixels.length; i++) {
    state ^= state << 13
    state ^= state >>> 17
    state ^= state << 5
    pixels[i] = state & 0xff
  }
  const data = await sharp(pixels, { raw: { width, height, channels: 3 } })
    .png()
    .toBuffer()
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength)
}
