// Row module for the loop benchmark: the one tool every run gets, `echo` ({text} -> text).
import { defineTool } from '@dsh/agent/tools'

export const echoTool = defineTool({
  name: 'echo',
  description: 'Echo the given text back.',
  parameters: {
    type: 'object',
    properties: { text: { type: 'string' } },
    required: ['text'],
    additionalProperties: false,
  },
  execute: (args) => {
    globalThis.__dshLoopBenchEchoes = (globalThis.__dshLoopBenchEchoes ?? 0) + 1
    return args.text
  },
})

export default {
  name: 'bench-echo-tool',
  inject: ['tools'],
  apply(ctx) {
    ctx.tools.register(echoTool)
  },
}
