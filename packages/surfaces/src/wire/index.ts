// @dsh/surfaces/wire: the types every client of the session host shares, types only (the browser
// and the SDK import this entry; nothing here runs). The operations and their params come from the
// wire table (`./operations.ts`); the RPC envelope and notifications, the web stream frames and the
// client-module contract are re-exported under the same entry.

export type { AgentKind, AgentRow, AgentStateName } from '../host/agents.js'
export type * from '../rpc/protocol.js'
export type * from '../web/client-api.js'
export type * from '../web/protocol.js'
export type { HttpMethod, WebRoute } from './operation.js'
export type {
  OperationName,
  OperationParams,
  OperationResult,
  RpcOperationName,
  WebOperationName,
} from './operations.js'
