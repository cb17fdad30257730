import * as Extractive from '../src/answer/Extractive.js';
import * as Claims from '../src/answer/Claims.js';
import * as Rationale from '../src/answer/Rationale.js';
import * as SourceLinks from '../src/answer/SourceLinks.js';
import { profileUrl } from '../src/answer/Synthesizer.js';
import { QueryRequest } from '../src/contract/Query.js';
import type { EvidenceSourceGroup, QueryResponse, RawChunk, RawQueryResponse, RetrievalDiagnostics } from '../src/contract/Query.js';
import * as Charging from '../src/payments/Charging.js';
import { crashPoint } from '../src/payments/CrashPoints.js';
import * as Diagnostics from '../src/retrieval/Diagnostics.js';
import type { Evidence } from '../src/retrieval/Evidence.js';
import type { Retrieval } from '../src/retrieval/Retriever.js';
import * as Retriever from '../src/retrieval/Retriever.js';
import * as Scope from '../src/retrieval/Scope.js';
import * as Text from '../src/retrieval/Text.js';
import type * as Hold from '../src/payments/Hold.js';
import * as Payer from '../src/payments/Payer.js';
import * as PrivateLinks from '../src/pages/PrivateLinks.js';
import type { OutboundReceipt } from '../src/payments/Rail.js';
import type { Services } from '../src/Services.js';
import { type Store, Unavailable } from '../src/store/Store.js';
import { ServiceError } from '../src/errors/ServiceError.js';
import type { QueryOutcome } from '../src/health/Metrics.js';
import * as RequestContext from '../src/log/RequestContext.js';
import * as Pricing from '../src/payments/Pricing.js';
import * as Ids from '../src/store/Ids.js';
import { type Binding, type ToolContext, define } from './Tool.js';
import { outcomeOf } from './Outcome.js';

const round = (n: number) => Math.round(n * 10_000) / 10_000;
const rank = { low: 0, medium: 1, high: 2 } as const;

const { publicSource } = SourceLinks;

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

type Preflight = { run: Retrieval; diagnostics: RetrievalDiagnostics; returned: Evidence[]; sentences: Rationale.Scorer };

/** Preflight retrieval: ranked evidence and its diagnostics, before anyone pays. */
async function retrieve(services: Services, scope: Scope.ResolvedScope, input: QueryRequest, termModel: ReturnType<Services['termModel']>, asOf: number): Promise<Preflight> {
  // A scope of several handles (or mentions) asks the question of each of those experts.
  const profiles = new Set([...scope.channels.values()].map((c) => c.profile.id));
  const run = await Retriever.retrieve(services.store, await services.lexicalIndex(), {
    asOf,
    question: scope.retrievalText,
    channels: scope.channels,
    mode: input.queryMode,
    termModel: await termModel,
    vectors: services.vectors,
    experts: (scope.kind === 'handles' || scope.kind === 'mentions') && profiles.size > 1 ? profiles : undefined,
  });
  services.metrics.stage('first_stage', run.timings.firstStage);
  services.metrics.stage('rerank', run.timings.rerank);
  const assessment = Rationale.assess(run);
  // The answerability model judges a question asking for one answer; an overview, a timeline, a comparison or an
  // inventory asks for whatever the content holds, and the score floor alone decides it. The model reads words, so
  // where similarity carries weight (a synonym the words miss can be the answer) the floor decides too.
  const focused = (run.mode === 'lookup' || run.mode === 'claim_extraction') && !(run.vectors && run.vectors.weight !== 0);
  const { diagnostics, returned } = Diagnostics.diagnose(run, {
    scopeKind: scope.kind,
    scopeNotes: scope.notes,
    channelCount: scope.channels.size,
    answerability: focused ? assessment : undefined,
  });
  return { run, diagnostics, returned, sentences: assessment.scorer };
}

/** What the caller receives, with the text each creator is paid for: returned text in raw mode, cited chunks in synthesized. */
type Answer = { response: QueryResponse | RawQueryResponse; used: { e: Evidence; text: string }[]; answered: boolean };

/** The answer phase: ranked chunks, source groups and claims (raw), or a synthesized answer with citations. */
async function answer(
  services: Services,
  input: { input: QueryRequest; scope: Scope.ResolvedScope; preflight: Preflight; queryId: string; charge: Hold.ChargeKind },
): Promise<Answer> {
  const { run, diagnostics, returned } = input.preflight;
  const common = { confidence: diagnostics.confidence, confidenceReasons: diagnostics.confidenceReasons, queryId: input.queryId, charge: input.charge, scope: input.scope.scope };
  if (input.input.mode === 'raw') {
    const claims = Claims.extract(returned, run.question);
    const groups = sourceGroups(returned, claims);
    return {
      response: {
        mode: 'raw',
        chunks: returned.map(rawChunk),
        ...common,
        retrieval: { ...retrievalBlock(run, diagnostics, returned), sourceGroupCount: groups.length, claimCount: claims.length },
        sourceGroups: groups,
        claims,
      },
      used: returned.map((e) => ({ e, text: e.text })),
      answered: returned.length > 0,
    };
  }
  const synthesizing = performance.now();
  const synthesis = await services.synthesizer.synthesize({ question: input.input.question, evidence: returned, terms: run.question, mode: run.mode, sentences: input.preflight.sentences, experts: run.experts, similarity: services.similarity });
  services.metrics.stage('synthesis', (performance.now() - synthesizing) / 1000);
  const { answer: text, citations, notes = [] } = synthesis;
  // Written without the model (it failed, or is skipped for a while): the diagnostics say so beside what retrieval lacked.
  const degraded = [...(diagnostics.degraded ?? []), ...(synthesis.degraded ?? [])];
  if (degraded.length > 0) diagnostics.degraded = degraded;
  if (returned.length > 0 && citations.length === 0) {
    // The synthesizer found nothing in the evidence that answers: an answer with no grounds is no answer, and costs nothing.
    const abstained: RetrievalDiagnostics = {
      ...diagnostics,
      outcome: 'low_confidence',
      noRelevantContent: true,
      confidence: 'low',
      lowConfidence: true,
      confidenceReasons: [...diagnostics.confidenceReasons, ...notes, 'No statement of the answer could be grounded in the evidence, so there is none to give. The charge for this query is reversed.'],
    };
    return {
      response: {
        answer: Extractive.nothingFound,
        citations: [],
        ...common,
        confidence: 'low',
        confidenceReasons: abstained.confidenceReasons,
        retrieval: { ...retrievalBlock(run, abstained, returned), noRelevantContent: true },
      },
      used: [],
      answered: false,
    };
  }
  const { ceiling } = synthesis;
  const capped = ceiling && rank[ceiling.confidence] < rank[diagnostics.confidence] ? ceiling.confidence : diagnostics.confidence;
  const judged: RetrievalDiagnostics = {
    ...diagnostics,
    confidence: capped,
    lowConfidence: capped === 'low',
    confidenceReasons: [...diagnostics.confidenceReasons, ...notes, ...(capped !== diagnostics.confidence ? [ceiling!.reason] : [])],
  };
  return {
    response: {
      answer: returned.length === 0 ? Extractive.nothingFound : text,
      citations,
      ...common,
      confidence: judged.confidence,
      confidenceReasons: judged.confidenceReasons,
      retrieval: retrievalBlock(run, judged, returned),
    },
    answered: returned.length > 0,
    used: returned.filter((e) => citations.some((c) => c.chunkId === e.chunkId)).map((e) => ({ e, text: e.chunkText })),
  };
}

/** Each creator's share of an answer: profile tokens used times the channel's rate. */
async function creditCreators(store: Store, queryId: string, used: Answer['used']): Promise<void> {
  await Charging.creditCreators(store, {
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

export const profileQuery = define({
  name: 'profile_query',
  free: false,
  description: (binding: Binding) =>
    `Ask a question of ${binding.kind === 'profile' ? `the indexed content of "${binding.slug}"` : 'participating experts’ indexed content (global, one profile, a collection, or up to 20 handles; @mentions narrow the scope)'}. Returns a grounded answer with profileUrl citations (mode "synthesized", default) or ranked chunks, source groups and claims (mode "raw"), always with a retrieval confidence and diagnostics. Paid: with the service-api-key header and paymentMode (unlocks or credits), or on-chain per query with rail (tempo or x402_base): the unpaid call answers JSON-RPC -32042 with data.challenges; pay it and repeat the call with the credential in _meta["org.paymentauth/credential"]. Nothing is paid when nothing relevant is found.`,
  input: () => QueryRequest,
  fieldErrors: {
    // Absent or empty is a missing question; any other type or an overlong one is a malformed request.
    question: (issue) => (issue.code === 'too_small' || (issue.code === 'invalid_type' && ['undefined', 'null'].includes(issue.received)) ? 'missing_question' : 'invalid_request'),
    scope: 'invalid_scope',
    rail: 'invalid_rail',
  },
  // SPEC.md's earlier contract variant, answered with where to go instead.
  retiredFields: { paymentProof: 'invalid_payment_proof', quoteNonce: 'invalid_payment_proof' },
  unavailable: 'Retrieval is unavailable, so the query cannot be priced or answered now; nothing stays charged (a payment that already moved is kept as credit). Try again shortly.',
  /** Counted as a query refused: a bad credential, an unknown profile, invalid input. */
  refused(error, { services, binding, args, profileId }) {
    const mode = (args as { mode?: unknown } | null | undefined)?.mode === 'raw' ? 'raw' : 'synthesized';
    const outcome = outcomeOf(error);
    services.metrics.query({ transport: RequestContext.current()?.transport ?? 'direct', mode, outcome, confidence: 'none', seconds: 0 });
    // A profile that does not exist (or may not be read) has no row to count under; the global endpoint's is ''.
    if (binding.kind === 'global' || profileId !== undefined) services.tally.count({ profileId: profileId ?? '', outcome, pay: '' });
  },
  /** Runs the question (see `ask`), and counts how it ended. */
  async run(input, context) {
    const { services } = context;
    const started = performance.now();
    const seen: Seen = { outcome: 'failed', confidence: 'none', pay: input.rail ?? '' };
    if (services.config.log.questions) RequestContext.note({ question: input.question });
    try {
      return await ask(input, context, seen);
    } catch (thrown) {
      seen.outcome = outcomeOf(thrown);
      throw thrown;
    } finally {
      RequestContext.note({ outcome: seen.outcome });
      // An answer is counted for the operator's stats once its payment stood (see `ask`), with what it earned.
      if (seen.outcome !== 'answered') services.tally.count({ profileId: context.profile?.id ?? '', outcome: seen.outcome, pay: seen.pay });
      services.metrics.query({
        transport: RequestContext.current()?.transport ?? 'direct',
        mode: input.mode ?? 'synthesized',
        outcome: seen.outcome,
        confidence: seen.confidence,
        seconds: (performance.now() - started) / 1000,
      });
    }
  },
});

/** Gives a hold back; a failed release is logged, never hides the cause. */
async function releaseHold(services: Services, hold: Hold.Hold, { queryId, rail, reason }: { queryId: string; rail: string; reason: string }): Promise<void> {
  try {
    await hold.release(reason);
    services.metrics.reversal({ kind: hold.charge, rail });
  } catch (error) {
    if (!(error instanceof Unavailable)) return services.logger.error('payment release failed', { queryId, error });
    // The database went away between the charge and its release: the release waits for it, not for reconciliation.
    services.logger.warn('payment release waits for the database', { queryId });
    services.database.whenBack(`payment release of ${queryId}`, () => hold.release(reason));
  }
}

/** What the metrics and the request's log line learn of a query as it runs. */
type Seen = { outcome: QueryOutcome; confidence: string; /** The rail, or the balance paid from ('unlock', 'credits'). */ pay: string };

/**
 * A paid question as a row of phases: who pays, scope, preflight retrieval, the payment hold, the answer, the
 * settlement, and the response; the payment is captured once the response was delivered, and released (a credit,
 * when money moved) when the caller went away first, or when nothing relevant was found, or on a failure.
 */
async function ask(input: QueryRequest, { services, caller, binding, profile, payment: channel, connection }: ToolContext, seen: Seen): Promise<unknown> {
  const { store, config } = services;
  // Who pays, what the scope holds, which term model answers and what the search log added are independent reads:
  // side by side, one round trip's wait instead of four on PostgreSQL. A refusal of who pays still comes first.
  const askedAt = performance.now();
  const indexReady = services.lexicalIndex().then((index) => index.prepare(Text.stemsOf(input.question)));
  // A failure here is retrieval's too (it waits on the same read of the log, or reads it again), and it reports it;
  // here it must not surface as an unhandled rejection.
  indexReady.catch(() => undefined);
  const paying = Payer.payerFor({ store, config, logger: services.logger, metrics: services.metrics, breakers: services.breakers, rails: services.rails, caller, profile, request: input, served: binding, credential: channel.credential, resource: channel.resource, instance: services.instance.id(), settling: services.settling });
  const resolving = Scope.resolve(store, {
    question: input.question,
    scope: binding.kind === 'global' ? input.scope : undefined,
    boundSlug: profile?.slug,
    channelIds: input.channelIds,
    caller,
  });
  const termModel = services.termModel();
  // Awaited by retrieval; a failure before it gets there must not surface as an unhandled rejection.
  termModel.catch(() => undefined);
  const [paid, scoped] = await Promise.allSettled([paying, resolving]);
  if (paid.status === 'rejected' || scoped.status === 'rejected') throw paid.status === 'rejected' ? paid.reason : (scoped as PromiseRejectedResult).reason;
  const [payment, scope] = [paid.value, scoped.value];
  const queryId = Ids.random('q');
  const memo = input.question.slice(0, 200);
  // A hold that does not depend on what retrieval finds (a balance's debit) is taken while retrieval runs: on
  // PostgreSQL its commit waits beside the first stage instead of after it. Given back if retrieval fails. Not while
  // the index is still loading (minutes, at millions of chunks): a hold that old could be taken for a crash's orphan.
  const early = payment.readsRelevance || !services.indexLoaded() ? undefined : payment.authorize({ queryId, memo, relevant: true });
  const [held, retrieved] = await Promise.allSettled([early, retrieve(services, scope, input, termModel, askedAt)]);
  if (retrieved.status === 'rejected') {
    if (held.status === 'fulfilled' && held.value) {
      seen.pay = held.value.charge;
      RequestContext.note({ charge: held.value.charge, rail: 'none' });
      await releaseHold(services, held.value, { queryId, rail: 'none', reason: 'query failed' });
    }
    throw retrieved.reason;
  }
  if (held.status === 'rejected') throw held.reason;
  const preflight = retrieved.value;
  const relevant = !preflight.diagnostics.noRelevantContent;
  const hold = held.value ?? (await payment.authorize({ queryId, memo, relevant }));
  crashPoint(config, 'after_hold');
  const rail = hold.charge === 'onchain' ? (input.rail ?? 'none') : 'none';
  seen.pay = hold.charge === 'onchain' ? rail : hold.charge;
  RequestContext.note({ charge: hold.charge, rail });
  const release = (reason: string) => releaseHold(services, hold, { queryId, rail, reason });
  const departed = () => new ServiceError('service_unavailable', 'The caller went away before the answer was delivered; nothing was charged (money that already moved is kept as a credit for the paying wallet).');
  let response: Answer['response'];
  let used: Answer['used'];
  let receipt: OutboundReceipt | undefined;
  try {
    const answered = await answer(services, { input, scope, preflight, queryId, charge: hold.charge });
    seen.confidence = answered.response.confidence;
    if (!relevant || !answered.answered) {
      await release(relevant ? 'no grounded answer' : `no relevant content (${preflight.diagnostics.outcome})`);
      seen.outcome = 'unanswered';
      return answered.response;
    }
    ({ response, used } = answered);
    response = await PrivateLinks.sign(response, { evidence: preflight.returned, links: services.citationLinks });
    if (connection.gone()) throw departed();
    const settling = performance.now();
    receipt = await hold.settle();
    services.metrics.stage('settlement', (performance.now() - settling) / 1000);
    // Settling takes a while, and an answer paid from a balance takes no I/O at all: the event loop polls its
    // sockets once (an immediate queued from the check phase runs after the next poll) to read a departure that
    // came meanwhile. A caller who left gets no answer; the money that moved is a credit.
    await new Promise((resolve) => setImmediate(() => setImmediate(resolve)));
    if (connection.gone()) throw departed();
  } catch (error) {
    // A query that fails after the hold costs nothing (money that already moved becomes a credit).
    await release(connection.gone() ? 'the caller went away before the answer was delivered' : 'query failed');
    throw error;
  }
  // The payment stands once the answer is out: the creators' shares and the capture land together, or neither does.
  // Ahead of requests waiting for the database: until it lands, a killed process would leave the answer unpaid.
  void services.pending.track(connection.delivered().then(async (delivered) => {
    if (!delivered) return release('the caller went away while the answer was written');
    try {
      await store.urgent.transaction(async (tx) => {
        await creditCreators(tx, queryId, used);
        await hold.capture(tx);
      });
      const usd = hold.charge === 'onchain' ? config.pricing.amountUsdMillicents / Pricing.millicentsPerUsd : undefined;
      const units = hold.charge === 'unlock' ? { unit: 'unlocks' as const, amount: config.pricing.costUnlocks } : hold.charge === 'credits' ? { unit: 'credits' as const, amount: config.pricing.costCredits } : undefined;
      services.metrics.charge({ kind: hold.charge, rail, usd, units });
      services.tally.count({ profileId: profile?.id ?? '', outcome: 'answered', pay: seen.pay, usdMicros: usd === undefined ? 0 : Math.round(usd * 1_000_000), units: units?.amount ?? 0 });
    } catch (error) {
      services.logger.error('an answer was delivered but its payment could not be captured', { queryId, error });
    }
  }));
  seen.outcome = 'answered';
  if (!receipt) return response;
  channel.receipt(receipt);
  return { ...response, rail: receipt.rail, txHash: receipt.txHash, receipt: receipt.receipt };
}
