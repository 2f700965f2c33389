// Background jobs of the open session's agent, each with its output on demand. The page reads output
// from a byte offset of its own (`GET .../jobs/:id/output?from=N`): the model's one read cursor is
// the model's, so watching a job never changes what `job_output` returns next (decision 366).

import type { JobOutputView, JobView } from '@dsh/surfaces/wire'
import { useEffect, useRef, useState } from 'preact/hooks'
import { api } from './connection'
import './views.css'

/** How often an open, running job's output is read again. */
const POLL_MS = 250
/** The page keeps this many characters of a job's output (the newest); older text is dropped. */
const KEEP_CHARS = 256 * 1024

export function Jobs(props: { sessionId: string; jobs: JobView[]; failed: (error: unknown) => void }) {
  const { sessionId, jobs, failed } = props
  // Opens when a job starts; closes only when the person closes it (finished output stays readable).
  const running = jobs.filter((job) => job.status === 'running').length
  const [shown, setShown] = useState(running > 0)
  useEffect(() => {
    if (running > 0) setShown(true)
  }, [running])
  if (!jobs.length) return null
  return (
    <details class="jobs" open={shown} onToggle={(e) => setShown(e.currentTarget.open)}>
      <summary>Background jobs ({running} running)</summary>
      <ul>
        {jobs.map((job) => (
          <JobRow key={job.id} sessionId={sessionId} job={job} failed={failed} />
        ))}
      </ul>
    </details>
  )
}

function JobRow({ sessionId, job, failed }: { sessionId: string; job: JobView; failed: (error: unknown) => void }) {
  const [open, setOpen] = useState(false)
  return (
    <li class={`job ${job.status}`} data-job={job.id}>
      <code>{job.id}</code> {job.title} <span class="job-status">{job.summary ?? job.status}</span>
      <button
        type="button"
        class="link job-toggle"
        aria-expanded={open}
        aria-controls={`job-output-${job.id}`}
        onClick={() => setOpen(!open)}
      >
        {open ? 'hide output' : 'output'}
      </button>
      {job.status === 'running' ? (
        <button
          type="button"
          class="link job-kill"
          aria-label={`kill ${job.id}`}
          onClick={() => void api('POST', `/api/sessions/${sessionId}/jobs/${job.id}/kill`).catch(failed)}
        >
          kill
        </button>
      ) : null}
      {open ? <JobOutput sessionId={sessionId} jobId={job.id} running={job.status === 'running'} /> : null}
    </li>
  )
}

/** The job's output as it grows: read from the last offset while the job runs, once more after it ends. */
function JobOutput({ sessionId, jobId, running }: { sessionId: string; jobId: string; running: boolean }) {
  const [text, setText] = useState('')
  const [note, setNote] = useState('')
  const next = useRef(0)
  const box = useRef<HTMLPreElement>(null)
  useEffect(() => {
    let stopped = false
    let timer: ReturnType<typeof setTimeout> | undefined
    const read = async () => {
      try {
        const out = await api<JobOutputView>(
          'GET',
          `/api/sessions/${sessionId}/jobs/${encodeURIComponent(jobId)}/output?from=${next.current}`,
        )
        if (stopped) return
        next.current = out.next
        if (out.lost) setNote(`${out.lost} earlier bytes are no longer available`)
        if (out.text) setText((current) => keepTail(current + out.text))
        // Running: read again shortly. Ended: drain what is left (a read returns at most 32 KiB).
        if (out.status === 'running') timer = setTimeout(read, POLL_MS)
        else if (out.text) timer = setTimeout(read, 0)
      } catch (error) {
        if (!stopped) setNote(error instanceof Error ? error.message : String(error))
      }
    }
    void read()
    return () => {
      stopped = true
      if (timer) clearTimeout(timer)
    }
  }, [sessionId, jobId, running])
  useEffect(() => {
    const el = box.current
    if (el) el.scrollTop = el.scrollHeight
  }, [text])
  return (
    <div class="job-output" id={`job-output-${jobId}`} role="log" aria-label={`output of ${jobId}`}>
      {note ? <div class="job-note">{note}</div> : null}
      <pre ref={box}>{text || (running ? '(no output yet)' : '(no output)')}</pre>
    </div>
  )
}

function keepTail(text: string): string {
  return text.length > KEEP_CHARS ? text.slice(text.length - KEEP_CHARS) : text
}
