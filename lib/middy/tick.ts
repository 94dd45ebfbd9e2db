import { SCHEDULER_EVENT_SOURCE } from '../config.js'

/**
 * The id of the scheduled tick an event stands for, so a second delivery of the same tick can
 * be recognised: the construct's EventBridge Scheduler payload carries `scheduledTime`; an
 * EventBridge rule's "Scheduled Event" carries `time`. Anything else has no tick id.
 */
export function tickIdOf(event: unknown): string | undefined {
  if (typeof event !== 'object' || event === null) return undefined
  const fields = event as Record<string, unknown>
  if (fields.source === SCHEDULER_EVENT_SOURCE && typeof fields.scheduledTime === 'string') {
    return fields.scheduledTime
  }
  if (
    fields.source === 'aws.events' &&
    fields['detail-type'] === 'Scheduled Event' &&
    typeof fields.time === 'string'
  ) {
    return fields.time
  }
  return undefined
}
