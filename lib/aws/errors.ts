/**
 * Error names and codes of a request that got no answer (timeouts, dropped connections, DNS):
 * worth another try on any AWS service.
 */
export const NETWORK_ERROR_CODES: ReadonlySet<string> = new Set([
  'TimeoutError',
  'AbortError',
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
])

/**
 * The fields of whatever an SDK call threw, to be read as `T` says (every field optional):
 * errors come as SDK exceptions, Node system errors or anything thrown along the way.
 */
export function errorFields<T extends object>(error: unknown): Partial<T> {
  return (typeof error === 'object' && error !== null ? error : {}) as Partial<T>
}
