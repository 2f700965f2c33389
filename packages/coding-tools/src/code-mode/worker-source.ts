// The program run by code mode's worker thread, as source text (a worker from a string needs no file
// next to either src/ or dist/). The model's program runs in a fresh `node:vm` context of that worker:
// only JavaScript's own globals, no require, process, fetch or timers. Its only way out is `tools.x()`,
// which posts a request to the main thread and waits for the answer. Values cross as JSON text and
// errors as strings, so no object of the worker's realm (whose constructors lead to `process`) ever
// reaches the program. Console output and the result are cut here, before they are posted: the main
// thread never receives (or copies) more than the limits, however much the program produces.
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
let logLeft = workerData.maxLogChars
let logCut = false
const hostLog = (text) => {
  if (logCut) return
  let piece = String(text)
  if (piece.length > logLeft) {
    piece = piece.slice(0, logLeft)
    logCut = true
  }
  logLeft -= piece.length
  parentPort.postMessage({ type: 'log', text: piece, cut: logCut })
}
const clipResult = (text) => {
  const max = workerData.maxResultChars
  return text.length > max ? text.slice(0, max) + '\n[result cut at ' + max + ' of ' + text.length + ' characters]' : text
}
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
const finish = (ok, text) => parentPort.postMessage({ type: 'done', ok, text: clipResult(String(text)) })
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
