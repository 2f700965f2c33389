// @dsh/ssh/shell: `ctx.shell` on the remote machine: bash-sandbox's resolve and confinement, with the
// remote login environment as the base of every command's environment (this machine's variables mean
// nothing there) and the remote workspace as the default working directory.

import type { Context } from '@dsh/kernel'
import type { BashConfig } from '@dsh/world/shell/bash-local'
import SandboxBash from '@dsh/world/shell/bash-sandbox'
import type {} from './index.js'

export class RemoteBash extends SandboxBash {
  static override readonly inject = ['ssh', 'subprocess', 'sandbox', 'sandboxPolicy']

  constructor(ctx: Context, config: BashConfig = {}) {
    super(ctx, { cwd: ctx.ssh.info.root, ...(config ?? {}) })
  }

  protected override baseEnv(): Record<string, string> {
    return { ...this.home.ssh.info.env }
  }
}

export default RemoteBash
