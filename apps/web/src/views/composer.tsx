// What a person sends: the composer (text, attached files, send / steer / queue / cancel), the
// queued and steering messages waiting in the inbox, and the answer of the last /command.

import type { PromptResult, SessionRewindResult } from '@dsh/surfaces/wire'
import { useEffect, useState } from 'preact/hooks'
import { ApiFailure, api } from '../connection'
import { failed } from '../host-state'
import type { SessionProjection } from '../projection'
import { SlotBoundary, slots, useSlots } from '../slots'

export function Queue({ projection }: { projection: SessionProjection }) {
  const [editing, setEditing] = useState<{ id: string; text: string } | undefined>()
  const queue = projection.inbox['next-turn']
  const steering = projection.inbox['next-step']
  if (!queue.length && !steering.length) return null
  const splice = (target: 'next-step' | 'next-turn', start: number, deleteCount: number, texts: string[] = []) =>
    void api('POST', `/api/sessions/${projection.sessionId}/inbox`, { target, start, deleteCount, texts }).catch(failed)
  // A resumed session's queue waits for the person: it runs when they send or press this.
  const waiting = queue.length > 0 && projection.status === 'idle'
  return (
    <div class="queue">
      {waiting ? (
        <div class="queue-waiting">
          {queue.length === 1 ? 'A message is' : `${queue.length} messages are`} queued from before.{' '}
          <button
            type="button"
            class="run-queued"
            onClick={() => void api('POST', `/api/sessions/${projection.sessionId}/inbox/run`).catch(failed)}
          >
            Send queued
          </button>
        </div>
      ) : null}
      {steering.map((item) => (
        <div class="queued steer" key={item.id}>
          <span class="kind">steer</span> {item.text}
        </div>
      ))}
      {queue.map((item, index) => (
        <div class="queued" key={item.id} data-queued={item.id}>
          <span class="kind">queued</span>
          {editing?.id === item.id ? (
            <>
              <input value={editing.text} onInput={(e) => setEditing({ id: item.id, text: e.currentTarget.value })} />
              <button
                type="button"
                onClick={() => {
                  splice('next-turn', index, 1, [editing.text])
                  setEditing(undefined)
                }}
              >
                save
              </button>
            </>
          ) : (
            <>
              <span class="text">{item.text}</span>
              <button type="button" class="link" onClick={() => setEditing({ id: item.id, text: item.text })}>
                edit
              </button>
              <button type="button" class="link" onClick={() => splice('next-turn', index, 1)}>
                remove
              </button>
            </>
          )}
        </div>
      ))}
    </div>
  )
}

/** Shows the answer of the last /command (it is not part of the log). */
let showCommand: (text: string) => void = () => {}

/** A file picked, dropped or pasted into the composer, read as base64 for the prompt request. */
interface PendingFile {
  name: string
  mimeType: string
  data: string
  /** An object URL for the chip's preview (images only). */
  preview?: string
}

function readFile(file: File): Promise<PendingFile> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader()
    reader.onerror = () => reject(reader.error ?? new Error(`cannot read ${file.name}`))
    reader.onload = () => {
      const url = String(reader.result)
      resolve({
        name: file.name || 'pasted image',
        mimeType: file.type,
        data: url.slice(url.indexOf(',') + 1),
        ...(file.type.startsWith('image/') ? { preview: URL.createObjectURL(file) } : {}),
      })
    }
    reader.readAsDataURL(file)
  })
}

/**
 * Sends a line as typed: the host runs a registered /command, or queues the message. A /command that
 * widens the session (`/permissions danger-full-access`) is refused without `confirm`, so a script on
 * this machine cannot send it unseen: the page asks the person, and repeats it with `confirm` after a yes.
 */
export function submit(sessionId: string, kind: 'prompt' | 'steer', text: string, files: PendingFile[] = []) {
  const attachments = files.map(({ name, mimeType, data }) => ({ name, data, ...(mimeType ? { mimeType } : {}) }))
  const body = files.length ? { text, attachments } : { text }
  const path = `/api/sessions/${sessionId}/${kind}`
  void api<PromptResult>('POST', path, body)
    .catch((error: unknown) => {
      if (!(error instanceof ApiFailure) || error.code !== 'SANDBOX_MODE_UNCONFIRMED') throw error
      if (!window.confirm(`Run "${text.trim()}"? It lets the agent do more than now.`)) return undefined
      return api<PromptResult>('POST', path, { ...body, confirm: true })
    })
    .then((result) => {
      if (result?.command) return commandDone(result.command)
    })
    .catch(failed)
}

function fieldsOf(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? { ...value } : undefined
}

/** Shows a /command's answer; `/new` and `/clear` open a fresh session, `/exit` says it is the terminal's. */
async function commandDone(command: NonNullable<PromptResult['command']>): Promise<void> {
  const data = command.ok ? fieldsOf(command.data) : undefined
  if (data?.action === 'rewind' && typeof data.point === 'number') {
    await rewindFromCommand(command.name, command.sessionId, data.point, data.mode, data.overwrite === true)
    return
  }
  if (data?.action === 'exit') {
    showCommand(
      `/${command.name} does not apply on the web page: it leaves the terminal chat. Close the tab when you are done; the session stays in the list, resumable.`,
    )
    return
  }
  if (data?.action === 'new-session' && typeof data.cwd === 'string') {
    const created = await api<{ sessionId: string }>('POST', '/api/sessions', { cwd: data.cwd })
    location.hash = `#/s/${created.sessionId}`
    showCommand(`/${command.name}: a new session; the previous one stays in the list`)
    return
  }
  showCommand(`/${command.name}: ${command.text}`)
}

/**
 * `/rewind N conversation|both` typed here: the host makes the new session (the command only names the
 * point), so the page asks for the rewind and opens the fork with the message back in the composer.
 */
async function rewindFromCommand(
  name: string,
  sessionId: string,
  point: number,
  mode: unknown,
  overwrite: boolean,
): Promise<void> {
  const chosen = mode === 'conversation' || mode === 'files' ? mode : 'both'
  const result = await api<SessionRewindResult>('POST', `/api/sessions/${encodeURIComponent(sessionId)}/rewind`, {
    point,
    mode: chosen,
    ...(overwrite ? { overwrite } : {}),
  })
  if (result.files?.code === 'REWIND_CONFLICT') {
    showCommand(`/${name}: ${result.files.text} (/rewind ${point} ${chosen} overwrite writes them anyway)`)
    return
  }
  if (result.previousSessionId) {
    setDraft(result.sessionId, result.text ?? '')
    location.hash = `#/s/${result.sessionId}`
    return
  }
  showCommand(`/${name}: ${result.files?.text ?? 'done'}`)
}

/** Buttons client modules add to the composer; a failing action is reported like a failed call. */
function ComposerActions(props: { sessionId: string; text: string; setText: (text: string) => void }) {
  useSlots()
  return (
    <>
      {[...slots.composer.values()].map(({ owner, value: action }) => (
        <SlotBoundary key={action.id} owner={owner} slot={`composer ${action.id}`}>
          <button
            type="button"
            class="composer-action"
            data-action={action.id}
            title={action.title}
            onClick={() => {
              try {
                void Promise.resolve(action.run({ ...props })).catch(failed)
              } catch (error) {
                failed(error)
              }
            }}
          >
            {action.label}
          </button>
        </SlotBoundary>
      ))}
    </>
  )
}

/** Text waiting for a session's composer (a conversation rewind gives the message back to edit). */
const drafts = new Map<string, string>()

export function setDraft(sessionId: string, text: string): void {
  drafts.set(sessionId, text)
}

export function Composer({ projection }: { projection: SessionProjection }) {
  const [text, setText] = useState('')
  useEffect(() => {
    const draft = drafts.get(projection.sessionId)
    if (draft === undefined) return
    drafts.delete(projection.sessionId)
    setText(draft)
  }, [projection.sessionId])
  const [output, setOutput] = useState('')
  const [files, setFiles] = useState<PendingFile[]>([])
  const [dragging, setDragging] = useState(false)
  showCommand = setOutput
  const running = projection.status === 'running'
  const send = (kind: 'prompt' | 'steer') => {
    const value = text.trim()
    if (!value && files.length === 0) return
    setText('')
    setOutput('')
    setFiles([])
    submit(projection.sessionId, kind, value || 'See the attached files.', files)
  }
  const add = (list: FileList | File[] | null | undefined) => {
    const picked = [...(list ?? [])]
    if (picked.length === 0) return
    void Promise.all(picked.map(readFile))
      .then((read) => setFiles((current) => [...current, ...read]))
      .catch(failed)
  }
  return (
    <>
      {output ? (
        <button type="button" class="command-output" title="dismiss" onClick={() => setOutput('')}>
          {output}
        </button>
      ) : null}
      <form
        class={dragging ? 'composer dragging' : 'composer'}
        onSubmit={(e) => {
          e.preventDefault()
          send(running ? 'steer' : 'prompt')
        }}
        onDragOver={(e) => {
          e.preventDefault()
          setDragging(true)
        }}
        onDragLeave={() => setDragging(false)}
        onDrop={(e) => {
          e.preventDefault()
          setDragging(false)
          add(e.dataTransfer?.files)
        }}
      >
        {files.length > 0 ? (
          <ul class="attachments" aria-label="attachments">
            {files.map((file, index) => (
              <li key={`${file.name}-${index}`} class="attachment">
                {file.preview ? <img class="thumb" src={file.preview} alt={file.name} /> : null}
                <span class="name">{file.name}</span>
                <button
                  type="button"
                  class="remove"
                  aria-label={`remove ${file.name}`}
                  onClick={() => setFiles((current) => current.filter((_, i) => i !== index))}
                >
                  ×
                </button>
              </li>
            ))}
          </ul>
        ) : null}
        <textarea
          value={text}
          aria-label="message"
          placeholder={
            running ? 'Steer the running turn, or queue a follow-up' : 'Ask dsh (drop or paste files to attach)'
          }
          onPaste={(e) => {
            const pasted = e.clipboardData?.files
            if (pasted && pasted.length > 0) {
              e.preventDefault()
              add(pasted)
            }
          }}
          onInput={(e) => setText(e.currentTarget.value)}
          onKeyDown={(e) => {
            if (e.key === 'Enter' && !e.shiftKey) {
              e.preventDefault()
              send(running ? 'steer' : 'prompt')
            }
          }}
        />
        <div class="actions">
          <ComposerActions sessionId={projection.sessionId} text={text} setText={setText} />
          <label class="attach">
            Attach
            <input
              type="file"
              multiple
              aria-label="attach files"
              onChange={(e) => {
                add(e.currentTarget.files)
                e.currentTarget.value = ''
              }}
            />
          </label>
          {running ? (
            <>
              <button type="submit" class="steer">
                Steer
              </button>
              <button type="button" class="queue-followup" onClick={() => send('prompt')}>
                Queue
              </button>
              <button
                type="button"
                class="cancel"
                onClick={() => void api('POST', `/api/sessions/${projection.sessionId}/cancel`).catch(failed)}
              >
                Cancel
              </button>
            </>
          ) : (
            <button type="submit" class="send">
              Send
            </button>
          )}
        </div>
      </form>
    </>
  )
}
