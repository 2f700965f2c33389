// The program run by code mode's worker thread, as source text (a worker from a string needs no file
// next to either src/ or dist/). The model's program runs in a fresh `node:vm` context of that worker:
// only JavaScript's own globals, no require, process, fetch or timers. Its only way out is `tools.x()`,
// which posts a request to the main thread and waits for the answer. Values cross as JSON text and
// errors as strings, so no object of the worker's realm (whose constructors lead to `process`) ever
// reaches the program.
export const WORKER_SOURCE = String.raw`
const { parentPort, workerData } = require('node:worker_threads')
const vm = require('node:vm')
const pending = new Map()
let seq = 0
parentPort.on('message', (message) => {
  const waiter = pending.get(message.id)
  if (!waiter) return
  pending.delete(message.id)
  if (message.ok) waiter.resolve(message.text)
  else waiter.reject(String(message.error))
})
const hostCall = (name, argsText) =>
  new Promise((resolve, reject) => {
    const id = ++seq
    pending.set(id, { resolve, reject })
    parentPort.postMessage({ type: 'call', id, name, args: argsText })
  })
const hostLog = (text) => parentPort.postMessage({ type: 'log', text: String(text) })
const context = vm.createContext({}, { codeGeneration: { strings: false, wasm: false } })
const bootstrap = vm.runInContext(
  '(function (hostCall, hostLog, namesText) {' +
    'const names = JSON.parse(namesText);' +
    'const tools = Object.create(null);' +
    'for (const name of names) {' +
    '  tools[name] = async (args) => {' +
    '    let text;' +
    '    try { text = await hostCall(name, JSON.stringify(args === undefined ? {} : args)); }' +
    '    catch (error) { throw new Error(String(error)); }' +
    '    const result = JSON.parse(text);' +
    '    if (result.isError) { const e = new Error(result.text); e.toolError = true; throw e; }' +
    '    return result.text;' +
    '  };' +
    '}' +
    'const show = (v) => typeof v === "string" ? v : JSON.stringify(v);' +
    'const console = Object.freeze({ log: (...a) => hostLog(a.map(show).join(" ")) });' +
    'return { tools: Object.freeze(tools), console };' +
  '})',
  context,
)
const api = bootstrap(hostCall, hostLog, JSON.stringify(workerData.tools))
context.tools = api.tools
context.console = api.console
const finish = (ok, text) => parentPort.postMessage({ type: 'done', ok, text: String(text) })
try {
  const run = vm.runInContext(
    '(async () => {\n' + workerData.code + '\n})().then(' +
      '(v) => v === undefined ? "" : typeof v === "string" ? v : JSON.stringify(v, null, 2),' +
      '(e) => { throw String(e && e.stack ? e.stack.split("\\n").slice(0, 3).join("\\n") : e) })',
    context,
    { filename: 'run_code.js', timeout: workerData.syncTimeoutMs },
  )
  run.then((text) => finish(true, text), (error) => finish(false, error))
} catch (error) {
  finish(false, error && error.message ? error.message : error)
}
`
