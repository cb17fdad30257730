import crypto from 'node:crypto';
import type { Binding } from '../contract/Binding.js';
import type { QueryRequest } from '../contract/Query.js';
import type { Rail } from '../contract/Quote.js';
import type { Terms } from './Rail.js';

/** Where a query is served, as the tool binding has it. */

/**
 * The terms of one paid question: bound to everything that decides the answer (endpoint, question, scope, channel
 * set, modes) and to the rail and price, so a credential for one question cannot buy another, nor a cheaper one.
 */
export function of(input: { rail: Rail; served: Binding; request: QueryRequest; amountMillicents: number; resource?: string | undefined }): Terms {
  const { rail, served, request, amountMillicents } = input;
  const canonical = JSON.stringify([
    'profile-edge/query/v1',
    served.kind === 'profile' ? served.slug : '*',
    request.question,
    request.scope ?? null,
    [...(request.channelIds ?? [])].sort(),
    request.mode ?? 'synthesized',
    request.queryMode ?? null,
    rail,
    amountMillicents,
  ]);
  const digest = crypto.createHash('sha256').update(canonical).digest('hex');
  const where = served.kind === 'profile' ? `profile "${served.slug}"` : 'the global endpoint';
  // One line of plain text: the description travels in an HTTP header, where control characters are not allowed.
  const flat = [...request.question].map((c) => (/\p{Cc}|\p{Zl}|\p{Zp}/u.test(c) ? ' ' : c)).join('').replace(/\s+/g, ' ').trim();
  const question = flat.length > 80 ? `${flat.slice(0, 77)}...` : flat;
  return {
    rail,
    digest,
    amountMillicents,
    // What the payer is shown it pays for: the REST path, or the tool for a challenge sent over MCP.
    resource: input.resource ?? (served.kind === 'profile' ? `/api/profiles/${encodeURIComponent(served.slug)}/query` : '/api/ask/query'),
    description: `One answer from ${where}: "${question}"`,
  };
}
