// Loads the client modules (browser-side plugins) the host's manifest names: at start and whenever
// the manifest changes (a row was enabled, disabled or replaced by a live config edit). A module whose
// hash changed is unloaded first; unloading removes everything it registered. A module that fails to
// load is listed in `slots.failures` (shown in the sidebar), never a blank page.

import type { ClientApi, ClientModule, ClientModuleEntry, Unregister } from '@dsh/surfaces/wire'
import { Fragment, h } from 'preact'
import { useEffect, useState } from 'preact/hooks'
import { api } from './connection'
import { slots } from './slots'

interface Loaded {
  entry: ClientModuleEntry
  registrations: Set<Unregister>
  own?: Unregister
  gone: boolean
}

const loaded = new Map<string, Loaded>()

/** Brings the loaded modules in line with the host's manifest. */
export function applyManifest(manifest: readonly ClientModuleEntry[]): void {
  const wanted = new Map(manifest.map((entry) => [entry.id, entry]))
  for (const [id, module] of loaded) if (wanted.get(id)?.hash !== module.entry.hash) unload(id)
  for (const [id, failedHash] of failedVersions) if (wanted.get(id)?.hash !== failedHash) forget(id)
  for (const entry of manifest)
    if (!loaded.has(entry.id) && failedVersions.get(entry.id) !== entry.hash) void load(entry)
}

/** Module id -> the hash that failed (not retried until the manifest names another version). */
const failedVersions = new Map<string, string>()

function forget(id: string): void {
  failedVersions.delete(id)
  if (slots.failures.delete(id)) slots.changed()
}

async function load(entry: ClientModuleEntry): Promise<void> {
  const module: Loaded = { entry, registrations: new Set(), gone: false }
  loaded.set(entry.id, module)
  try {
    const imported = (await import(/* @vite-ignore */ entry.url)) as Partial<ClientModule>
    if (module.gone) return
    if (typeof imported.default !== 'function')
      throw new Error('its default export is not a function; write `export default function activate(dsh) { ... }`')
    const own = await imported.default(apiFor(module))
    if (typeof own === 'function') {
      if (module.gone) own()
      else module.own = own
    }
  } catch (error) {
    if (module.gone) return
    dispose(module)
    loaded.delete(entry.id)
    failedVersions.set(entry.id, entry.hash)
    slots.failures.set(entry.id, error instanceof Error ? error.message : String(error))
    slots.changed()
  }
}

function unload(id: string): void {
  const module = loaded.get(id)
  if (!module) return
  loaded.delete(id)
  module.gone = true
  dispose(module)
}

function dispose(module: Loaded): void {
  for (const unregister of module.registrations) unregister()
  module.registrations.clear()
  try {
    module.own?.()
  } catch (error) {
    console.error(`client module ${module.entry.id}: its disposer threw`, error)
  }
  module.own = undefined
}

/** The API one module sees: every registration is owned by it and dropped when it unloads. */
function apiFor(module: Loaded): ClientApi {
  const owner = module.entry.id
  const track = (register: () => Unregister): Unregister => {
    if (module.gone) return () => {}
    const unregister = register()
    module.registrations.add(unregister)
    return () => {
      module.registrations.delete(unregister)
      unregister()
    }
  }
  return {
    version: 1,
    moduleId: owner,
    h: h as ClientApi['h'],
    Fragment: Fragment as ClientApi['Fragment'],
    hooks: { useState: useState as ClientApi['hooks']['useState'], useEffect },
    registerToolRenderer: (toolName, render) => track(() => slots.add(slots.tools, toolName, owner, render)),
    registerEventRenderer: (eventType, render) => track(() => slots.add(slots.events, eventType, owner, render)),
    registerSidebarItem: (item) => track(() => slots.add(slots.sidebar, item.id, owner, item)),
    registerComposerAction: (action) => track(() => slots.add(slots.composer, action.id, owner, action)),
    registerSettingsSection: (section) => track(() => slots.add(slots.settings, section.id, owner, section)),
    registerHeaderBadge: (badge) => track(() => slots.add(slots.badges, badge.id, owner, badge)),
    call: (method, path, body) => api(method, path, body),
  }
}
