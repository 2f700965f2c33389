// JSON-RPC error codes for what dsh throws. Bad input from the editor is -32602 (invalid params) with
// the fix in the message, an unknown session -32002; only a real fault stays -32603 (internal).
import * as acp from '@agentclientprotocol/sdk'
import { HarnessError } from '@dsh/kernel'
import { checkSessionId } from '@dsh/session'

/** Codes that mean the editor sent something dsh cannot take. */
const INVALID_PARAMS = new Set([
  'SESSION_ID_INVALID',
  'MCP_CONFIG_INVALID',
  'ACP_MCP_SERVERS_INVALID',
  'PRESET_NOT_FOUND',
  'PRESET_INVALID',
])
/** Codes that mean the request cannot be done in the session's state. */
const INVALID_REQUEST = new Set(['SESSION_BUSY', 'PRESET_LOCKED', 'NO_PRESETS'])

/** `error` as the JSON-RPC error the editor should see (anything unrecognised is returned as is). */
export function requestErrorOf(error: unknown): unknown {
  if (!HarnessError.is(error)) return error
  if (INVALID_PARAMS.has(error.code)) return acp.RequestError.invalidParams({ code: error.code }, error.message)
  const id = error.facts.id
  if (error.code === 'SESSION_NOT_FOUND' && typeof id === 'string') return acp.RequestError.sessionNotFound(id)
  if (INVALID_REQUEST.has(error.code)) return acp.RequestError.invalidRequest({ code: error.code }, error.message)
  return error
}

/** Runs `work`, answering what dsh throws with the matching JSON-RPC error. */
export async function answering<T>(work: () => T | Promise<T>): Promise<T> {
  try {
    return await work()
  } catch (error) {
    throw requestErrorOf(error)
  }
}

/** `id` when it can name a session; else throws invalid params (e.g. `../../etc/passwd`). */
export function checkedSessionId(id: string): string {
  try {
    return checkSessionId(id)
  } catch (error) {
    throw requestErrorOf(error)
  }
}
