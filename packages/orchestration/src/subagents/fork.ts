// Provider `fork`: an in-process child seeded with the parent's log up to its last closed turn (the
// turn that is delegating right now is not part of the seed), so it starts knowing the conversation.
import type { Context } from '@dsh/kernel'
import { startInProcess } from './in-process.js'
import type {} from './index.js'

export default {
  name: 'subagents-fork',
  inject: ['subagents'],
  apply(ctx: Context) {
    ctx.subagents.register({
      name: 'fork',
      start: (launch) => startInProcess(launch, 'fork'),
      resume: (launch, childSession) => startInProcess(launch, { resume: childSession }),
    })
  },
}
