// @dsh/composition: bundles, profiles and patches become one effective plugin tree, which boots
// under a fresh Cordis root, is audited, dumped with provenance, and reconfigured on patch edits.

export { boot } from './boot.js'
export type { DumpOptions } from './dump.js'
export { dumpTree } from './dump.js'
export type { EvalEnvironment } from './expressions.js'
export { ConfigExpr, configTags, evaluateConfig, evaluateExpr } from './expressions.js'
export type { LauncherConfig } from './launcher.js'
export { LauncherService } from './launcher.js'
export type { BundleRef, EffectiveRow, EffectiveTree, Layer, LayerEntry, LayerKind, RowSpec } from './layers.js'
export {
  applyLayers,
  checkEntries,
  checkRows,
  isBundleRef,
  parseLayerEntries,
  parseLayerText,
  readLayer,
  readLayerEntries,
} from './layers.js'
export type { ParseCache, ParseMode } from './parse-cache.js'
export { cachedParse, parseCacheOf } from './parse-cache.js'
export { checkPluginRows, inside as checkInsidePackage, specifierPackage } from './plugin-rows.js'
export type { LayerOptions, ProfileManifest } from './profile.js'
export {
  dshHome,
  findPackageDir,
  listTemplates,
  loadProfile,
  profileLayers,
  readUserLayers,
  resolveBundle,
  userPatchFiles,
} from './profile.js'
export type { ApplyReport, AuditEntry, AuditKind, LogRecord, RuntimeOptions } from './runtime.js'
export { formatAudit, resolveUse, TreeRuntime } from './runtime.js'
export type { WatchOptions, WatchReport } from './watch.js'
export { watchConfig } from './watch.js'
