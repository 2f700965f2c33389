// Images on the wire: whether a model takes them (from the advisory catalog; an unknown model is
// assumed to), and the text a text-only model reads instead, so it knows an image was there.
import type { ModelInfo } from './adapter.js'
import type { ImageBlock } from './messages.js'

/** False only when the catalog lists `model` and its inputs leave out images. */
export function acceptsImages(models: readonly ModelInfo[] | undefined, model: string): boolean {
  const info = models?.find((candidate) => candidate.id === model)
  return !info?.input || info.input.includes('image')
}

/** What a model that cannot see images reads in place of one. */
export function imagePlaceholder(block: ImageBlock, model: string): string {
  return `[image ${block.mimeType} ${block.ref.slice(0, 19)}… not shown: the model ${model} takes text only. Say so if the image matters, and ask the user to describe it or to switch to a model that accepts images.]`
}

/** What a request says in place of an image it could not load. */
export function imageMissing(block: ImageBlock, reason: string): string {
  return `[image ${block.mimeType} ${block.ref.slice(0, 19)}… could not be loaded: ${reason}]`
}
