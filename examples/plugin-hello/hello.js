// The `hello` tool: writes "<greeting>, NAME!" to hello-NAME.txt in the session's working directory,
// through the host's ctx.fs (so the sandbox policy and the tool pipeline apply as to built-in tools).
// `@dsh/agent/tools` is a peer dependency: it resolves to the copy of the dsh that loads this plugin.
import { defineTool } from '@dsh/agent/tools'

export default {
  name: 'hello-tool',
  inject: ['tools', 'fs'],
  apply(ctx, config) {
    const greeting = config?.greeting ?? 'Hello'
    ctx.tools.register(
      defineTool({
        name: 'hello',
        description: 'Write a greeting for NAME into the file hello-NAME.txt in the working directory.',
        parameters: {
          type: 'object',
          properties: { name: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,40}$', description: 'Who to greet.' } },
          required: ['name'],
          additionalProperties: false,
        },
        async execute(args, call) {
          const cwd = call.sessionId ? ctx.get('sessions')?.get(call.sessionId)?.header.cwd : undefined
          const options = { ...(cwd ? { cwd } : {}), ...(call.sessionId ? { sessionId: call.sessionId } : {}) }
          const path = ctx.fs.resolvePath(`hello-${args.name}.txt`, options)
          await ctx.fs.writeText(path, `${greeting}, ${args.name}!\n`, { kind: 'overwrite' }, options)
          return `Wrote ${path}.`
        },
      }),
    )
  },
}
