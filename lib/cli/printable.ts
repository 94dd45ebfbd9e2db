/**
 * Strings from a lock record (owners, ticks, notes, keys) are written by whoever can write the
 * object, and a terminal acts on some characters instead of printing them: ESC starts sequences
 * that erase, move and recolour (an owner could make `inspect` show a held lock as "free"), the
 * other C0 and C1 controls do similar things, and the bidirectional overrides reorder what
 * follows (Trojan Source). Human views show each of them as an escape; `--json` keeps strings
 * exact (a `\uXXXX` escape in JSON is the same string once parsed).
 */

/** C0 controls but newline, DEL and C1, the bidi marks, embeddings, overrides and isolates. */
const ACTIVE_BUT_NEWLINE =
  /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g
const ACTIVE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g
/** What JSON.stringify leaves raw of those: everything at or above DEL. */
const RAW_IN_JSON = /[\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g

function escape(char: string): string {
  const code = char.charCodeAt(0)
  if (char === '\n') return '\\n'
  if (char === '\r') return '\\r'
  if (char === '\t') return '\\t'
  return code <= 0xff
    ? `\\x${code.toString(16).padStart(2, '0')}`
    : `\\u${code.toString(16).padStart(4, '0')}`
}

/** A value from a record, for a field or a table cell: on one line, every active character escaped. */
export function printable(value: string): string {
  return value.replace(ACTIVE, escape)
}

/** Human output as a whole: the lines stay, every other active character is escaped. */
export function printableText(text: string): string {
  return text.replace(ACTIVE_BUT_NEWLINE, escape)
}

/** JSON output: the characters JSON.stringify leaves raw, as `\uXXXX` (the same string once parsed). */
export function printableJson(text: string): string {
  return text.replace(RAW_IN_JSON, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`)
}
