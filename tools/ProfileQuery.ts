import * as Extractive from '../src/answer/Extractive.js';
import * as Claims from '../src/answer/Claims.js';
import * as SourceLinks from '../src/answer/SourceLinks.js';
import { profileUrl } from '../src/answer/Synthesizer.js';
import { QueryRequest } from '../src/contract/Query.js';
import type { EvidenceSourceGroup, QueryResponse, RawChunk, RawQueryResponse, RetrievalDiagnostics } from '../src/contract/Query.js';
import { ServiceError } from '../src/errors/ServiceError.js';
import * as Charging from '../src/payments/Charging.js';
import * as Diagnostics from '../src/retrieval/Diagnostics.js';
import type { Evidence, Retrieval } from '../src/retrieval/Retriever.js';
import * as Retriever from '../src/retrieval/Retriever.js';
import * as Scope from '../src/retrieval/Scope.js';
import * as Payer from '../src/payments/Payer.js';
import * as Ids from '../src/store/Ids.js';
import { type Binding, define } from './Tool.js';

const round = (n: number) => Math.round(n * 10_000) / 10_000;

/** Private items never carry a source URL, whoever asks: private channels, and every channel of a private profile. */
const publicSource = (e: Evidence): string | undefined =>
  e.scoped.channel.accessLevel === 'public' && e.scoped.profile.visibility !== 'private' && e.sourceUrl ? e.sourceUrl : undefined;

export function rawChunk(e: Evidence): RawChunk {
  const sourceUrl = SourceLinks.deepLink(publicSource(e), e);
  return {
    chunkId: e.chunkId,
    itemId: e.itemId,
    channelId: e.channelId,
    text: e.text,
    score: round(e.score),
    ordinal: e.ordinal,
    accessLevel: e.scoped.channel.accessLevel,
    profileUrl: profileUrl(e.scoped.profile.slug, e.itemId, e.chunkId),
    profileTokens: Math.ceil(e.text.length / 4),
    ...(sourceUrl && { sourceUrl }),
    ...(e.publishedAt !== null && { publishedAt: e.publishedAt }),
    ...(e.startSeconds !== null && { startSeconds: e.startSeconds }),
    ...(e.endSeconds !== null && { endSeconds: e.endSeconds }),
  };
}

/** The normalized source list SPEC.md describes, one entry per item, kept inside `retrieval`. */
function sources(returned: Evidence[]) {
  const byItem = new Map<string, { e: Evidence; count: number }>();
  for (const e of returned) {
    const found = byItem.get(e.itemId);
    if (found) found.count += 1;
    else byItem.set(e.itemId, { e, count: 1 });
  }
  return [...byItem.values()].map(({ e, count }) => {
    const sourceUrl = publicSource(e);
    return {
      sourceId: e.itemId,
      title: e.title,
      type: e.scoped.channel.kind,
      channelId: e.channelId,
      creator: { handle: e.scoped.profile.slug, name: e.scoped.profile.name },
      citationCount: count,
      ...(e.publishedAt !== null && { publishedAt: e.publishedAt }),
      ...(sourceUrl && { sourceUrl }),
    };
  });
}

function sourceGroups(returned: Evidence[], claims: ReturnType<typeof Claims.extract>): EvidenceSourceGroup[] {
  const groups = new Map<string, Evidence[]>();
  for (const e of returned) groups.set(e.itemId, [...(groups.get(e.itemId) ?? []), e]);
  return [...groups.values()].map((list) => {
    const e = list[0]!;
    const sourceUrl = publicSource(e);
    return {
      sourceKey: `${e.scoped.profile.slug}/${e.itemId}`,
      itemId: e.itemId,
      channelId: e.channelId,
      topScore: round(Math.max(...list.map((x) => x.score))),
      chunkCount: list.length,
      claimCount: claims.filter((c) => c.itemIds.includes(e.itemId)).length,
      chunks: list.map(rawChunk),
      ...(sourceUrl && { sourceUrl }),
      ...(e.publishedAt !== null && { publishedAt: e.publishedAt }),
    };
  });
}

function retrievalBlock(run: Retrieval, diagnostics: RetrievalDiagnostics, returned: Evidence[]) {
  return {
    queryMode: run.mode,
    contextDepth: run.contextDepth,
    returnedChunkCount: returned.length,
    noRelevantContent: diagnostics.noRelevantContent,
    diagnostics,
    sources: sources(returned),
    sourceCoverage: diagnostics.sourceCoverage,
  };
}

export const profileQuery = define({
  name: 'profile_query',
  free: false,
  description: (binding: Binding) =>
    `Ask a question of ${binding.kind === 'profile' ? `the indexed content of "${binding.slug}"` : 'participating experts’ indexed content (global, one profile, a collection, or up to 20 handles; @mentions narrow the scope)'}. Returns a grounded answer with profileUrl citations (mode "synthesized", default) or ranked chunks, source groups and claims (mode "raw"), always with a retrieval confidence and diagnostics. Paid: send the service-api-key header and paymentMode (unlocks or credits); a query that finds nothing relevant is refunded.`,
  input: () => QueryRequest,
  fieldErrors: {
    // Absent or empty is a missing question; any other type or an overlong one is a malformed request.
    question: (issue) => (issue.code === 'too_small' || (issue.code === 'invalid_type' && ['undefined', 'null'].includes(issue.received)) ? 'missing_question' : 'invalid_request'),
    scope: 'invalid_scope',
  },
  async run(input, { services, caller, binding, profile }) {
    const account = Payer.accountOf(services.db, caller, profile);
    if (!account) {
      throw new ServiceError(
        'api_key_required',
        caller.bearer
          ? 'a bearer token pays only for queries on the endpoints of a profile its account owns or is a team member of; send a service-api-key header with paymentMode'
          : input.rail
            ? `on-chain payment (${input.rail}) is not available on this server yet; send an API key (the service-api-key header) with paymentMode`
            : 'profile_query needs an API key (the service-api-key header; PROFILE_EDGE_API_KEY for stdio) and paymentMode (unlocks or credits)',
      );
    }
    if (!input.paymentMode) throw new ServiceError('missing_payment_mode', caller.apiKey ? undefined : 'paymentMode (unlocks or credits) is required: the query is charged to your account.');
    const { db, config } = services;
    const scope = Scope.resolve(db, {
      question: input.question,
      scope: binding.kind === 'global' ? input.scope : undefined,
      boundSlug: profile?.slug,
      channelIds: input.channelIds,
      caller,
    });
    const queryId = Ids.random('q');
    Charging.charge(db, { config, accountId: account, mode: input.paymentMode, queryId, memo: input.question.slice(0, 200) });
    try {
      const stats = services.stats.current();
      const run = await Retriever.retrieve(db, stats, { question: scope.retrievalText, channels: scope.channels, mode: input.queryMode, termModel: services.termModel(), vectors: services.vectors, vectorWeight: config.embedding.weight, minSimilarity: config.embedding.minSimilarity });
      const { diagnostics, returned } = Diagnostics.diagnose(run, { scopeKind: scope.kind, scopeNotes: scope.notes, channelCount: scope.channels.size });
      const charge = input.paymentMode === 'unlocks' ? ('unlock' as const) : ('credits' as const);
      const question = run.question;
      let response: QueryResponse | RawQueryResponse;
      // What the caller receives, and so what each creator is paid for: returned text in raw mode, cited chunks in synthesized.
      let used: { e: Evidence; text: string }[];
      if (input.mode === 'raw') {
        const claims = Claims.extract(returned, question);
        const groups = sourceGroups(returned, claims);
        used = returned.map((e) => ({ e, text: e.text }));
        response = {
          mode: 'raw',
          chunks: returned.map(rawChunk),
          confidence: diagnostics.confidence,
          confidenceReasons: diagnostics.confidenceReasons,
          retrieval: { ...retrievalBlock(run, diagnostics, returned), sourceGroupCount: groups.length, claimCount: claims.length },
          queryId,
          charge,
          scope: scope.scope,
          sourceGroups: groups,
          claims,
        };
      } else {
        const { answer, citations } = await services.synthesizer.synthesize({ question: input.question, evidence: returned, terms: question });
        used = returned.filter((e) => citations.some((c) => c.chunkId === e.chunkId)).map((e) => ({ e, text: e.chunkText }));
        response = {
          answer: returned.length === 0 ? Extractive.nothingFound : answer,
          citations,
          confidence: diagnostics.confidence,
          confidenceReasons: diagnostics.confidenceReasons,
          retrieval: retrievalBlock(run, diagnostics, returned),
          queryId,
          charge,
          scope: scope.scope,
        };
      }
      if (diagnostics.noRelevantContent) {
        Charging.reverse(db, { config, accountId: account, mode: input.paymentMode, queryId, reason: `no relevant content (${diagnostics.outcome})` });
      } else {
        Charging.creditCreators(db, {
          queryId,
          usage: used.map(({ e, text }) => ({
            channelId: e.channelId,
            profileId: e.scoped.profile.id,
            ownerAccountId: e.scoped.profile.ownerAccountId,
            profileTokens: Math.ceil(text.length / 4),
            ratePerMillionTokens: e.scoped.channel.ratePerMillionTokens,
          })),
        });
      }
      return response;
    } catch (error) {
      // A query that fails after the charge costs nothing; a failed reversal is logged, never hides the cause.
      try {
        Charging.reverse(db, { config, accountId: account, mode: input.paymentMode, queryId, reason: 'query failed' });
      } catch (reversal) {
        services.logger.error('charge reversal failed', { queryId, error: reversal });
      }
      throw error;
    }
  },
});
