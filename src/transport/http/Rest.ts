import type { Request } from 'express';
import { type Binding, bindingOf } from '../../contract/Binding.js';
import type { ToolName } from '../../contract/Mcp.js';

/** A REST path mapped onto a tool: how to read the binding and the arguments from a request (documented in RouteDocs). */
export type Route = {
  method: 'get' | 'post';
  /** OpenAPI-style path, `{slug}` for parameters. */
  path: string;
  tool: ToolName;
  binding(req: Request): Binding;
  args(req: Request): unknown;
};

/** A query-string integer as a number, anything else as given so validation reports it. */
const integer = (value: unknown): unknown => (typeof value === 'string' && /^-?\d{1,12}$/.test(value) ? Number(value) : value);

const slugOf = (req: Request): Binding => bindingOf(String(req.params.slug));
const global = (): Binding => bindingOf(undefined);
const body = (req: Request): unknown => req.body;

/** The directory page a query string asks for. */
function page(req: Request): unknown {
  const q = req.query as Record<string, unknown>;
  return { ...(q.limit !== undefined && { limit: integer(q.limit) }), ...(q.cursor !== undefined && { cursor: q.cursor }) };
}

/** Every REST path of the contract that is served, each a thin mapping onto a tool. */
export const routes: Route[] = [
  { method: 'get', path: '/api/profiles', tool: 'profile_list_channels', binding: global, args: page },
  { method: 'get', path: '/api/profiles/{slug}/channels', tool: 'profile_list_channels', binding: slugOf, args: () => ({}) },
  { method: 'post', path: '/api/profiles/{slug}/quote', tool: 'profile_quote', binding: slugOf, args: body },
  { method: 'post', path: '/api/ask/quote', tool: 'profile_quote', binding: global, args: body },
  { method: 'post', path: '/api/ask/query', tool: 'profile_query', binding: global, args: body },
  { method: 'post', path: '/api/profiles/{slug}/query', tool: 'profile_query', binding: slugOf, args: body },
];

/** Express path syntax for an OpenAPI path. */
export const expressPath = (path: string): string => path.replace(/\{(\w+)\}/g, ':$1');
