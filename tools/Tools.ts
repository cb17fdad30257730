import type { ZodIssue, z } from 'zod';
import type { ErrorCode } from '../src/errors/ServiceError.js';
import { zodToJsonSchema } from 'zod-to-json-schema';
import * as Access from '../src/auth/Access.js';
import * as Caller from '../src/auth/Caller.js';
import type { McpManifest, ToolName } from '../src/contract/Mcp.js';
import { ServiceError } from '../src/errors/ServiceError.js';
import { outcomeOf } from './Outcome.js';
import * as RequestContext from '../src/log/RequestContext.js';
import type { Services } from '../src/Services.js';
import type { Profile } from '../src/store/Profiles.js';
import * as Credentials from '../src/payments/Credentials.js';
import { isTransportFailure } from '../src/payments/Rail.js';
import { profileListChannels } from './ProfileListChannels.js';
import { profileQuery } from './ProfileQuery.js';
import { profileQuote } from './ProfileQuote.js';
import type { Binding, Connection, PaymentChannel, Tool } from './Tool.js';

export type { Binding, Connection, PaymentChannel, Tool, ToolContext } from './Tool.js';
export { outcomeOf } from './Outcome.js';

/** The tools this server offers, in the order they are listed. Only working tools are here. */
export const all: readonly Tool[] = [profileListChannels, profileQuote, profileQuery];

/** A tool by name, or undefined for a name this server does not offer. */
export function find(name: string): Tool | undefined {
  return all.find((t) => t.name === name);
}

/** The error for a tool name this server does not offer. */
export function unknownTool(name: string): ServiceError {
  return new ServiceError('unknown_tool', `unknown tool "${name.slice(0, 100)}"; tools: ${all.map((t) => t.name).join(', ')}`);
}

/**
 * The JSON Schema of a tool's input, as listed in `tools/list` and the MCP manifest. MCP reserves `_meta` for request
 * metadata (`params._meta`), so it is not declared as an argument, though REST bodies carry it: one given among the
 * arguments is still read as metadata (`split`, below), never refused.
 */
export function inputJsonSchema(tool: Tool, binding: Binding): Record<string, unknown> {
  const { $schema: _schema, ...schema } = zodToJsonSchema(tool.input(binding), { target: 'jsonSchema7', $refStrategy: 'none' }) as Record<string, unknown>;
  const properties = schema.properties as Record<string, unknown> | undefined;
  if (!properties || !Object.hasOwn(properties, '_meta')) return schema;
  const { _meta: _reserved, ...argumentsOnly } = properties;
  return { ...schema, properties: argumentsOnly };
}

function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => {
      if (issue.code === 'unrecognized_keys') return `unknown field${issue.keys.length > 1 ? 's' : ''}: ${issue.keys.join(', ')}`;
      const where = issue.path.join('.');
      return where ? `${where}: ${issue.message}` : issue.message;
    })
    .join('; ');
}

/**
 * The rule a tool declares for a top-level field, read from the tool's own keys only: a caller's field named like an
 * `Object.prototype` member (`constructor`, `toString`, `__proto__`) has no rule.
 */
function own<T>(rules: Partial<Record<string, T>> | undefined, field: PropertyKey | undefined): T | undefined {
  return typeof field === 'string' && rules && Object.hasOwn(rules, field) ? rules[field] : undefined;
}

function ruleFor(tool: Tool, field: PropertyKey | undefined): ((issue: ZodIssue) => ErrorCode) | undefined {
  const rule = own(tool.fieldErrors, field);
  if (rule === undefined) return undefined;
  return typeof rule === 'function' ? rule : () => rule;
}

/** Validates tool arguments against the tool's strict schema; the first offending field picks the error code. */
export function parseInput(tool: Tool, binding: Binding, args: unknown): unknown {
  if (args !== undefined && args !== null && (typeof args !== 'object' || Array.isArray(args))) {
    throw new ServiceError('invalid_request', 'the arguments must be a JSON object (the request body over REST, the arguments or params over MCP)');
  }
  const parsed = tool.input(binding).safeParse(args ?? {});
  if (parsed.success) return parsed.data;
  const first = parsed.error.issues[0]!;
  // An earlier contract's field is refused with words that say what replaced it; any other field this endpoint does
  // not take is named as unknown (a per-profile listing's `limit` is not a bad limit).
  const retired = first.code === 'unrecognized_keys' ? first.keys.map((k) => own(tool.retiredFields, k)).find((code) => code !== undefined) : undefined;
  if (retired) throw new ServiceError(retired);
  const code = first.code === 'unrecognized_keys' ? 'invalid_request' : (ruleFor(tool, first.path[0])?.(first) ?? 'invalid_request');
  throw new ServiceError(code, describeIssues(parsed.error), {
    details: { issues: parsed.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message })) },
  });
}

/** Who calls, as far as their credentials hold, and the bound profile they may read. */
export type Admission = { caller: Caller.Caller; problem: ServiceError | undefined; profile: Profile | undefined };

/** What a caller is told when who they are, or the profile they ask for, cannot be looked up. */
const admissionUnavailable = 'The service cannot check credentials or profiles right now. Try again shortly.';

/** The bound profile, checked readable by the caller (404 otherwise; when a bad credential may be why, the 404 says so). */
async function boundProfile(services: Services, binding: Binding, caller: Caller.Caller, problem: ServiceError | undefined): Promise<Profile | undefined> {
  if (binding.kind !== 'profile') return undefined;
  try {
    return await Access.readableProfile(services.store, binding.slug, caller);
  } catch (error) {
    if (problem && error instanceof ServiceError && error.code === 'not_found') throw new ServiceError('not_found', `${error.message}. Also: ${problem.message}`);
    throw error;
  }
}

/** Admits a caller to an endpoint: their credentials inspected (a problem is kept, not thrown) and the bound profile checked. */
export async function admit(services: Services, presented: Caller.Presented, binding: Binding): Promise<Admission> {
  try {
    const { caller, problem } = await Caller.inspect(services.store, presented);
    return { caller, problem, profile: await boundProfile(services, binding, caller, problem) };
  } catch (error) {
    throw failureOf(admissionUnavailable, error);
  }
}

/** Everything a transport hands over for one tool call. */
export type Invocation = {
  services: Services;
  name: string;
  args: unknown;
  presented: Caller.Presented;
  /** The endpoint already admitted the caller for this request: not inspected or checked again. */
  admitted?: Admission | undefined;
  binding: Binding;
  /**
   * What a bad credential does: `refuse` fails the call (REST: 401); `note` lets a free tool answer as if it had not
   * been sent and hands the problem to `onNote` (MCP tools/call, where a host cannot show an HTTP error).
   */
  badCredentials?: 'refuse' | 'note';
  onNote?: (problem: ServiceError) => void;
  /** An on-chain payment credential (a header, or MCP `_meta`), and where a paid answer's receipt goes. */
  payment?: Partial<PaymentChannel>;
  /** The caller's connection; without one (a direct call in process) the caller is there and gets what is returned. */
  connection?: Partial<Connection>;
};

/**
 * Splits request metadata from tool arguments: `_meta` is never a tool argument. It carries the payment credential of
 * a direct MCP call (its params are the arguments), of a REST body, and of a host that can only fill in arguments.
 */
function split(args: unknown): { args: unknown; meta: unknown } {
  if (args === null || typeof args !== 'object' || Array.isArray(args) || !Object.hasOwn(args, '_meta')) return { args, meta: undefined };
  const { _meta: meta, ...rest } = args as Record<string, unknown>;
  return { args: rest, meta };
}

/**
 * The one entry point every transport uses: authenticate, resolve the bound profile (404 when unknown or not
 * readable), validate the input strictly, run the handler. Failures are ServiceErrors for the transport to render.
 */
export async function invoke(invocation: Invocation): Promise<unknown> {
  const { services, binding } = invocation;
  const tool = find(invocation.name);
  if (!tool) throw unknownTool(invocation.name);
  RequestContext.note({ tool: tool.name });
  const { args, meta } = split(invocation.args);
  let profile: Awaited<ReturnType<typeof Access.readableProfile>> | undefined;
  let input: unknown;
  let caller: Caller.Caller;
  try {
    const inspected = invocation.admitted ?? (await Caller.inspect(services.store, invocation.presented));
    caller = inspected.caller;
    if (inspected.problem) {
      if (invocation.badCredentials !== 'note' || !tool.free) throw inspected.problem;
      invocation.onNote?.(inspected.problem);
    }
    profile = invocation.admitted ? invocation.admitted.profile : await boundProfile(services, binding, caller, inspected.problem);
    input = parseInput(tool, binding, args);
  } catch (thrown) {
    const error = failureOf(admissionUnavailable, thrown);
    RequestContext.note({ outcome: outcomeOf(error) });
    tool.refused?.(error, { services, binding, args: invocation.args, profileId: profile?.id });
    throw error;
  }
  const payment: PaymentChannel = {
    credential: invocation.payment?.credential ?? Credentials.fromMeta(meta),
    receipt: invocation.payment?.receipt ?? (() => undefined),
    resource: invocation.payment?.resource,
  };
  const connection: Connection = { gone: invocation.connection?.gone ?? (() => false), delivered: invocation.connection?.delivered ?? (() => Promise.resolve(true)) };
  try {
    return await (tool.run as (input: unknown, context: unknown) => unknown)(input, { services, caller, binding, profile, payment, connection });
  } catch (error) {
    throw failureOf(tool.unavailable, error);
  }
}

/** Errors that are this program's own mistakes: a 500 for the operator to fix, not an outage to wait out. */
const mistakes = [TypeError, ReferenceError, RangeError, SyntaxError];

/**
 * A refusal, or a failure the tool named, as it is. A mistake of this program is `internal_error`. Anything else is
 * what the tool stands on failing (the store, the search index, a network call): 503 in the tool's words. Either way
 * the cause is kept for the log.
 */
function failureOf(unavailable: string, error: unknown): ServiceError {
  if (error instanceof ServiceError) return error;
  if (mistakes.some((kind) => error instanceof kind) && !isTransportFailure(error)) return new ServiceError('internal_error', undefined, { cause: error });
  return new ServiceError('service_unavailable', unavailable, { cause: error, reported: true });
}

/** The MCP manifest of an endpoint, for a caller it admitted (a per-profile one only for a caller who may read it). */
export function manifest(binding: Binding, admitted: Admission): McpManifest {
  const found = admitted.profile;
  return {
    protocol: 'mcp',
    profile: found ? { slug: found.slug, name: found.name } : { slug: 'global', name: 'All public profiles' },
    tools: all.map((t) => ({ name: t.name as ToolName, description: t.description(binding), inputSchema: inputJsonSchema(t, binding) })),
    skill: '/SKILL.md',
  };
}
