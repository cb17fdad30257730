/** Which MCP responses went out: a paid answer stands only once its response was written. */
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/**
 * The responses tool calls wait to see written out. A call cancelled (or its connection closed) before its response
 * was handed to the transport is not delivered; once handed over, the transport's send says whether it went out.
 */
export class Responses {
  /** Who waits for each id's response, first come first served (a client may reuse an id while one is in flight). */
  private readonly waiting = new Map<string | number, { handed(): void; settle(sent: boolean): void }[]>();

  /** Resolves once the response to `id` was sent (true), or could not be, or the call ended before it was (false). */
  expect(id: string | number, signal: AbortSignal): Promise<boolean> {
    return new Promise((resolve) => {
      if (signal.aborted) return resolve(false);
      const cancelled = () => settle(false);
      const waiter = {
        // The server closes its connection right after an HTTP response is collected: that abort comes too late to count.
        handed: () => signal.removeEventListener('abort', cancelled),
        settle: (sent: boolean) => settle(sent),
      };
      const settle = (sent: boolean) => {
        this.take(id, waiter);
        signal.removeEventListener('abort', cancelled);
        resolve(sent);
      };
      this.waiting.set(id, [...(this.waiting.get(id) ?? []), waiter]);
      signal.addEventListener('abort', cancelled, { once: true });
    });
  }

  /** Sends a message, telling whoever waits for it whether it went out. */
  async send(message: JSONRPCMessage, send: () => Promise<void>): Promise<void> {
    const id = 'id' in message && ('result' in message || 'error' in message) ? message.id : undefined;
    const waiter = id === undefined || id === null ? undefined : this.waiting.get(id)?.[0];
    if (waiter) this.take(id!, waiter);
    waiter?.handed();
    try {
      await send();
      waiter?.settle(true);
    } catch (error) {
      waiter?.settle(false);
      throw error;
    }
  }

  private take(id: string | number, waiter: { handed(): void; settle(sent: boolean): void }): void {
    const left = (this.waiting.get(id) ?? []).filter((w) => w !== waiter);
    if (left.length > 0) this.waiting.set(id, left);
    else this.waiting.delete(id);
  }
}

