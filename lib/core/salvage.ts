/**
 * What a lock object that is not a valid record still shows, read leniently for an operator's
 * `reset`: never trusted to allow more than a valid record would, only to refuse more.
 */
export interface Salvaged {
  /**
   * The highest token the body shows anywhere: its `token` as a number or as a string holding
   * one, and any `"token": N` in its text (a truncated record, a record wrapped by someone
   * else). A reset must go above it.
   */
  readonly token: number | undefined
  /** The body's top-level `expires_at`, when it is a finite number (seconds; 0: released). */
  readonly expiresAt: number | undefined
}

/** A number as JSON writes it, possibly inside a string, possibly padded. */
const NUMBER = String.raw`[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?`
const NUMERIC_TEXT = new RegExp(String.raw`^\s*(${NUMBER})\s*$`)
/** `"token": 5` or `"token": "5"` anywhere in a text, JSON or not. */
const TOKEN_IN_TEXT = new RegExp(String.raw`"token"\s*:\s*"?\s*(${NUMBER})`, 'g')

export function salvage(body: string): Salvaged {
  const fields = fieldsOf(body)
  const { expires_at: expiresAt } = fields
  return {
    token: highestInText(body, numberIn(fields.token)),
    expiresAt: typeof expiresAt === 'number' && Number.isFinite(expiresAt) ? expiresAt : undefined,
  }
}

/** A number, or a string that holds only a number; `undefined` for anything else. */
function numberIn(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isNaN(value) ? undefined : value
  if (typeof value !== 'string') return undefined
  const match = NUMERIC_TEXT.exec(value)
  return match?.[1] === undefined ? undefined : Number(match[1])
}

/** The highest of `start` and every `"token": N` in a text. */
function highestInText(text: string, start: number | undefined): number | undefined {
  let found = start
  for (const match of text.matchAll(TOKEN_IN_TEXT)) {
    const value = Number(match[1])
    if (!Number.isNaN(value) && (found === undefined || value > found)) found = value
  }
  return found
}

/** The body's top-level fields when it is JSON; none otherwise (an array's or a number's: none to read). */
function fieldsOf(body: string): Readonly<Record<string, unknown>> {
  try {
    const parsed: unknown = JSON.parse(body)
    return parsed instanceof Object ? (parsed as Record<string, unknown>) : {}
  } catch {
    return {}
  }
}
