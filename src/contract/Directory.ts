import { z } from 'zod';
import { Channel } from './Channel.js';

export const ProfileRef = z.object({ slug: z.string(), name: z.string() }).strict();
export type ProfileRef = z.infer<typeof ProfileRef>;

/** Where a profile's per-profile endpoints live, as paths relative to the base address. */
export const EndpointManifest = z
  .object({ channels: z.string(), quote: z.string(), query: z.string(), mcp: z.string() })
  .strict();
export type EndpointManifest = z.infer<typeof EndpointManifest>;

export const DirectoryProfile = z
  .object({
    slug: z.string(),
    name: z.string(),
    description: z.string(),
    channels: z.array(Channel),
    endpoints: EndpointManifest,
  })
  .strict();
export type DirectoryProfile = z.infer<typeof DirectoryProfile>;

/** One page of the public directory; `nextCursor` is omitted on the last page. */
export const DirectoryPage = z
  .object({ data: z.array(DirectoryProfile), nextCursor: z.string().optional() })
  .strict();
export type DirectoryPage = z.infer<typeof DirectoryPage>;

export const ProfileChannels = z
  .object({
    slug: z.string(),
    name: z.string(),
    channels: z.array(Channel),
    pricingUnit: z.literal('dollars_per_million_profile_tokens'),
    profileToken: z.literal('ceil(charCount / 4)'),
  })
  .strict();
export type ProfileChannels = z.infer<typeof ProfileChannels>;

/** One thing the service needs to answer, as liveness reports it: whether it answered just now. */
export const Dependency = z.object({ ok: z.boolean() }).strict();

export const Health = z
  .object({
    ok: z.boolean(),
    service: z.literal('profile-edge'),
    environment: z.string(),
    /** Which dependency is down when `ok` is false (an addition to the contract's three fields; always sent). */
    dependencies: z.object({ database: Dependency }).strict().optional(),
  })
  .strict();
export type Health = z.infer<typeof Health>;

/** What the server's own address shows, as JSON (a browser gets the same as a page): what it is and where to go. */
export const Home = z
  .object({
    name: z.literal('profile-edge'),
    version: z.string(),
    description: z.string(),
    links: z.array(z.object({ label: z.string(), href: z.string(), about: z.string() }).strict()),
  })
  .strict();
export type Home = z.infer<typeof Home>;

/** One configured payment rail as readiness reports it: whether its chain (and facilitator) answered just now. */
export const RailCheck = z.object({ ok: z.boolean(), detail: z.string().optional() }).strict();

/**
 * Readiness, for a load balancer: whether this instance should be sent requests (200) or not (503): it is not shutting
 * down, its database answers and its search index is loaded. Each configured rail is reported; a rail that is down
 * does not make the instance unready (every instance shares the chain, and API-key queries are answered regardless).
 */
export const Readiness = z
  .object({
    ready: z.boolean(),
    /** The instance is shutting down: it finishes what it took and exits. */
    draining: z.boolean(),
    checks: z
      .object({
        database: Dependency,
        index: z
          .object({
            ok: z.boolean(),
            chunks: z.number().int().nonnegative().optional(),
            /** While the index loads: from its snapshot (bytes read) or from rows (chunks read), how far it has got. */
            loading: z
              .object({ source: z.enum(['snapshot', 'rows']), done: z.number().int().nonnegative(), total: z.number().int().nonnegative(), percent: z.number().min(0).max(100) })
              .strict()
              .optional(),
          })
          .strict(),
        rails: z.record(z.string(), RailCheck),
      })
      .strict(),
  })
  .strict();
export type Readiness = z.infer<typeof Readiness>;
