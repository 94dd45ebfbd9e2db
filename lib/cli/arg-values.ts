import type { CommandName, OptionName } from './commands-spec.js'
import { UsageError } from './exit-codes.js'

/** What node:util's parseArgs read, by option. */
export type Values = Partial<Record<OptionName, string | boolean>>

/** The text given to a string option, or undefined. */
export const textOf =
  (values: Values) =>
  (name: OptionName): string | undefined => {
    const value = values[name]
    return typeof value === 'string' ? value : undefined
  }

/** A token as an operator types it: decimal digits only (no `1e3`, `0x10`, `+5` or `5.0`). */
export function plainInteger(text: string, command?: CommandName): number {
  const value = Number(text)
  if (!/^[0-9]+$/.test(text) || !Number.isSafeInteger(value)) {
    throw new UsageError(
      `--token must be a plain decimal integer up to ${Number.MAX_SAFE_INTEGER}, got "${text}"`,
      command,
    )
  }
  return value
}

/** A number of seconds as an operator types it (`0.5`, `3`; no `1e1` or `.5`), in ms. */
export function seconds(
  option: string,
  text: string,
  range: { readonly min: number; readonly max: number },
  command: CommandName,
): number {
  const value = Number(text)
  if (!/^[0-9]+(\.[0-9]+)?$/.test(text) || value < range.min || value > range.max) {
    throw new UsageError(
      `${option} must be a number of seconds from ${range.min} to ${range.max}, got "${text}"`,
      command,
    )
  }
  return Math.round(value * 1000)
}
