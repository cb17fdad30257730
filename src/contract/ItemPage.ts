import { z } from 'zod';

/** One chunk on a citation page: its text and place, whether the citation points at it, and a link to the moment or page. */
export const PageChunk = z
  .object({
    chunkId: z.string(),
    ordinal: z.number().int(),
    text: z.string(),
    cited: z.boolean(),
    startSeconds: z.number().optional(),
    endSeconds: z.number().optional(),
    pageStart: z.number().int().optional(),
    pageEnd: z.number().int().optional(),
    sourceUrl: z.string().optional().describe('the original at this chunk (a video moment, a PDF page); public content only'),
  })
  .strict();

/** What a citation's `profileUrl` resolves to: the item, its creator, and the cited chunks with their neighbours. */
export const ItemPage = z
  .object({
    profile: z.object({ slug: z.string(), name: z.string() }).strict(),
    item: z
      .object({
        itemId: z.string(),
        title: z.string(),
        channel: z.object({ id: z.string(), label: z.string(), kind: z.string() }).strict(),
        publishedAt: z.string().optional(),
        author: z.string().optional(),
        sourceUrl: z.string().optional(),
        chunkCount: z.number().int(),
      })
      .strict(),
    chunks: z.array(PageChunk),
  })
  .strict();
export type ItemPage = z.infer<typeof ItemPage>;
