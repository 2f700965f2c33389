// The scripted model of the loop benchmark, on @dsh/test-support's mock server (DeepSeek SSE): with K
// tool results in the request and N steps asked for, K < N answers one `echo` call `step K+1`, K >= N
// answers `done`. Stateless, so both the dsh run and the raw baseline talk to the same script.
import { completionResponse, startMockLlmServer } from '@dsh/test-support'

export async function startEchoMock(steps) {
  const server = await startMockLlmServer({
    respond: (request) => {
      const messages = request.body?.messages ?? []
      const k = messages.filter((message) => message.role === 'tool').length
      // Drop what the server recorded: long runs would otherwise hold every request body.
      request.rawBody = ''
      request.body = undefined
      if (k >= steps) return completionResponse({ text: ['do', 'ne'], usage: usageOf(k) })
      return completionResponse({
        toolCalls: [{ id: `call_${k + 1}`, name: 'echo', arguments: ['{"text":"', `step ${k + 1}`, '"}'] }],
        usage: usageOf(k),
      })
    },
  })
  return server
}

function usageOf(k) {
  const prompt = 2000 + 60 * k
  return {
    prompt_tokens: prompt,
    completion_tokens: 12,
    total_tokens: prompt + 12,
    prompt_cache_hit_tokens: 0,
    prompt_cache_miss_tokens: prompt,
  }
}
