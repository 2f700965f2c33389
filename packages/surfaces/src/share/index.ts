// @dsh/surfaces/share: `/share [no-tools]` writes the session as one self-contained HTML page (the
// web client's rendering, no network needed to view it) to `$DSH_HOME/shares/`, and, when the user set
// `share.command`, hands the file's path to that command (for example one that uploads it) and
// answers with the command's first line of output. The command is the user's: a project's settings
// cannot set it (it runs code).
import { execFile } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type {} from '@dsh/composition'
import { launcherHome } from '@dsh/composition/launcher'
import type { CommandReturn } from '@dsh/interaction'
import { type Context, HarnessError } from '@dsh/kernel'
import type {} from '@dsh/session/store/query'
import type {} from '@dsh/settings'
import { embeddedChildren, embeddedImages, sessionHtml } from '../web/html-export.js'

declare module '@dsh/settings' {
  interface SettingsMap {
    'share.command': string
  }
}

export const name = 'share'
export const inject = ['commands', 'settings']

function homeOf(ctx: Context): string {
  return launcherHome(ctx)
}

function runShare(command: string, file: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('bash', ['-c', `${command} "$1"`, 'share', file], { timeout: 60_000 }, (error, stdout, stderr) => {
      if (error)
        return reject(
          new HarnessError(
            'SHARE_COMMAND_FAILED',
            `share.command failed: ${(stderr || error.message).trim().split('\n')[0]}`,
            {},
          ),
        )
      resolve(stdout.trim().split('\n')[0] ?? '')
    })
  })
}

export function apply(ctx: Context): void {
  ctx.settings.define('share.command', {
    schema: { type: 'string' },
    default: '',
    description:
      'a command /share runs with the HTML file as its argument (e.g. one that uploads it and prints the link)',
    allowed: 'a shell command; the file path is appended',
  })
  ctx.commands.register({
    name: 'share',
    description:
      'Write this session as one HTML page to share (no-tools leaves tool outputs out); runs share.command on it when set',
    usage: '[no-tools]',
    async run(args, context): Promise<CommandReturn> {
      const session = context.session
      if (!session) throw new HarnessError('COMMAND_NEEDS_SESSION', '/share needs a current session', { name: 'share' })
      const words = args.trim().split(/\s+/).filter(Boolean)
      if (words.some((word) => word !== 'no-tools'))
        throw new HarnessError('COMMAND_USAGE', `/share takes no-tools or nothing, not "${args.trim()}"`, {
          name: 'share',
        })
      const dir = join(homeOf(ctx), 'shares')
      mkdirSync(dir, { recursive: true, mode: 0o700 })
      const file = join(dir, `dsh-${session.id}.html`)
      const attachments = ctx.get('attachments')
      const images = await embeddedImages(session, async (ref) => attachments?.get(ref))
      const query = ctx.get('sessionQuery')
      const children = await embeddedChildren(session, async (id) => query?.read(id))
      writeFileSync(file, sessionHtml(session, { dropToolOutput: words.includes('no-tools'), images, children }), {
        mode: 0o600,
      })
      const command = ctx.settings.has('share.command') ? ctx.settings.get('share.command') : ''
      if (!command?.trim())
        return { text: `wrote ${file} (one page, opens anywhere without a network)`, data: { file } }
      const shown = await runShare(command, file)
      return { text: `wrote ${file}; share.command: ${shown || '(no output)'}`, data: { file, output: shown } }
    },
  })
}

export default { name, inject, apply }
