import type { ZodIssue, z } from 'zod';
import type { Caller } from '../src/auth/Caller.js';
import type { Binding } from '../src/contract/Binding.js';
import type { ToolName } from '../src/contract/Mcp.js';
import type { ErrorCode } from '../src/errors/ServiceError.js';
import type { InboundCredential, OutboundReceipt } from '../src/payments/Rail.js';
import type { Services } from '../src/Services.js';
import type { Profile } from '../src/store/Profiles.js';

export type { Binding } from '../src/contract/Binding.js';

/** What a handler receives besides its input. */
export type ToolContext = {
  services: Services;
  caller: Caller;
  binding: Binding;
  /** The bound profile, already checked readable by the caller; absent on the global endpoint. */
  profile: Profile | undefined;
  /** An on-chain payment credential the transport found, and where the receipt of a paid answer goes back to it. */
  payment: PaymentChannel;
  /** The caller's side of the call: whether they are still there, and whether the answer reached them. */
  connection: Connection;
};

/** What a transport hands a paid tool: the credential it found, and a sink for the receipt it must send back. */
export type PaymentChannel = {
  credential: InboundCredential | undefined;
  receipt(receipt: OutboundReceipt): void;
  /** What a challenge names as the resource paid for, where the transport is not REST (MCP: the tool). */
  resource?: string | undefined;
};

/**
 * The caller's connection as the transport sees it. Money for an answer moves only while the caller is there, and a
 * paid answer stands only once it was handed over in full.
 */
export type Connection = {
  /** True once the caller went away (the connection closed, or the call was cancelled). */
  gone(): boolean;
  /**
   * Resolves true once the result this call returns has been written out in full, or false when the caller went
   * away first. Asked before the result is returned, so a transport can watch the write that follows.
   */
  delivered(): Promise<boolean>;
};

/** One MCP tool: its contract (a strict input schema per binding) and its handler. */
export type Tool = {
  name: ToolName;
  /** True when the tool never charges: over MCP it answers despite a bad credential, with a note saying what is wrong. */
  free: boolean;
  description(binding: Binding): string;
  input(binding: Binding): z.ZodTypeAny;
  /** Error codes for invalid input, by top-level field (default `invalid_request`); a function can look at the issue. */
  fieldErrors?: Partial<Record<string, ErrorCode | ((issue: ZodIssue) => ErrorCode)>>;
  /** Fields of an earlier contract, refused with a code whose message says what replaced them. */
  retiredFields?: Partial<Record<string, ErrorCode>>;
  /**
   * What the caller is told (503) when what the tool stands on fails (the store, retrieval), rather than the tool
   * refusing the call: SPEC's "service unavailable". The cause is logged for the operator.
   */
  unavailable: string;
  run(input: never, context: ToolContext): unknown;
  /**
   * Told of a call refused before `run` (a bad credential, an unknown profile, invalid input), to count it as `run`
   * counts the calls it answers or refuses itself.
   */
  refused?(error: unknown, context: { services: Services; binding: Binding; args: unknown; profileId: string | undefined }): void;
};

/** Declares a tool with its input type inferred from its schema. */
export function define<S extends z.ZodTypeAny>(tool: Omit<Tool, 'run' | 'input'> & {
  input(binding: Binding): S;
  run(input: z.infer<S>, context: ToolContext): unknown;
}): Tool {
  return tool as unknown as Tool;
}
