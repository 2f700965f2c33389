import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { description } from '../src/shared.js'

// Every failure marker a tool emits must be explained in that tool's description (what the model reads).
const MARKERS: Record<string, string[]> = {
  read: ['File not found:', 'Is a directory:', 'Not a text file:', 'File too large:', 'continue with offset='],
  write: ['[not read]', '[changed on disk]', '[sandbox: denied', '[escalation refused]', 'sandbox_permissions'],
  edit: ['[no match]', '[ambiguous]', '[not read]', '[changed on disk]', 'File not found:', '[sandbox: denied'],
  ls: ['[truncated:', 'File not found:', 'Not a directory:'],
  glob: ['[truncated:', 'No files found'],
  grep: ['[truncated:', 'No matches', 'Invalid pattern:'],
  bash: [
    '[exit code: N]',
    '[timed out after',
    '[aborted:',
    '[sandbox: denied',
    '[sandbox unavailable:',
    '[escalation refused]',
    'run_in_background',
    'job_output',
  ],
  job_output: ['[no job', 'more bytes unread', 'running', 'completed', 'failed', 'killed'],
  job_list: ['status'],
  job_kill: ['[no job'],
}

describe('tool descriptions', () => {
  it.each(Object.entries(MARKERS))('%s explains every marker it emits', (tool, markers) => {
    const text = description(tool)
    for (const marker of markers) expect(text, `${tool}: ${marker}`).toContain(marker)
  })

  it('ship with the package', () => {
    const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
      files: string[]
    }
    expect(manifest.files).toContain('descriptions')
  })
})
