// Everything of the LSP provider that needs vscode-languageserver-protocol at run time, in one module
// that stdio.ts imports on the first question: loading the protocol library costs about 300 ms of CPU,
// and most sessions never ask a language server anything before their first model request.
export {
  DefinitionRequest,
  DocumentSymbolRequest,
  HoverRequest,
  ReferencesRequest,
  WorkspaceSymbolRequest,
} from 'vscode-languageserver-protocol/node'
export { ServerClient } from './client.js'
export { hoverText, toDiagnostic, toLocations, toSymbols } from './convert.js'
