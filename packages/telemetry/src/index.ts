// @dsh/telemetry: OpenTelemetry traces of what agents do, opt-in. The row declares the settings
// `telemetry` (on/off, DSH_TELEMETRY, default off) and `telemetry.content` (prompt and tool contents
// in spans, DSH_TELEMETRY_CONTENT, default off). Off, it imports nothing more: no OpenTelemetry module
// is loaded. On, `./otel.js` builds a tracer with the OTLP/HTTP exporter (configured by the standard
// OTEL_* variables) and turns session events into spans: turn > step > model request | tool call.
import type { Context } from '@dsh/kernel'
import type {} from '@dsh/session'
import type {} from '@dsh/settings'

declare module '@dsh/settings' {
  interface SettingsMap {
    telemetry: 'on' | 'off'
    'telemetry.content': 'on' | 'off'
  }
}

export const name = 'telemetry'
export const inject = ['settings', 'sessions']

const ON_OFF = { type: 'string', enum: ['on', 'off'] }

export async function apply(ctx: Context): Promise<void> {
  ctx.settings.define('telemetry', {
    schema: ON_OFF,
    default: 'off',
    description:
      'export OpenTelemetry traces (turn, step, model request, tool call) over OTLP/HTTP; the exporter reads the OTEL_* variables (OTEL_EXPORTER_OTLP_ENDPOINT...)',
    env: 'DSH_TELEMETRY',
    allowed: 'on or off',
  })
  ctx.settings.define('telemetry.content', {
    schema: ON_OFF,
    default: 'off',
    description:
      'put prompts, model output and tool arguments and results into the spans (off: names, counts and outcomes only)',
    env: 'DSH_TELEMETRY_CONTENT',
    allowed: 'on or off',
  })
  if (ctx.settings.get('telemetry') !== 'on') return
  // Loaded only when on: the OpenTelemetry SDK and exporter cost nothing otherwise.
  const { startTracing } = await import('./otel.js')
  startTracing(ctx, { content: ctx.settings.get('telemetry.content') === 'on' })
}

export default { name, inject, apply }
