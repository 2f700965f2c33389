// The open session's header: where it runs, its status and preset, the mode and model pickers, the
// token meter, client modules' badges and the session's actions.
import type { StatusLineResult } from '@dsh/surfaces/wire'
import { useEffect, useState } from 'preact/hooks'
import { ApiFailure, api } from '../connection'
import { failed, useHost } from '../host-state'
import { modelChoices, useModels } from '../models'
import { costText, type SessionProjection } from '../projection'
import { SessionActions } from '../session-actions'
import { InSlot, slots, useSlots } from '../slots'
import { submit } from './composer'

export function SessionHead({ projection }: { projection: SessionProjection }) {
  const sessionId = projection.sessionId
  return (
    <header class="session-head">
      <span class="cwd" title={projection.header?.cwd ?? ''}>
        {projection.header?.cwd ?? ''}
      </span>
      <span class={`status ${projection.status}`}>{projection.status}</span>
      {projection.preset && (
        <span class="preset" data-preset={projection.preset} title="agent preset (fixed once the session has a turn)">
          {projection.preset}
        </span>
      )}
      <ModePicker projection={projection} />
      <ModelPicker projection={projection} />
      <Meter projection={projection} />
      <UserStatusLine projection={projection} />
      {projection.header?.parentSession ? (
        <a class="link compare" href={`#/compare/${sessionId}`} title="this fork beside the session it came from">
          compare with the original
        </a>
      ) : null}
      <HeaderBadges sessionId={sessionId} />
      <SessionActions
        sessionId={sessionId}
        title={useHost().sessions.find((row) => row.sessionId === sessionId)?.title}
        failed={failed}
      />
      <ContinueInTerminal projection={projection} />
      <button
        type="button"
        class="id link"
        data-id={sessionId}
        title={`session ${sessionId} (click to copy)`}
        onClick={() => void navigator.clipboard?.writeText(sessionId).catch(() => undefined)}
      >
        {sessionId.slice(0, 8)}
      </button>
    </header>
  )
}

/**
 * The exact command that picks this session up in a terminal (issue 39): shown as the title and copied
 * on click. With a shared PostgreSQL store it works from another machine once the lease is free.
 */
function ContinueInTerminal({ projection }: { projection: SessionProjection }) {
  const [copied, setCopied] = useState(false)
  const cwd = projection.header?.cwd
  const command = `${cwd ? `cd ${JSON.stringify(cwd)} && ` : ''}dsh --resume ${projection.sessionId}`
  return (
    <button
      type="button"
      class="link continue-terminal"
      title={command}
      data-command={command}
      onClick={() =>
        void navigator.clipboard
          ?.writeText(command)
          .then(() => setCopied(true))
          .catch(() => undefined)
      }
    >
      {copied ? 'command copied' : 'continue in terminal'}
    </button>
  )
}

/** Header badges of client modules for the open session. */
function HeaderBadges({ sessionId }: { sessionId: string }) {
  useSlots()
  return (
    <>
      {[...slots.badges.values()].map((entry) => (
        <span key={entry.value.id} class="badge" data-badge={entry.value.id}>
          <InSlot
            entry={{ owner: entry.owner, value: entry.value.render }}
            slot={`badge ${entry.value.id}`}
            props={{ sessionId }}
          />
        </span>
      ))}
    </>
  )
}

function Meter({ projection }: { projection: SessionProjection }) {
  const usage = projection.usage
  if (!usage) return null
  const window = projection.contextWindow
  const share = window ? ` (${Math.round((usage.inputTokens / window) * 100)}% of ${window})` : ''
  const cost = costText(projection.cost)
  return (
    <span class="meter" title="tokens of the last request; the session's cost (unknown: the model has no price)">
      {usage.inputTokens} in / {usage.outputTokens} out{share}
      {cost ? ` · ${cost}` : ''}
    </span>
  )
}

// Colours are the terminal's; the page shows the text.
const SGR = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, 'g')

/**
 * The user's status line (`statusline.command`): asked of the host when the session opens and after
 * each answer or status change (the host runs the command at most every 300 ms). Nothing when unset.
 */
function UserStatusLine({ projection }: { projection: SessionProjection }) {
  const [line, setLine] = useState<StatusLineResult | undefined>()
  const sessionId = projection.sessionId
  const { status, usage, cost } = projection
  useEffect(() => {
    let current = true
    void api<StatusLineResult>('GET', `/api/sessions/${encodeURIComponent(sessionId)}/status-line`)
      .then((answer) => current && setLine(answer))
      // Not attached here (a stored session being read) or no status line row: no line.
      .catch(() => current && setLine(undefined))
    return () => {
      current = false
    }
  }, [sessionId, status, usage, cost])
  if (!line?.configured || (!line.text && !line.error)) return null
  return line.text ? (
    <span class="user-status-line" title="statusline.command">
      {line.text.replace(SGR, '')}
    </span>
  ) : (
    <span class="user-status-line failed" title="statusline.command">
      status line: {line.error}
    </span>
  )
}

/**
 * Switches the session's mode. The host refuses a widening (e.g. to danger-full-access) without
 * `confirm`, so a script on this machine cannot widen it unseen; the page asks the person first, and
 * sends `confirm` only after they said yes. False when they declined.
 */
async function switchMode(sessionId: string, mode: string): Promise<boolean> {
  const path = `/api/sessions/${sessionId}/mode`
  try {
    await api('POST', path, { mode })
    return true
  } catch (error) {
    if (!(error instanceof ApiFailure) || error.code !== 'SANDBOX_MODE_UNCONFIRMED') throw error
    if (!window.confirm(`Switch this session to "${mode}"? It lets the agent do more than now.`)) return false
    await api('POST', path, { mode, confirm: true })
    return true
  }
}

function ModePicker({ projection }: { projection: SessionProjection }) {
  const state = useHost()
  if (!state.modes.length || !projection.mode) return null
  return (
    <select
      aria-label="permission mode"
      value={projection.mode}
      onChange={(e) => {
        const select = e.currentTarget
        void switchMode(projection.sessionId, select.value).then((done) => {
          if (!done) select.value = projection.mode ?? ''
        }, failed)
      }}
    >
      {state.modes.map((mode) => (
        <option key={mode} value={mode}>
          {mode}
        </option>
      ))}
    </select>
  )
}

/** The session's model: any `provider:model` (runs `/model` on the host), suggesting what `dsh models` lists. */
function ModelPicker({ projection }: { projection: SessionProjection }) {
  const [value, setValue] = useState('')
  const choices = modelChoices(useModels(failed))
  return (
    <form
      class="model"
      onSubmit={(e) => {
        e.preventDefault()
        if (value.trim()) submit(projection.sessionId, 'prompt', `/model ${value.trim()}`)
        setValue('')
      }}
    >
      <input
        aria-label="model"
        list="model-choices"
        placeholder={projection.model ?? 'model (provider:model)'}
        value={value}
        onInput={(e) => setValue(e.currentTarget.value)}
      />
      <datalist id="model-choices">
        {choices.map((choice) => (
          <option key={choice} value={choice} />
        ))}
      </datalist>
    </form>
  )
}
