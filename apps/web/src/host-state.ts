// The host's projection in this page: the session list, pending approvals and questions, modes and
// presets, fed by the host downlink stream; plus the route and the one place a failed call is shown.

import type {
  PendingApproval as ApprovalView,
  ConfigNotice,
  HostFrame,
  PresetSummary,
  PendingQuestion as QuestionView,
  SessionSummary,
} from '@dsh/surfaces/wire'
import { useEffect, useState } from 'preact/hooks'
import { notifyWaiting } from './browser-notify'
import { ApiFailure, openStream } from './connection'
import { applyManifest } from './plugins'

export const host = {
  sessions: [] as SessionSummary[],
  approvals: new Map<string, ApprovalView>(),
  questions: new Map<string, QuestionView>(),
  modes: [] as string[],
  /** Agent presets a new session can take, and the one it gets when none is picked. */
  presets: [] as PresetSummary[],
  defaultPreset: undefined as string | undefined,
  /** Where new sessions start unless a directory is typed (the host's own). */
  defaultCwd: '',
  /** The last report of a watched config edit (`--watch-config`); a refused one shows as a banner. */
  config: undefined as ConfigNotice | undefined,
  connected: false,
  listeners: new Set<() => void>(),
  changed() {
    for (const listener of this.listeners) listener()
  },
}

openStream<HostFrame>(
  () => '/api/streams/host',
  (frame) => {
    if (frame.type === 'host/baseline') {
      host.sessions = frame.sessions
      host.approvals = new Map(frame.approvals.map((approval) => [approval.requestId, approval]))
      host.questions = new Map(frame.questions.map((question) => [question.questionId, question]))
      host.modes = frame.modes
      host.presets = frame.presets ?? []
      host.defaultPreset = frame.defaultPreset
      host.defaultCwd = frame.defaultCwd
      host.config = frame.config
      // Connected means the baseline is in: before it, the page knows no sessions or directory.
      host.connected = true
      applyManifest(frame.clientModules ?? [])
    } else if (frame.type === 'host/client-modules') applyManifest(frame.modules)
    else if (frame.type === 'host/sessions') host.sessions = frame.sessions
    else if (frame.type === 'host/config') host.config = frame.config
    else if (frame.type === 'approval/requested') {
      host.approvals.set(frame.approval.requestId, frame.approval)
      notifyWaiting('dsh: approval needed', frame.approval.summary, frame.approval.sessionId)
    } else if (frame.type === 'approval/settled') host.approvals.delete(frame.requestId)
    else if (frame.type === 'question/requested') {
      host.questions.set(frame.question.questionId, frame.question)
      notifyWaiting('dsh: a question for you', frame.question.question, frame.question.sessionId)
    } else if (frame.type === 'question/settled') host.questions.delete(frame.questionId)
    host.changed()
  },
  (connected) => {
    if (!connected) host.connected = false
    // A call that failed while the host was away is stale once it is back: the toast would only cover
    // the composer (and the send button under it) until clicked.
    if (connected && unreachableShown) {
      unreachableShown = false
      reportError('')
    }
    host.changed()
  },
)

export function useHost() {
  const [, setTick] = useState(0)
  useEffect(() => {
    const listener = () => setTick((tick) => tick + 1)
    host.listeners.add(listener)
    return () => void host.listeners.delete(listener)
  }, [])
  return host
}

export function useRoute(): string {
  const [hash, setHash] = useState(location.hash)
  useEffect(() => {
    const onHash = () => setHash(location.hash)
    addEventListener('hashchange', onHash)
    return () => removeEventListener('hashchange', onHash)
  }, [])
  return hash
}

/** Shows a failed call to the person instead of swallowing it. */
let reportError: (message: string) => void = () => {}
/** Whether the toast shows a call that never reached the host (fetch's TypeError), not an answer. */
let unreachableShown = false
export function failed(error: unknown) {
  unreachableShown = error instanceof TypeError
  reportError(error instanceof ApiFailure ? `${error.code}: ${error.message}` : String(error))
}

/** Where `failed` shows its message (the app's toast); '' clears it. */
export function showErrorsWith(report: (message: string) => void): void {
  reportError = report
}
