import { z } from 'zod';

export const ChannelKind = z.enum(['youtube', 'podcast_rss', 'rss', 'notion', 'subtext', 'user_upload']);
export type ChannelKind = z.infer<typeof ChannelKind>;

export const AccessLevel = z.enum(['public', 'private']);
export type AccessLevel = z.infer<typeof AccessLevel>;

export const ChannelStatus = z.enum(['live', 'syncing', 'paused']);
export type ChannelStatus = z.infer<typeof ChannelStatus>;

/** A source of a profile's content. All fields required, no others allowed. */
export const Channel = z
  .object({
    id: z.string(),
    kind: ChannelKind,
    label: z.string(),
    accessLevel: AccessLevel,
    ratePerMillionTokens: z.number().describe('dollars per one million profile tokens'),
    status: ChannelStatus,
  })
  .strict();
export type Channel = z.infer<typeof Channel>;
