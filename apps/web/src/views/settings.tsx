// The settings page (with client modules' sections after its own) and the banner of a refused
// configuration edit.
import { failed, host, useHost } from '../host-state'
import { Settings } from '../settings'
import { InSlot, slots, useSlots } from '../slots'

export function SettingsPage() {
  const state = useHost()
  return (
    <Settings
      presets={state.presets}
      failed={failed}
      onSaved={(key, value) => {
        // New sessions that pick no preset get the new default: show it in the new-session form.
        if (key === 'preset' && typeof value === 'string') state.defaultPreset = value
        state.changed()
      }}
    >
      <SettingsSections />
    </Settings>
  )
}

/** Settings sections of client modules, after the page's own. */
function SettingsSections() {
  useSlots()
  return (
    <>
      {[...slots.settings.values()].map((entry) => (
        <section key={entry.value.id} class="settings-section" data-section={entry.value.id}>
          <h2>{entry.value.title}</h2>
          <InSlot
            entry={{ owner: entry.owner, value: entry.value.render }}
            slot={`settings ${entry.value.id}`}
            props={{}}
          />
        </section>
      ))}
    </>
  )
}

/** A refused edit of a watched patch file: the host kept the last good configuration. */
export function ConfigBanner() {
  const { config } = useHost()
  if (!config || config.ok) return null
  return (
    <div class="config-banner" role="alert">
      <strong>Configuration change rejected; the last good configuration is still running.</strong>
      <button
        type="button"
        onClick={() => {
          host.config = undefined
          host.changed()
        }}
      >
        Dismiss
      </button>
      <pre>{config.error}</pre>
    </div>
  )
}
