// The projection of each session this page opened, kept across visits: attached on open (a cold
// resume after a host restart), then fed by its stream from the first seq it lacks.

import type { SessionFrame } from '@dsh/surfaces/wire'
import { useEffect, useMemo, useState } from 'preact/hooks'
import { api, openStream } from './connection'
import { failed } from './host-state'
import { leasedElsewhere } from './lease'
import { SessionProjection } from './projection'
import { slots, useSlots } from './slots'

export const projections = new Map<string, SessionProjection>()

export function useSession(sessionId: string): SessionProjection {
  const projection = useMemo(() => {
    const existing = projections.get(sessionId)
    if (existing) return existing
    const created = new SessionProjection(sessionId)
    projections.set(sessionId, created)
    return created
  }, [sessionId])
  const [, setTick] = useState(0)
  useSlots()
  // Event types a client module renders are folded into nodes: a change folds the log again from 0.
  const eventTypes = [...slots.events.keys()].sort().join(',')
  useEffect(() => {
    if (projection.foldedTypes !== eventTypes) {
      projection.foldedTypes = eventTypes
      if (projection.nextSeq > 0) projection.reset()
    }
    let frame = 0
    const schedule = () => {
      if (frame) return
      frame = requestAnimationFrame(() => {
        frame = 0
        setTick((tick) => tick + 1)
      })
    }
    let stream: { close(): void } | undefined
    let cancelled = false
    // Attach an agent (cold resume after a host restart), then follow the log from what we lack.
    api('POST', `/api/sessions/${sessionId}/resume`)
      // Open on another host: the lease notice says so; the stream follows the durable log.
      .catch((error) => leasedElsewhere(error) || failed(error))
      .finally(() => {
        if (cancelled) return
        stream = openStream<SessionFrame>(
          () => `/api/streams/session/${sessionId}?since=${projection.nextSeq}`,
          (message) => {
            if (projection.applyFrame(message)) schedule()
          },
        )
      })
    return () => {
      cancelled = true
      stream?.close()
      if (frame) cancelAnimationFrame(frame)
    }
  }, [projection, eventTypes])
  return projection
}
