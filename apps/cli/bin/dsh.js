#!/usr/bin/env node
// Entry point of the `dsh` binary: loads the built CLI, so this file exists before the first build.
// The V8 compile cache (Node >= 22.1) makes every later start skip compiling dsh's modules; older
// Node has no such API and starts as before.
const { enableCompileCache } = await import('node:module')
enableCompileCache?.()
let cli
try {
  cli = await import('../dist/main.js')
} catch (error) {
  if (error?.code === 'ERR_MODULE_NOT_FOUND' && String(error.message).includes('dist/main.js')) {
    process.stderr.write('dsh: the CLI is not built; run `npm ci` (or `npm run build`) in the dsh checkout\n')
    process.exit(1)
  }
  throw error
}
// Start-up phases as performance marks (bench/startup.mjs reads them): the CLI's own modules are loaded.
performance.mark('dsh:cli-loaded')
const code = await cli.main(process.argv)
process.exitCode = code
// Everything dsh started is disposed by now; if a plugin leaked a handle, do not hang forever.
setTimeout(() => {
  process.stderr.write('dsh: something kept the process alive after shutdown (a plugin leaked a handle); exiting\n')
  process.exit(code)
}, 3000).unref()
