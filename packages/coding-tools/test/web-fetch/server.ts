// A local node:http server with one route per fetch behaviour under test.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { gzipSync } from 'node:zlib'

export interface TestServer {
  origin: string
  port: number
  /** Headers of every request, in order. */
  seen: IncomingHttpHeaders[]
  [Symbol.asyncDispose](): Promise<void>
}

export async function startServer(): Promise<TestServer> {
  const seen: IncomingHttpHeaders[] = []
  const server: Server = createServer((req, res) => {
    seen.push(req.headers)
    const port = (server.address() as AddressInfo).port
    const route = new URL(req.url ?? '/', 'http://x').pathname
    switch (route) {
      case '/text':
        res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'set-cookie': 'session=secret; Path=/' })
        return res.end('plain text ✓')
      case '/html':
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
        return res.end(
          '<html><head><title> The  Title </title><style>p{color:red}</style><script>alert(1)</script></head>' +
            '<body><h1>Heading</h1><p>Some <b>bold</b> text and a <a href="/x">link</a>.</p><ul><li>one</li><li>two</li></ul></body></html>',
        )
      case '/latin1':
        res.writeHead(200, { 'content-type': 'text/plain; charset=iso-8859-1' })
        return res.end(Buffer.from([0x63, 0x61, 0x66, 0xe9]))
      case '/meta-charset':
        res.writeHead(200, { 'content-type': 'text/html' })
        return res.end(
          Buffer.concat([
            Buffer.from('<html><head><meta charset="windows-1252"></head><body><p>na'),
            Buffer.from([0xef]),
            Buffer.from('ve</p></body></html>'),
          ]),
        )
      case '/gzip':
        res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'content-encoding': 'gzip' })
        return res.end(gzipSync('compressed body'))
      case '/big':
        res.writeHead(200, { 'content-type': 'text/plain' })
        return res.end('x'.repeat(200_000))
      case '/slow':
        res.writeHead(200, { 'content-type': 'text/plain' })
        res.write('start')
        return // never ends
      case '/redirect':
        res.writeHead(302, { location: '/text' })
        return res.end()
      case '/loop':
        res.writeHead(302, { location: '/loop' })
        return res.end()
      case '/cross':
        res.writeHead(302, { location: `http://localhost:${port}/text` })
        return res.end()
      case '/to-private':
        res.writeHead(301, { location: 'http://10.0.0.7/admin' })
        return res.end()
      case '/binary':
        res.writeHead(200, { 'content-type': 'image/png' })
        return res.end(Buffer.from([0x89, 0x50, 0x4e, 0x47]))
      case '/no-type':
        res.writeHead(200)
        return res.end('what am I')
      case '/bad-charset':
        res.writeHead(200, { 'content-type': 'text/plain; charset=x-klingon' })
        return res.end('qapla')
      default:
        res.writeHead(404, { 'content-type': 'text/plain' })
        return res.end('not here')
    }
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as AddressInfo).port
  return {
    origin: `http://127.0.0.1:${port}`,
    port,
    seen,
    async [Symbol.asyncDispose]() {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
