// Provider `spawn`: an in-process child with a fresh session (no parent facts in its log; the header
// still records `parentSession`).
import type { Context } from '@dsh/kernel'
import { startInProcess } from './in-process.js'
import type {} from './index.js'

export default {
  name: 'subagents-spawn',
  inject: ['subagents'],
  apply(ctx: Context) {
    ctx.subagents.register({
      name: 'spawn',
      start: (launch) => startInProcess(launch, 'fresh'),
      resume: (launch, childSession) => startInProcess(launch, { resume: childSession }),
    })
  },
}
