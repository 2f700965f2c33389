// dsh messages as Chat Completions wire messages. Each step's request repeats the last one's messages
// and adds a few, so the wire JSON is built incrementally: a frozen message's text is computed once
// (`JsonTextCache`), and when a request starts with the same message objects as the adapter's previous
// request, the joined text of that prefix is reused and only the new tail is serialised. Messages with
// images depend on the model and the image loader, so a request holding any takes the plain path.
import type { LlmRequest, ModelInfo } from './adapter.js'
import { acceptsImages, imageMissing, imagePlaceholder } from './images.js'
import type { AssistantMessage, ImageBlock, Message, ToolResultContent, UserContent } from './messages.js'
import { JsonText, JsonTextCache } from './wire-json.js'

type Json = Record<string, unknown>

/** What the wire form of a message depends on besides the message (the adapter's options object). */
export interface WireOptions {
  dialect: 'deepseek' | 'openai'
  /** The provider names whose reasoning is sent back (DeepSeek dialect). */
  providers: readonly string[]
  models: readonly ModelInfo[]
}

function bytesToBase64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64')
}

/** How this request sends images: loaded as data URLs, or as a placeholder for a text-only model. */
interface ImageWire {
  load?: (ref: string) => Promise<Uint8Array>
  /** Set when the model takes text only: its name, for the placeholder. */
  textOnly?: string
}

async function imagePart(block: ImageBlock, images: ImageWire): Promise<Json> {
  if (images.textOnly !== undefined) return { type: 'text', text: imagePlaceholder(block, images.textOnly) }
  if (!images.load) return { type: 'text', text: imageMissing(block, 'no image loader for this request') }
  try {
    const data = bytesToBase64(await images.load(block.ref))
    return { type: 'image_url', image_url: { url: `data:${block.mimeType};base64,${data}` } }
  } catch (error) {
    return { type: 'text', text: imageMissing(block, error instanceof Error ? error.message : String(error)) }
  }
}

async function userContent(content: readonly UserContent[], images: ImageWire) {
  if (content.every((block) => block.type === 'text')) return content.map((block) => block.text).join('\n')
  const parts: Json[] = []
  for (const block of content) {
    parts.push(block.type === 'text' ? { type: 'text', text: block.text } : await imagePart(block, images))
  }
  return parts
}

function toolResultText(content: readonly ToolResultContent[]): string {
  return content
    .map((block) =>
      block.type === 'text' ? block.text : `[image ${block.mimeType} ${block.ref}: shown in the next message]`,
    )
    .join('\n')
}

function assistantMessage(message: AssistantMessage, options: WireOptions): Json {
  const text = message.content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('')
  const calls = message.content.flatMap((block) => (block.type === 'tool-call' ? [block] : []))
  const out: Json = { role: 'assistant', content: text === '' ? null : text }
  if (options.dialect === 'deepseek') {
    // Reasoning of tool-call turns must go back verbatim (HTTP 400 otherwise); other adapters' reasoning
    // is their replay state, not ours, so it is replaced by the documented empty string.
    const own = message.provider === undefined || options.providers.includes(message.provider)
    const reasoning = own
      ? message.content.flatMap((block) => (block.type === 'reasoning' ? [block.text] : [])).join('')
      : ''
    if (calls.length > 0 || reasoning !== '') out.reasoning_content = reasoning
  }
  if (calls.length > 0) {
    out.tool_calls = calls.map((call) => ({
      id: call.id,
      type: 'function',
      function: { name: call.name, arguments: call.rawArguments ?? JSON.stringify(call.arguments) },
    }))
  }
  return out
}

function hasImages(message: Message): boolean {
  return message.role !== 'assistant' && message.content.some((block) => block.type === 'image')
}

/** Wire JSON of the messages and tool lists already sent, by object, per adapter. */
export const wireText = new JsonTextCache<WireOptions>()

function messageText(message: Message, options: WireOptions): string {
  return wireText.of(options, message, () => {
    if (message.role === 'user') {
      return {
        role: 'user',
        content: message.content.map((block) => (block.type === 'text' ? block.text : '')).join('\n'),
      }
    }
    if (message.role === 'assistant') return assistantMessage(message, options)
    return { role: 'tool', tool_call_id: message.toolCallId, content: toolResultText(message.content) }
  }).text
}

/** The adapter's previous image-free request: its messages and their joined wire text. */
interface Sent {
  messages: readonly Message[]
  texts: string[]
  joined: string
}

const lastSent = new WeakMap<WireOptions, Sent>()

/** Joined wire text of image-free messages, reusing the previous request's prefix; undefined if any has images. */
function joinedText(messages: readonly Message[], options: WireOptions): string | undefined {
  const last = lastSent.get(options)
  let same = 0
  if (last) {
    const bound = Math.min(last.messages.length, messages.length)
    // Only frozen messages (session events) can be trusted to have kept their text.
    while (same < bound && messages[same] === last.messages[same] && Object.isFrozen(messages[same])) same++
  }
  const texts = last ? last.texts.slice(0, same) : []
  for (let index = same; index < messages.length; index++) {
    const message = messages[index] as Message
    if (hasImages(message)) return undefined
    texts.push(messageText(message, options))
  }
  let joined: string
  if (last && same === last.messages.length && same > 0) {
    const tail = texts.slice(same).join(',')
    joined = tail === '' ? last.joined : `${last.joined},${tail}`
  } else joined = texts.join(',')
  lastSent.set(options, { messages, texts, joined })
  return joined
}

/** The `messages` value of the request body (the system prompt first). */
export async function wireMessages(request: LlmRequest, options: WireOptions, model: string): Promise<unknown> {
  const messages = request.messages as readonly Message[]
  const system = request.system ? JSON.stringify({ role: 'system', content: request.system }) : ''
  const joined = joinedText(messages, options)
  if (joined !== undefined) return new JsonText(`[${system}${system && joined ? ',' : ''}${joined}]`)
  return plainWireMessages(request, options, model)
}

/** The messages as objects, built whole each time: requests with images, and the reference form. */
export async function plainWireMessages(request: LlmRequest, options: WireOptions, model: string): Promise<Json[]> {
  const images: ImageWire = acceptsImages(options.models, model)
    ? request.loadImage
      ? { load: request.loadImage }
      : {}
    : { textOnly: model }
  const out: Json[] = []
  if (request.system) out.push({ role: 'system', content: request.system })
  // Tool messages carry text only on this wire: the images of a run of tool results follow it as one
  // user message, so the next assistant turn still sees them.
  let toolImages: ImageBlock[] = []
  const flushToolImages = async () => {
    if (toolImages.length === 0) return
    const content = [{ type: 'text' as const, text: 'Images from the tool results above:' }, ...toolImages]
    toolImages = []
    out.push({ role: 'user', content: await userContent(content, images) })
  }
  for (const message of request.messages as readonly Message[]) {
    if (message.role !== 'tool') await flushToolImages()
    if (message.role === 'user') out.push({ role: 'user', content: await userContent(message.content, images) })
    else if (message.role === 'assistant') out.push(assistantMessage(message, options))
    else {
      out.push({ role: 'tool', tool_call_id: message.toolCallId, content: toolResultText(message.content) })
      for (const block of message.content) if (block.type === 'image') toolImages.push(block)
    }
  }
  await flushToolImages()
  return out
}
