// @dsh/sdk: drive a dsh runtime (`dsh rpc`) from TypeScript. See README.md for the contract of `run`.

export type {
  AgentLifecycleNotification,
  AgentStatusNotification,
  InitializeParams,
  InitializeResult,
  PendingApproval,
  PendingQuestion,
  PromptReceipt,
  RpcMethods,
  RpcNotifications,
  SessionCreateParams,
  SessionEventNotification,
  SessionListRow,
} from '@dsh/surfaces/wire'
export { DshClient } from './client.js'
export type {
  ApprovalHandler,
  ApprovalReply,
  DshClientOptions,
  DshNotification,
  KeptRule,
  QuestionHandler,
  RunResult,
  SubscribeOptions,
} from './types.js'
export { DshRpcError } from './types.js'
