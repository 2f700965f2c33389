// An example of a plugin with a browser side, loaded only through config (row `web-plugin-example`
// of the web bundle, disabled there). The model gets `show_table`; the page gets a client module that
// draws its calls as tables and adds a settings section. Disabling the row removes the tool and, in
// every open page, the renderer and the section.

import { defineTool, ToolError } from '@dsh/agent/tools'
import type { Context } from '@dsh/kernel'
import type {} from '@dsh/surfaces/web'

export interface TableArgs {
  title?: string
  columns: string[]
  rows: string[][]
}

/** The table as Markdown: what the model gets back, and what a page without the renderer shows. */
export function tableText(args: TableArgs): string {
  const cell = (value: unknown) =>
    String(value ?? '')
      .replace(/\|/g, '\\|')
      .replace(/\n/g, ' ')
  const line = (cells: unknown[]) => `| ${args.columns.map((_, i) => cell(cells[i])).join(' | ')} |`
  const lines = [line(args.columns), `| ${args.columns.map(() => '---').join(' | ')} |`, ...args.rows.map(line)]
  return args.title ? `${args.title}\n\n${lines.join('\n')}` : lines.join('\n')
}

export default {
  name: 'web-plugin-example',
  inject: ['tools', 'webHost'],
  apply(ctx: Context) {
    ctx.tools.register(
      defineTool<TableArgs>({
        name: 'show_table',
        description:
          'Show the user a table. The web page draws it as a table; you get the same table back as Markdown.',
        mode: 'parallel-safe',
        parameters: {
          type: 'object',
          properties: {
            title: { type: 'string' },
            columns: { type: 'array', items: { type: 'string' }, minItems: 1 },
            rows: { type: 'array', items: { type: 'array', items: { type: 'string' } } },
          },
          required: ['columns', 'rows'],
          additionalProperties: false,
        },
        presentation: (args) => ({ kind: 'generic', title: 'Table', subtitle: args.title ?? '' }),
        execute(args) {
          const wide = args.rows.findIndex((row) => row.length > args.columns.length)
          if (wide >= 0)
            throw new ToolError(
              `row ${wide} has ${args.rows[wide]?.length} cells but there are ${args.columns.length} columns; add a column or shorten the row`,
              'TABLE_SHAPE',
            )
          return tableText(args)
        },
      }),
    )
    ctx.effect(
      () =>
        ctx.webHost.registerClientModule({
          id: 'web-plugin-example',
          path: new URL('../client/show-table.js', import.meta.url),
        }),
      'web-plugin-example.client',
    )
  },
}
