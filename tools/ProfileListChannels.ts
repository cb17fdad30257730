import { z } from 'zod';
import * as Access from '../src/auth/Access.js';
import type { Caller } from '../src/auth/Caller.js';
import type { Channel, DirectoryPage, DirectoryProfile, ProfileChannels } from '../src/contract/Contract.js';
import { ServiceError } from '../src/errors/ServiceError.js';
import type { Services } from '../src/Services.js';
import type { StoredChannel } from '../src/store/Channels.js';
import type { Profile } from '../src/store/Profiles.js';
import { type Binding, define } from './Tool.js';

const maxOffset = 1_000_000_000;

const toChannel = (c: StoredChannel): Channel => ({
  id: c.id,
  kind: c.kind,
  label: c.label,
  accessLevel: c.accessLevel,
  ratePerMillionTokens: c.ratePerMillionTokens,
  status: c.status,
});

/** Paths of a profile's endpoints, relative to the base address. */
export const endpointsOf = (slug: string): DirectoryProfile['endpoints'] => ({
  channels: `/api/profiles/${slug}/channels`,
  quote: `/api/profiles/${slug}/quote`,
  query: `/api/profiles/${slug}/query`,
  mcp: `/${slug}/mcp`,
});

/** The channels body of one profile, showing only the channels the caller may see. */
export async function channelsOf(services: Services, profile: Profile, caller: Caller): Promise<ProfileChannels> {
  return {
    slug: profile.slug,
    name: profile.name,
    channels: (await Access.visibleChannels(services.store, profile, caller)).map(toChannel),
    pricingUnit: 'dollars_per_million_profile_tokens',
    profileToken: 'ceil(charCount / 4)',
  };
}

/** One page of public, opted-in profiles with their channels. */
export async function directory(services: Services, caller: Caller, page: { limit: number; cursor: string | undefined }): Promise<DirectoryPage> {
  const offset = page.cursor === undefined ? 0 : Number(page.cursor);
  if (page.cursor !== undefined && (!/^\d{1,10}$/.test(page.cursor) || offset > maxOffset)) {
    throw new ServiceError('invalid_cursor', `cursor "${page.cursor}" is not one this service issued; pass nextCursor from a previous page`);
  }
  let result: Awaited<ReturnType<Services['store']['profiles']['directoryPage']>>;
  try {
    result = await services.store.profiles.directoryPage({ offset, limit: page.limit });
  } catch (error) {
    // In production an unavailable store lists nothing rather than failing or falling back to demo rows.
    if (services.config.environment !== 'production') throw error;
    services.logger.error('directory unavailable', { error });
    return { data: [] };
  }
  const data: DirectoryPage['data'] = [];
  for (const p of result.profiles) {
    const { channels } = await channelsOf(services, p, caller);
    data.push({ slug: p.slug, name: p.name, description: p.description, channels, endpoints: endpointsOf(p.slug) });
  }
  return result.more ? { data, nextCursor: String(offset + page.limit) } : { data };
}

const globalInput = z
  .object({
    slug: z.string().min(1).max(200).optional().describe('A profile handle. Omit it to page through the public directory.'),
    limit: z.number().int().min(1).max(100).optional().describe('Directory page size, 1 to 100 (default 50).'),
    cursor: z.string().max(32).optional().describe('nextCursor from the previous directory page.'),
  })
  .strict();

export const profileListChannels = define({
  name: 'profile_list_channels',
  free: true,
  description: (binding: Binding) =>
    binding.kind === 'profile'
      ? `List the channels (video, podcast, feed, notes, upload) indexed for the profile "${binding.slug}", with their access level, status and price per million profile tokens. Free.`
      : 'List the channels of one profile (pass its slug), or page through the public directory of profiles with their channels (omit slug). Free. Use it to find a short relevant set of experts, not to dump the directory.',
  input: (binding: Binding) => (binding.kind === 'profile' ? z.object({}).strict() : globalInput),
  fieldErrors: { limit: 'invalid_limit', cursor: 'invalid_cursor' },
  unavailable: 'The directory is unavailable. Try again shortly.',
  async run(input: { slug?: string; limit?: number; cursor?: string }, { services, caller, profile }) {
    if (profile) return channelsOf(services, profile, caller);
    if (input.slug !== undefined) {
      if (input.limit !== undefined || input.cursor !== undefined) {
        throw new ServiceError('invalid_request', 'limit and cursor page the directory; they cannot be combined with slug');
      }
      return channelsOf(services, await Access.readableProfile(services.store, input.slug, caller), caller);
    }
    return directory(services, caller, { limit: input.limit ?? 50, cursor: input.cursor });
  },
});
