import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

/** One HTTP answer, as a service sends it. */
export interface Answer {
  readonly status: number
  readonly headers?: Record<string, string>
  readonly body?: string
}

/** S3's answer to a GET it refuses: an XML error document with the code the SDK reads. */
export function s3Error(status: number, code: string, message: string): Answer {
  return {
    status,
    headers: { 'content-type': 'application/xml' },
    body: `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${message}</Message><RequestId>r1</RequestId></Error>`,
  }
}

/** DynamoDB's answer to a request it refuses: its JSON error with the `__type` the SDK reads. */
export function dynamoDBError(code: string, message: string): Answer {
  return {
    status: 400,
    headers: { 'content-type': 'application/x-amz-json-1.0' },
    body: JSON.stringify({ __type: `com.amazonaws.dynamodb.v20120810#${code}`, message }),
  }
}

/**
 * A real HTTP server that gives every request the same answer, so that the SDK deserialises it
 * into the very error it would build from the service's. Counts what reaches it.
 */
export class AnsweringServer {
  readonly #server: Server
  /** Requests received, as `METHOD path` (the query left out). */
  readonly seen: string[] = []
  answer: Answer = { status: 500 }

  private constructor() {
    this.#server = createServer((request, response) => {
      this.seen.push(`${request.method} ${request.url?.replace(/\?.*/, '')}`)
      request.resume()
      const { status, headers, body } = this.answer
      response.writeHead(status, { date: new Date().toUTCString(), ...headers })
      // A HEAD answer has no body, whatever the service would say.
      response.end(request.method === 'HEAD' ? undefined : body)
    })
  }

  static async start(): Promise<AnsweringServer> {
    const server = new AnsweringServer()
    await new Promise<void>((resolve) => server.#server.listen(0, '127.0.0.1', resolve))
    return server
  }

  get endpoint(): string {
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections()
    await new Promise((resolve) => this.#server.close(resolve))
  }
}
