// The editor's MCP servers (ACP `McpServer[]`) as the MCP client's config, and what is refused.
import { describe, expect, it } from 'vitest'
import { mcpConfigOf } from '../../src/acp/session-mcp.js'

describe('mcpConfigOf', () => {
  it('maps stdio and http servers, env and headers as name/value pairs, names made safe for tool names', () => {
    expect(
      mcpConfigOf(
        [
          { name: 'my files', command: '/bin/fs-server', args: ['/data'], env: [{ name: 'DEBUG', value: '1' }] },
          {
            type: 'http',
            name: 'remote',
            url: 'https://mcp.example/mcp',
            headers: [{ name: 'Authorization', value: 'Bearer t' }],
          },
        ],
        true,
      ),
    ).toEqual({
      my_files: { command: '/bin/fs-server', args: ['/data'], env: { DEBUG: '1' } },
      remote: { type: 'http', url: 'https://mcp.example/mcp', headers: { Authorization: 'Bearer t' } },
    })
  })

  it('refuses sse, two servers under one name, and servers without an MCP client, saying what to send', () => {
    const stdio = (name: string) => ({ name, command: 'x', args: [], env: [] })
    expect(() => mcpConfigOf([{ type: 'sse', name: 's', url: 'http://h/sse', headers: [] }], true)).toThrow(
      /sse is not supported.*use http or stdio/,
    )
    expect(() => mcpConfigOf([stdio('a b'), stdio('a_b')], true)).toThrow(/two servers named "a_b" \(as "a_b"\)/)
    expect(() => mcpConfigOf([stdio('a')], false)).toThrow(/send mcpServers: \[\]/)
    expect(mcpConfigOf([], false)).toEqual({})
  })
})
