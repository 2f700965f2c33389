import { HarnessError } from '@dsh/kernel'
import { describe, expect, it } from 'vitest'
import { createHttpFetcher, type Resolver } from '../../src/web-fetch/fetch-http.js'
import { isPublicAddress } from '../../src/web-fetch/index.js'
import { startServer } from './server.js'

const LOOPBACK = ['127.0.0.1/32']

async function refusal(promise: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await promise
  } catch (error) {
    expect(error).toBeInstanceOf(HarnessError)
    return { code: (error as HarnessError).code, message: (error as Error).message }
  }
  throw new Error('expected a refusal')
}

describe('HTTP fetch against a local server (allowlisted)', () => {
  it('fetches text, converts HTML to markdown, and decodes charsets from the header or a meta tag', async () => {
    await using server = await startServer()
    const web = createHttpFetcher({ allow: LOOPBACK })
    const text = await web.fetch({ url: `${server.origin}/text` })
    expect(text).toEqual({
      url: `${server.origin}/text`,
      status: 200,
      contentType: 'text/plain',
      charset: 'utf-8',
      text: 'plain text ✓',
      truncated: false,
      bytes: Buffer.byteLength('plain text ✓'),
      redirects: [],
    })
    const html = await web.fetch({ url: `${server.origin}/html` })
    expect(html.title).toBe('The Title')
    expect(html.text).toContain('# Heading')
    expect(html.text).toContain('**bold**')
    expect(html.text).toContain('[link](/x)')
    expect(html.text).not.toMatch(/alert|color:red/)
    expect((await web.fetch({ url: `${server.origin}/html`, raw: true })).text).toContain('<h1>Heading</h1>')
    expect(await web.fetch({ url: `${server.origin}/latin1` })).toMatchObject({ charset: 'iso-8859-1', text: 'café' })
    expect((await web.fetch({ url: `${server.origin}/meta-charset` })).text).toBe('naïve')
    expect(await web.fetch({ url: `${server.origin}/gzip` })).toMatchObject({ text: 'compressed body' })
  })

  it('bounds bytes, characters and time', async () => {
    await using server = await startServer()
    const web = createHttpFetcher({ allow: LOOPBACK, maxBytes: 1000, timeoutMs: 300 })
    expect(await web.fetch({ url: `${server.origin}/big` })).toMatchObject({ bytes: 1000, truncated: true })
    const chars = await web.fetch({ url: `${server.origin}/text`, maxChars: 5 })
    expect(chars).toMatchObject({ text: 'plain', truncated: true })
    const started = Date.now()
    expect((await refusal(web.fetch({ url: `${server.origin}/slow` }))).code).toBe('WEB_TIMEOUT')
    expect(Date.now() - started).toBeLessThan(5_000)
  })

  it('follows same-origin redirects, refuses cross-origin ones and loops, and sends no cookies', async () => {
    await using server = await startServer()
    const web = createHttpFetcher({ allow: LOOPBACK, maxRedirects: 3 })
    const followed = await web.fetch({ url: `${server.origin}/redirect` })
    expect(followed).toMatchObject({ url: `${server.origin}/text`, redirects: [`${server.origin}/text`] })
    const cross = await refusal(web.fetch({ url: `${server.origin}/cross` }))
    expect(cross.code).toBe('WEB_REDIRECT_CROSS_ORIGIN')
    expect(cross.message).toContain(`http://localhost:${server.port}/text`)
    expect((await refusal(web.fetch({ url: `${server.origin}/loop` }))).code).toBe('WEB_TOO_MANY_REDIRECTS')
    // /text set a cookie on every response above; no request carried it back, nor any credentials.
    expect(server.seen.some((headers) => 'cookie' in headers || 'authorization' in headers)).toBe(false)
  })

  it('refuses non-text content, a missing content type and an unknown charset; reports HTTP errors by status', async () => {
    await using server = await startServer()
    const web = createHttpFetcher({ allow: LOOPBACK })
    expect((await refusal(web.fetch({ url: `${server.origin}/binary` }))).code).toBe('WEB_UNSUPPORTED_CONTENT_TYPE')
    expect((await refusal(web.fetch({ url: `${server.origin}/no-type` }))).code).toBe('WEB_UNSUPPORTED_CONTENT_TYPE')
    expect((await refusal(web.fetch({ url: `${server.origin}/bad-charset` }))).code).toBe('WEB_UNSUPPORTED_CHARSET')
    expect(await web.fetch({ url: `${server.origin}/missing` })).toMatchObject({ status: 404, text: 'not here' })
  })
})

describe('private-network refusal (no allowlist)', () => {
  it('refuses loopback, private, link-local and mapped destinations before connecting', async () => {
    await using server = await startServer()
    const web = createHttpFetcher()
    for (const url of [
      `${server.origin}/text`,
      `http://localhost:${server.port}/text`,
      `http://[::1]:${server.port}/text`,
      'http://10.0.0.1/',
      'http://192.168.1.1/',
      'http://172.16.0.1/',
      'http://100.64.0.1/',
      'http://169.254.169.254/latest/meta-data/',
      'http://0.0.0.0/',
      'http://[::ffff:127.0.0.1]/',
      'http://[fd00::1]/',
      'http://[fe80::1]/',
      'http://2130706433/', // 127.0.0.1 as one number
    ]) {
      const { code } = await refusal(web.fetch({ url }))
      expect([url, code]).toEqual([url, 'WEB_BLOCKED_ADDRESS'])
    }
    expect(server.seen).toEqual([])
  })

  it('refuses a redirect to a private address (cross-origin) and a same-origin hop whose host now resolves privately', async () => {
    await using server = await startServer()
    const allowOnlyTheServer = createHttpFetcher({ allow: LOOPBACK })
    const cross = await refusal(allowOnlyTheServer.fetch({ url: `${server.origin}/to-private` }))
    expect(cross.code).toBe('WEB_REDIRECT_CROSS_ORIGIN')
    // DNS rebinding: the first lookup gives the allowed address, the redirect's lookup a private one.
    const answers = ['127.0.0.1', '10.0.0.7']
    const rebinding: Resolver = async () => [{ address: answers.shift() ?? '10.0.0.7', family: 4 }]
    const web = createHttpFetcher({ allow: LOOPBACK }, rebinding)
    const hop = await refusal(web.fetch({ url: `http://rebind.test:${server.port}/redirect` }))
    expect(hop).toMatchObject({ code: 'WEB_BLOCKED_ADDRESS' })
    expect(hop.message).toContain('10.0.0.7')
    expect(server.seen).toHaveLength(2) // the /to-private request and the first rebind.test hop only
  })

  it('connects to the address it checked, not to a fresh lookup of the name', async () => {
    await using server = await startServer()
    const web = createHttpFetcher({ allow: LOOPBACK }, async () => [{ address: '127.0.0.1', family: 4 }])
    const result = await web.fetch({ url: `http://pinned.test:${server.port}/text` })
    expect(result).toMatchObject({ status: 200, text: 'plain text ✓' })
    expect(server.seen.at(-1)?.host).toBe(`pinned.test:${server.port}`)
  })

  it('refuses other schemes and URL credentials', async () => {
    const web = createHttpFetcher()
    expect((await refusal(web.fetch({ url: 'file:///etc/passwd' }))).code).toBe('WEB_UNSUPPORTED_SCHEME')
    expect((await refusal(web.fetch({ url: 'http://user:pw@example.com/' }))).code).toBe('WEB_URL_CREDENTIALS')
    expect((await refusal(web.fetch({ url: 'not a url' }))).code).toBe('WEB_INVALID_URL')
  })

  it('classifies addresses', () => {
    const nonPublic = [
      '127.0.0.1',
      '10.1.2.3',
      '172.31.255.255',
      '192.168.0.1',
      '169.254.1.1',
      '100.127.0.1',
      '0.1.2.3',
      '224.0.0.1',
      '::1',
      '::',
      'fc00::1',
      'fdff::1',
      'fe80::abcd',
      '::ffff:10.0.0.1',
      '::ffff:a00:1',
      '64:ff9b::7f00:1',
      'ff02::1',
    ]
    const publicOnes = ['8.8.8.8', '1.1.1.1', '172.32.0.1', '100.128.0.1', '2606:4700::1111', '::ffff:8.8.8.8']
    expect(nonPublic.filter(isPublicAddress)).toEqual([])
    expect(publicOnes.filter((address) => !isPublicAddress(address))).toEqual([])
  })
})
