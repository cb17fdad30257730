import { z } from 'zod';
import { AccessLevel } from './Channel.js';
import { Rail } from './Quote.js';

const nonEmpty = z.string().min(1);

export const QueryScope = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('global') }).strict(),
  z.object({ kind: z.literal('profile'), slug: nonEmpty }).strict(),
  z.object({ kind: z.literal('collection'), creator: nonEmpty, collection: nonEmpty }).strict(),
  z.object({ kind: z.literal('handles'), handles: z.array(nonEmpty).min(1).max(20) }).strict(),
]);
export type QueryScope = z.infer<typeof QueryScope>;

export const QueryMode = z.enum(['lookup', 'summary', 'trend_brief', 'claim_extraction', 'source_inventory', 'comparison']);
export type QueryMode = z.infer<typeof QueryMode>;

export const PaymentMode = z.enum(['unlocks', 'credits']);
export type PaymentMode = z.infer<typeof PaymentMode>;

export const ResponseMode = z.enum(['raw', 'synthesized']);
export type ResponseMode = z.infer<typeof ResponseMode>;

/** The longest question accepted: a question, not a document. */
export const maxQuestionLength = 4_000;

export const QueryRequest = z
  .object({
    // Whitespace alone is no question: it is refused before anything is charged.
    question: z.string().trim().min(1).max(maxQuestionLength),
    mode: ResponseMode.optional(),
    scope: QueryScope.optional(),
    channelIds: z.array(z.string()).optional(),
    paymentMode: PaymentMode.optional(),
    rail: Rail.optional(),
    walletAddress: z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 0x-prefixed 20-byte hex address').optional(),
    _meta: z.record(z.unknown()).optional(),
    queryMode: QueryMode.optional(),
  })
  .strict();
export type QueryRequest = z.infer<typeof QueryRequest>;

export const Citation = z
  .object({
    label: z.string(),
    text: z.string(),
    profileUrl: z.string().describe('/<slug>/i/<itemId>?chunks=<chunkId>, relative to the base address'),
    itemId: z.string(),
    chunkId: z.string(),
    startSeconds: z.number().optional().describe('audio and video: the moment the cited words are spoken'),
    sourceUrl: z.string().url().optional().describe('the original, at that moment or page, when it is safe to expose'),
  })
  .strict();
export type Citation = z.infer<typeof Citation>;

export const RawChunk = z
  .object({
    chunkId: z.string(),
    itemId: z.string(),
    channelId: z.string(),
    text: z.string(),
    score: z.number(),
    ordinal: z.number().int(),
    accessLevel: AccessLevel,
    profileUrl: z.string(),
    profileTokens: z.number().int(),
    sourceUrl: z.string().url().optional(),
    publishedAt: z.number().int().optional(),
    startSeconds: z.number().optional(),
    endSeconds: z.number().optional(),
  })
  .strict();
export type RawChunk = z.infer<typeof RawChunk>;

export const RetrievalConfidence = z.enum(['high', 'medium', 'low']);
export type RetrievalConfidence = z.infer<typeof RetrievalConfidence>;

export const RetrievalOutcome = z.enum([
  'relevant_content',
  'no_relevant_content',
  'anchor_missing',
  'anchor_matched_topic_missing',
  'score_floor_not_met',
  'low_confidence',
]);
export type RetrievalOutcome = z.infer<typeof RetrievalOutcome>;

export const ContextDepth = z.enum(['standard', 'expanded']);

export const RetrievalDiagnostics = z
  .object({
    confidence: RetrievalConfidence,
    confidenceReasons: z.array(z.string()),
    outcome: RetrievalOutcome,
    lowConfidence: z.boolean(),
    returnedChunkCount: z.number().int(),
    noRelevantContent: z.boolean(),
    topItemShare: z.number(),
    topChannelShare: z.number(),
    sourceCoverage: z
      .object({
        uniqueItems: z.number().int(),
        uniqueChannels: z.number().int(),
        topItemShare: z.number(),
        topChannelShare: z.number(),
      })
      .strict(),
    candidateCount: z.number().int(),
    rerankCount: z.number().int(),
    uniqueSources: z.number().int(),
    missingAnchorGroups: z.array(z.array(z.string())),
    missingEntityGroups: z.array(z.array(z.string())),
    intent: z.string().optional(),
    scopeKind: z.string().optional(),
    contextDepth: ContextDepth.optional(),
    candidateChunkCount: z.number().int().optional(),
    scoreFloor: z.number().optional(),
    topScore: z.number().optional(),
    anchorMatchCount: z.number().int().optional(),
    directMatchCount: z.number().int().optional(),
    topicFillCount: z.number().int().optional(),
    answerability: z.number().optional(),
    /** What the answer was made without, because an outside party failed or is skipped: vectors (the embedder), model (the synthesizer). */
    degraded: z.array(z.enum(['vectors', 'model'])).optional(),
  })
  .strict();
export type RetrievalDiagnostics = z.infer<typeof RetrievalDiagnostics>;

export const Charge = z.enum(['onchain', 'unlock', 'credits']);
export type Charge = z.infer<typeof Charge>;

/** Fields every answer carries, in both modes: confidence, the charge and, for on-chain payments, the receipt. */
const answerFields = {
  confidence: RetrievalConfidence,
  confidenceReasons: z.array(z.string()),
  queryId: z.string(),
  charge: Charge,
  scope: QueryScope.optional(),
  rail: Rail.optional(),
  txHash: z.string().optional(),
  receipt: z.union([z.record(z.unknown()), z.string()]).optional(),
};

export const QueryResponse = z
  .object({
    answer: z.string(),
    citations: z.array(Citation),
    retrieval: z
      .object({ queryMode: QueryMode.optional(), diagnostics: RetrievalDiagnostics.optional() })
      .passthrough(),
    ...answerFields,
  })
  .strict();
export type QueryResponse = z.infer<typeof QueryResponse>;

export const EvidenceSourceGroup = z
  .object({
    sourceKey: z.string(),
    itemId: z.string(),
    channelId: z.string(),
    topScore: z.number(),
    chunkCount: z.number().int(),
    claimCount: z.number().int(),
    chunks: z.array(RawChunk),
    sourceUrl: z.string().url().optional(),
    publishedAt: z.number().int().optional(),
  })
  .strict();
export type EvidenceSourceGroup = z.infer<typeof EvidenceSourceGroup>;

export const EvidenceClaim = z
  .object({
    claimId: z.string(),
    text: z.string(),
    chunkIds: z.array(z.string()),
    itemIds: z.array(z.string()),
    channelIds: z.array(z.string()),
    score: z.number(),
    reason: z.string(),
  })
  .strict();
export type EvidenceClaim = z.infer<typeof EvidenceClaim>;

export const RawQueryResponse = z
  .object({
    mode: z.literal('raw'),
    chunks: z.array(RawChunk),
    retrieval: z
      .object({
        contextDepth: ContextDepth.optional(),
        queryMode: QueryMode.optional(),
        returnedChunkCount: z.number().int().optional(),
        noRelevantContent: z.boolean().optional(),
        diagnostics: RetrievalDiagnostics.optional(),
        sourceGroupCount: z.number().int().optional(),
        claimCount: z.number().int().optional(),
      })
      .passthrough(),
    ...answerFields,
    sourceGroups: z.array(EvidenceSourceGroup).optional(),
    claims: z.array(EvidenceClaim).optional(),
  })
  .strict();
export type RawQueryResponse = z.infer<typeof RawQueryResponse>;
