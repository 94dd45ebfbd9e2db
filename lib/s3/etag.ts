import type { S3Client } from '@aws-sdk/client-s3'

/**
 * How etags are sent in `If-Match`. AWS S3 accepts them quoted, as HTTP has them; Ceph RGW 16
 * answers 412 to a quoted etag and wants it bare. `auto` sends bare etags and switches to quoted
 * ones only when a 412 arrives for an object whose etag is, in fact, the one we sent.
 */
export const EtagQuoting = { Auto: 'auto', Quoted: 'quoted', Unquoted: 'unquoted' } as const
export type EtagQuoting = (typeof EtagQuoting)[keyof typeof EtagQuoting]

/** What each client's endpoint turned out to need, learned once and shared by all writers. */
const learned = new WeakMap<S3Client, typeof EtagQuoting.Quoted | typeof EtagQuoting.Unquoted>()

/** Etags are kept bare inside the library; S3 sends them quoted (and weak ones with `W/`). */
export function unquote(etag: string): string {
  return etag.replace(/^(W\/)?"(.*)"$/, '$2')
}

/** The style to use for `s3`: forced, learned, or bare until shown otherwise. */
export function quotingFor(s3: S3Client, forced: EtagQuoting = EtagQuoting.Auto): EtagQuoting {
  return forced === EtagQuoting.Auto ? (learned.get(s3) ?? EtagQuoting.Auto) : forced
}

export function ifMatch(etag: string, quoting: EtagQuoting): string {
  return quoting === EtagQuoting.Quoted ? `"${etag}"` : etag
}

/**
 * Learns the endpoint's style from the answer to an If-Match write sent with `quoting`.
 * A 412 either means someone else wrote, or that the endpoint wants quotes; only the second
 * leaves the object's etag unchanged. Resolves true when the write should be sent again,
 * now quoted: just as conditional, since nobody wrote in between.
 */
export async function learnFromIfMatch(
  s3: S3Client,
  quoting: EtagQuoting,
  written: boolean,
  etagUnchanged: () => Promise<boolean>,
): Promise<boolean> {
  if (quoting !== EtagQuoting.Auto) return false
  if (written) {
    learned.set(s3, EtagQuoting.Unquoted)
    return false
  }
  if (!(await etagUnchanged())) return false
  learned.set(s3, EtagQuoting.Quoted)
  return true
}
