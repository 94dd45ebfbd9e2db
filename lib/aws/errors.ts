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
