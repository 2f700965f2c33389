// The page's typed UI slots. Built-ins and client modules (browser-side plugins) register into the
// same keyed maps; each entry names its owner, and every plugin render runs inside a boundary so a
// renderer that throws shows an error in its own slot while the rest of the page keeps working.

import type {
  ClientComponent,
  ComposerAction,
  EventRenderProps,
  HeaderBadge,
  SettingsSection,
  SidebarItem,
  ToolRenderProps,
  Unregister,
} from '@dsh/surfaces/wire'
import { Component, type ComponentChildren, h } from 'preact'
import { useEffect, useState } from 'preact/hooks'
import { eventNodeTypes } from './projection'

/** A registration and the module that made it ("dsh" for the page's own). */
export interface Owned<T> {
  owner: string
  value: T
}

class Slots {
  readonly tools = new Map<string, Owned<ClientComponent<ToolRenderProps>>>()
  readonly events = new Map<string, Owned<ClientComponent<EventRenderProps>>>()
  readonly sidebar = new Map<string, Owned<SidebarItem>>()
  readonly composer = new Map<string, Owned<ComposerAction>>()
  readonly settings = new Map<string, Owned<SettingsSection>>()
  readonly badges = new Map<string, Owned<HeaderBadge>>()
  /** Client modules that failed to load or activate: module id -> why. */
  readonly failures = new Map<string, string>()
  /** Changes whenever any slot does (renderers that read slots memoise on it). */
  version = 0
  private readonly listeners = new Set<() => void>()

  /** Sets `key` in `map` for `owner`; the disposer removes only this registration. */
  add<T>(map: Map<string, Owned<T>>, key: string, owner: string, value: T): Unregister {
    const entry = { owner, value }
    map.set(key, entry)
    if (map === this.events) eventNodeTypes.add(key)
    this.changed()
    return () => {
      if (map.get(key) !== entry) return
      map.delete(key)
      if (map === this.events) eventNodeTypes.delete(key)
      this.changed()
    }
  }

  changed(): void {
    this.version += 1
    for (const listener of this.listeners) listener()
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener)
    return () => void this.listeners.delete(listener)
  }
}

export const slots = new Slots()

/** Re-renders the caller when any slot changes; returns the slots' version. */
export function useSlots(): number {
  const [version, setVersion] = useState(slots.version)
  useEffect(() => slots.subscribe(() => setVersion(slots.version)), [])
  return version
}

interface BoundaryProps {
  owner: string
  slot: string
  children?: ComponentChildren
}

/** Catches what a slot's renderer throws and shows it there, instead of unmounting the page. */
export class SlotBoundary extends Component<BoundaryProps, { error?: string }> {
  override componentDidCatch(error: unknown) {
    this.setState({ error: error instanceof Error ? error.message : String(error) })
  }
  override render() {
    if (this.state.error === undefined) return this.props.children
    return (
      <div class="slot-error" role="alert" data-owner={this.props.owner}>
        {this.props.owner} ({this.props.slot}) failed: {this.state.error}
      </div>
    )
  }
}

/** One registered component rendered in its boundary (keyed by owner so a new version starts clean). */
export function InSlot<P>({ entry, slot, props }: { entry: Owned<ClientComponent<P>>; slot: string; props: P }) {
  return (
    <SlotBoundary key={`${entry.owner}:${slots.version}`} owner={entry.owner} slot={slot}>
      {h(entry.value as ClientComponent<P> as never, props as never)}
    </SlotBoundary>
  )
}
