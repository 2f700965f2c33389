// The floor of the loop benchmark: a hand-written fetch + SSE loop against the same mock, with the
// same one tool and no harness. Keeps the history, resends it each step, runs `echo` in place.
// Prints one JSON line like dsh.mjs.
const url = `${process.env.MOCK_BASE_URL}/chat/completions`
const tools = [
  {
    type: 'function',
    function: {
      name: 'echo',
      description: 'Echo the given text back.',
      parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
    },
  },
]
const messages = [
  { role: 'system', content: 'You are a test agent.' },
  { role: 'user', content: 'Run the scenario.' },
]

/** Reads one streamed completion: the text and the tool calls, assembled from their deltas. */
async function complete() {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-mock' },
    body: JSON.stringify({ model: 'deepseek-v4-pro', messages, tools, stream: true }),
  })
  if (!response.ok) throw new Error(`mock answered ${response.status}`)
  const decoder = new TextDecoder()
  let buffer = ''
  let text = ''
  const calls = []
  for await (const bytes of response.body) {
    buffer += decoder.decode(bytes, { stream: true })
    let end = buffer.indexOf('\n\n')
    while (end >= 0) {
      const frame = buffer.slice(0, end)
      buffer = buffer.slice(end + 2)
      end = buffer.indexOf('\n\n')
      if (!frame.startsWith('data: ') || frame === 'data: [DONE]') continue
      const delta = JSON.parse(frame.slice(6)).choices?.[0]?.delta
      if (!delta) continue
      if (delta.content) text += delta.content
      for (const part of delta.tool_calls ?? []) {
        calls[part.index] ??= { id: '', name: '', arguments: '' }
        const call = calls[part.index]
        if (part.id) call.id = part.id
        if (part.function?.name) call.name = part.function.name
        if (part.function?.arguments) call.arguments += part.function.arguments
      }
    }
  }
  return { text, calls }
}

let echoes = 0
const cpu0 = process.cpuUsage()
const start = performance.now()
for (;;) {
  const { text, calls } = await complete()
  messages.push({
    role: 'assistant',
    content: text || null,
    ...(calls.length
      ? {
          tool_calls: calls.map((c) => ({
            id: c.id,
            type: 'function',
            function: { name: c.name, arguments: c.arguments },
          })),
        }
      : {}),
  })
  if (calls.length === 0) break
  for (const call of calls) {
    echoes++
    messages.push({ role: 'tool', tool_call_id: call.id, content: JSON.parse(call.arguments).text })
  }
}
const wall = performance.now() - start
const cpu = process.cpuUsage(cpu0)
console.log(
  JSON.stringify({ steps: echoes, wallMs: wall, cpuMs: (cpu.user + cpu.system) / 1000, bootMs: 0, logBytes: 0 }),
)
