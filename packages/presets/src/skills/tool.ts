// @dsh/presets/skills/tool: the model-facing half of skills. A system prompt section lists the catalog (names
// and descriptions); the `skill` tool loads a body on demand. The tool result is the durable, logged
// record of the load (a `tool/result` in the session).

import type {} from '@dsh/agent/system-prompt'
import { defineTool, ToolError } from '@dsh/agent/tools'
import { type Context, directService, HarnessError } from '@dsh/kernel'
import type {} from './index.js'

export const name = 'skill-tool'
export const inject = ['skills', 'tools', 'systemPrompt']

export interface SkillToolConfig {
  /** Order of the catalog section in the system prompt. Default 400. */
  order?: number
}

const DESCRIPTION = `Load a skill: instructions (and pointers to files) for a kind of task, written by the user or the project.
The system prompt lists the available skills with a description each. When the task at hand matches a skill's description, load it with this tool before you start, then follow it.
Arguments: name, exactly as listed. The result is the skill's full text; its directory and other files are named at the top, read them with the file tools when the text refers to them.`

export function apply(ctx: Context, config: SkillToolConfig = {}): void {
  const order = config?.order ?? 400
  if (!Number.isInteger(order)) {
    throw new HarnessError('INVALID_SKILLS_CONFIG', 'skill-tool: order must be an integer', { order: String(order) })
  }
  // Rendered before every request: the provider's own object, not Cordis's per-call proxies (decision 351).
  const skills = directService(ctx, 'skills')
  ctx.systemPrompt.register({
    name: 'skills',
    kind: 'section',
    order,
    render: async (scope) => {
      const listed = await (skills() ?? ctx.skills).list(scope.agentId === undefined ? {} : { agentId: scope.agentId })
      if (listed.length === 0) return undefined
      const lines = listed.map((skill) => `- ${skill.name}: ${skill.description}`)
      return `# Skills\nLoad a skill with the skill tool when the task matches its description:\n${lines.join('\n')}`
    },
  })
  ctx.tools.register(
    defineTool<{ name: string }>({
      name: 'skill',
      description: DESCRIPTION,
      mode: 'parallel-safe',
      parameters: {
        type: 'object',
        properties: { name: { type: 'string', description: 'the skill name as listed in the system prompt' } },
        required: ['name'],
        additionalProperties: false,
      },
      presentation: (args) => ({ kind: 'generic', title: `skill ${args.name}` }),
      execute: async (args, call) => {
        let skill: Awaited<ReturnType<typeof ctx.skills.load>>
        try {
          skill = await ctx.skills.load(args.name, call.agentId === undefined ? {} : { agentId: call.agentId })
        } catch (error) {
          if (error instanceof HarnessError) throw new ToolError(error.message, error.code)
          throw error
        }
        const files = skill.files.length > 0 ? `\nOther files: ${skill.files.join(', ')}` : ''
        return {
          content: `Skill "${skill.name}" (${skill.path})\nDirectory: ${skill.dir}${files}\n\n${skill.body}`,
          details: { name: skill.name, path: skill.path, source: skill.source },
        }
      },
    }),
  )
}

export default { name, inject, apply }
