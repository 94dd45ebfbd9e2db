/**
 * Strings from a lock record (owners, ticks, notes, keys) are written by whoever can write the
 * object, and a terminal acts on some characters instead of printing them: ESC starts sequences
 * that erase, move and recolour (an owner could make `inspect` show a held lock as "free"), the
 * other C0 and C1 controls do similar things, and the bidirectional overrides reorder what
 * follows (Trojan Source). Human views show each of them as an escape; `--json` keeps strings
 * exact (a `\uXXXX` escape in JSON is the same string once parsed).
 */

/** C0 controls, DEL and C1, and the bidi marks, embeddings, overrides and isolates. */
function isActive(code: number): boolean {
  return (
    code <= 0x1f ||
    (code >= 0x7f && code <= 0x9f) ||
    code === 0x061c ||
    code === 0x200e ||
    code === 0x200f ||
    (code >= 0x202a && code <= 0x202e) ||
    (code >= 0x2066 && code <= 0x2069)
  )
}

/** What JSON.stringify leaves raw of those: everything at or above DEL. */
function isRawInJson(code: number): boolean {
  return code >= 0x7f && isActive(code)
}

const hex = (code: number, digits: number) => code.toString(16).padStart(digits, '0')

function escaped(char: string): string {
  if (char === '\n') return '\\n'
  if (char === '\r') return '\\r'
  if (char === '\t') return '\\t'
  const code = char.charCodeAt(0)
  return code <= 0xff ? `\\x${hex(code, 2)}` : `\\u${hex(code, 4)}`
}

/** `text` with each character `active` says so of replaced by `replace(char)`. */
function replaceActive(
  text: string,
  active: (code: number) => boolean,
  replace: (char: string) => string,
): string {
  let out = ''
  for (const char of text) out += active(char.charCodeAt(0)) ? replace(char) : char
  return out
}

/** A value from a record, for a field or a table cell: on one line, every active character escaped. */
export function printable(value: string): string {
  return replaceActive(value, isActive, escaped)
}

/** Human output as a whole: the lines stay, every other active character is escaped. */
export function printableText(text: string): string {
  return replaceActive(text, (code) => code !== 0x0a && isActive(code), escaped)
}

/** JSON output: the characters JSON.stringify leaves raw, as `\uXXXX` (the same string once parsed). */
export function printableJson(text: string): string {
  return replaceActive(text, isRawInJson, (char) => `\\u${hex(char.charCodeAt(0), 4)}`)
}
