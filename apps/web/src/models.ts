// The models the host's usable providers offer (`GET /api/models`, what `dsh models` lists), loaded
// once per page and again after a settings change, for the settings page and the session's model picker.

import type { ModelsView } from '@dsh/surfaces/wire'
import { useEffect, useState } from 'preact/hooks'
import { api } from './connection'

let loaded: Promise<ModelsView> | undefined
const listeners = new Set<(view: ModelsView) => void>()

function load(failed: (error: unknown) => void): void {
  loaded ??= api<ModelsView>('GET', '/api/models')
  loaded.then(
    (view) => {
      for (const listener of listeners) listener(view)
    },
    (error) => {
      loaded = undefined
      failed(error)
    },
  )
}

/** Forgets the loaded list (a key, endpoint or default changed) and tells the open pickers. */
export function reloadModels(): void {
  loaded = undefined
  load(() => {})
}

export function useModels(failed: (error: unknown) => void): ModelsView | undefined {
  const [view, setView] = useState<ModelsView | undefined>()
  useEffect(() => {
    listeners.add(setView)
    load(failed)
    return () => void listeners.delete(setView)
  }, [])
  return view
}

/** `provider:model` of every listed model, in the host's order. */
export function modelChoices(view: ModelsView | undefined): string[] {
  return (view?.providers ?? []).flatMap((row) => row.models.map((model) => `${row.provider}:${model.id}`))
}
