// The model-facing `web_fetch` tool: fetches one URL through `ctx.webFetch` and returns its readable text.
// Refusals and failures come back as error results carrying the provider's `WEB_*` code.

import { defineTool, ToolError } from '@dsh/agent/tools'
import { type Context, HarnessError } from '@dsh/kernel'
import type {} from './index.js'

export interface WebFetchToolConfig {
  /** Provider to use (default: the only registered one). */
  provider?: string
}

interface Args {
  url: string
  maxChars?: number
  raw?: boolean
}

/** Builds the tool over a context that has `ctx.webFetch`. */
export function createWebFetchTool(ctx: Context, config: WebFetchToolConfig = {}) {
  return defineTool<Args>({
    name: 'web_fetch',
    description:
      'Fetch a public http(s) URL and return its content as text (HTML is converted to markdown). ' +
      'Only text content types; redirects to another origin are not followed (the result names the target). ' +
      'Private and local network addresses are refused unless configured.',
    parameters: {
      type: 'object',
      properties: {
        url: { type: 'string', description: 'The http(s) URL to fetch.' },
        maxChars: { type: 'integer', minimum: 1, description: 'Cap of the returned text (default from config).' },
        raw: { type: 'boolean', description: 'Return HTML source instead of markdown.' },
      },
      required: ['url'],
      additionalProperties: false,
    },
    mode: 'parallel-safe',
    presentation: (args) => ({ kind: 'generic', title: `Fetch ${args.url}` }),
    async execute(args, call) {
      try {
        const result = await ctx.webFetch.fetch({
          url: args.url,
          signal: call.signal,
          ...(config.provider ? { provider: config.provider } : {}),
          ...(args.maxChars !== undefined ? { maxChars: args.maxChars } : {}),
          ...(args.raw !== undefined ? { raw: args.raw } : {}),
        })
        const lines = [
          `URL: ${result.url}`,
          `Status: ${result.status}`,
          `Content-Type: ${result.contentType}; charset=${result.charset}`,
        ]
        if (result.redirects.length > 0) lines.push(`Redirected: ${result.redirects.join(' -> ')}`)
        if (result.title) lines.push(`Title: ${result.title}`)
        const note = result.truncated ? '\n\n[content truncated]' : ''
        return {
          content: `${lines.join('\n')}\n\n${result.text}${note}`,
          isError: result.status >= 400,
          details: { url: result.url, status: result.status, bytes: result.bytes, truncated: result.truncated },
        }
      } catch (error) {
        if (error instanceof HarnessError) throw new ToolError(error.message, error.code)
        throw error
      }
    },
  })
}

/** The tool row: registers `web_fetch` on `ctx.tools` for its lifetime. */
export const WebFetchTool = {
  name: 'web-fetch-tool',
  inject: ['webFetch', 'tools'],
  apply(ctx: Context, config: WebFetchToolConfig = {}) {
    ctx.tools.register(createWebFetchTool(ctx, config ?? {}))
  },
}

export default WebFetchTool
