// The contract between the browser client of `dsh web` and a client module (a browser-side plugin):
// types only. A module is an ES module whose default export receives a `ClientApi` and registers into
// the page's typed slots; everything it registers is removed when the module is unloaded (its row was
// disabled or replaced). Renderers build elements with `dsh.h` (the page's own Preact), so a module
// bundles no framework. A renderer that throws shows an error in its slot; the rest of the page stays.
import type { SessionSummary } from '../wire/types.js'
import type { EventEnvelope } from './protocol.js'

/** What a renderer returns: an element made with `h`, a string, or null for nothing. */
export type ClientNode = unknown

/** A function component: `h(Component, props)` renders it; hooks work inside it. */
export type ClientComponent<P> = (props: P) => ClientNode

/** Disposes one registration. Idempotent. */
export type Unregister = () => void

export interface ToolRenderProps {
  sessionId: string
  call: { id: string; name: string; arguments: Record<string, unknown> }
  result?: { text: string; isError: boolean; code?: string }
  status: 'waiting' | 'running' | 'done' | 'failed' | 'cancelled'
}

export interface EventRenderProps {
  sessionId: string
  event: EventEnvelope
}

export interface SidebarItem {
  /** Unique among sidebar items. */
  id: string
  title: string
  render: ClientComponent<{ currentSessionId?: string; sessions: SessionSummary[] }>
}

export interface ComposerContext {
  sessionId: string
  /** What is typed in the composer now. */
  text: string
  setText(text: string): void
}

export interface ComposerAction {
  id: string
  /** The button's text (also its accessible name unless `title` is given). */
  label: string
  title?: string
  run(context: ComposerContext): void | Promise<void>
}

export interface SettingsSection {
  id: string
  /** The section's heading on the settings page. */
  title: string
  render: ClientComponent<Record<string, never>>
}

export interface HeaderBadge {
  id: string
  render: ClientComponent<{ sessionId: string }>
}

export interface ClientApi {
  /** Bumped only on a breaking change of this interface. */
  readonly version: 1
  /** The id of the module (its manifest entry). */
  readonly moduleId: string
  /** Preact's `h`: a tag name or a component, props, children. */
  h(type: string | ClientComponent<never>, props?: Record<string, unknown> | null, ...children: unknown[]): ClientNode
  readonly Fragment: ClientComponent<{ children?: unknown }>
  readonly hooks: {
    useState<T>(initial: T | (() => T)): [T, (value: T | ((previous: T) => T)) => void]
    useEffect(effect: () => undefined | (() => void), deps?: unknown[]): void
  }
  /** Renders the card of every call of `toolName` (instead of the built-in card). */
  registerToolRenderer(toolName: string, render: ClientComponent<ToolRenderProps>): Unregister
  /** Renders committed events of `eventType` in the conversation, where they happened. */
  registerEventRenderer(eventType: string, render: ClientComponent<EventRenderProps>): Unregister
  registerSidebarItem(item: SidebarItem): Unregister
  registerComposerAction(action: ComposerAction): Unregister
  registerSettingsSection(section: SettingsSection): Unregister
  registerHeaderBadge(badge: HeaderBadge): Unregister
  /** A unary call of the host's API (`/api/...`), JSON in and out; a refusal rejects with its code. */
  call<T = unknown>(method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, body?: unknown): Promise<T>
}

/** The shape of a client module: `export default function activate(dsh) { ... }`. */
export interface ClientModule {
  /** May return a disposer of its own, run on unload after its registrations are removed. */
  default: (dsh: ClientApi) => void | Unregister | Promise<void | Unregister>
}
