// @dsh/sdk: drive a dsh runtime (`dsh rpc`) from TypeScript. See README.md for the contract of `run`.

export type {
  AgentLifecycleNotification,
  AgentStatusNotification,
  ApprovalRequestedNotification,
  InitializeParams,
  InitializeResult,
  PromptResult,
  QuestionRequestedNotification,
  RpcMethods,
  RpcNotifications,
  SessionEventNotification,
  SessionSummary,
} from '@dsh/surfaces/rpc/protocol'
export type {
  ApprovalHandler,
  DshClientOptions,
  DshNotification,
  QuestionHandler,
  RunResult,
  SubscribeOptions,
} from './client.js'
export { DshClient, DshRpcError } from './client.js'
