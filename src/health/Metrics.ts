import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Breakers, BreakerState } from './Breaker.js';
import { dependencies } from './Breaker.js';

/**
 * What the service counts, for Prometheus (`/metrics`, text format, through prom-client). Every label takes its values
 * from a set the code fixes (a transport, a route pattern, an outcome, a rail...) or the store bounds (a channel id);
 * never from what a caller sends, and never a secret, a wallet or a question. Each process counts its own; Prometheus
 * adds the instances up.
 */
export type Metrics = {
  httpRequest(input: { transport: string; method: string; route: string; status: number; seconds: number }): void;
  query(input: { transport: string; mode: QueryModeLabel; outcome: QueryOutcome; confidence: string; seconds: number }): void;
  stage(stage: Stage, seconds: number): void;
  /** An answer's payment stood (captured). `usd`: what moved on-chain; `units`: what a balance paid. */
  charge(input: { kind: string; rail: string; usd?: number; units?: { unit: 'unlocks' | 'credits'; amount: number } }): void;
  reversal(input: { kind: string; rail: string }): void;
  payment(rail: string, state: PaymentState, count?: number): void;
  dependencyFailure(dependency: string, kind: 'error' | 'timeout' | 'skipped'): void;
  fallback(dependency: string): void;
  sync(input: { kind: string; result: string; items: number; errors: number }): void;
  rateLimited(limit: 'quote'): void;
  indexLoaded(input: { chunks: number; seconds: number }): void;
  /** The exposition, for `/metrics`. */
  render(): Promise<{ contentType: string; body: string }>;
};

export type QueryModeLabel = 'raw' | 'synthesized';
/** answered (and charged), unanswered (nothing relevant or grounded: free), challenged (402), refused (another 4xx), failed (5xx). */
export type QueryOutcome = 'answered' | 'unanswered' | 'challenged' | 'refused' | 'failed';
export type Stage = 'first_stage' | 'rerank' | 'synthesis' | 'settlement';
export type PaymentState = 'challenged' | 'verified' | 'settled' | 'refused' | 'released' | 'credited' | 'reconciled';

/** What the metrics read from elsewhere at each scrape. */
export type Sources = {
  breakers?: Breakers | undefined;
  /** Channels that sync, with when each last synced well. */
  channels?: (() => Promise<{ id: string; kind: string; syncedAt: number | null }[]>) | undefined;
};

const breakerValue: Record<BreakerState, number> = { closed: 0, half_open: 0.5, open: 1 };

/** Latency buckets, in seconds: a millisecond to a minute. */
const buckets = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

export function create(options: { process?: boolean; sources?: Sources } = {}): Metrics {
  const registry = new Registry();
  const prefix = 'profile_edge_';
  const registers = [registry];
  // Process metrics (CPU, memory, event loop lag, handles) only where they are served: each set starts observers.
  if (options.process) collectDefaultMetrics({ register: registry, prefix });
  const requests = new Counter({ name: `${prefix}http_requests_total`, help: 'HTTP requests, by transport, method, route pattern and status.', labelNames: ['transport', 'method', 'route', 'status'], registers });
  const requestSeconds = new Histogram({ name: `${prefix}http_request_duration_seconds`, help: 'HTTP request duration, by transport and route pattern.', labelNames: ['transport', 'route'], buckets, registers });
  const queries = new Counter({ name: `${prefix}queries_total`, help: 'profile_query calls, by transport, answer mode, outcome and confidence.', labelNames: ['transport', 'mode', 'outcome', 'confidence'], registers });
  const querySeconds = new Histogram({ name: `${prefix}query_duration_seconds`, help: 'Whole profile_query calls, by transport and outcome.', labelNames: ['transport', 'outcome'], buckets, registers });
  const stageSeconds = new Histogram({ name: `${prefix}query_stage_duration_seconds`, help: 'Query stages: first_stage (lexical and vector search), rerank, synthesis, settlement.', labelNames: ['stage'], buckets, registers });
  const charges = new Counter({ name: `${prefix}charges_total`, help: 'Answers whose payment stood, by payment kind (unlock, credits, onchain) and rail (none for a balance).', labelNames: ['kind', 'rail'], registers });
  const reversals = new Counter({ name: `${prefix}reversals_total`, help: 'Payments given back (no answer, a failure, a caller gone), by kind and rail.', labelNames: ['kind', 'rail'], registers });
  const revenueUsd = new Counter({ name: `${prefix}revenue_usd_total`, help: 'USD received on-chain for answers, by rail.', labelNames: ['kind', 'rail'], registers });
  const balanceSpent = new Counter({ name: `${prefix}balance_spent_total`, help: 'Account balance units charged for answers, by unit (unlocks, credits).', labelNames: ['kind', 'unit'], registers });
  const payments = new Counter({ name: `${prefix}onchain_payments_total`, help: 'On-chain payments by rail and state reached: challenged, verified, settled, refused, released, credited, reconciled.', labelNames: ['rail', 'state'], registers });
  const failures = new Counter({ name: `${prefix}dependency_failures_total`, help: 'Calls to an outside party that failed, timed out, or were skipped (its breaker open).', labelNames: ['dependency', 'kind'], registers });
  const fallbacks = new Counter({ name: `${prefix}fallbacks_total`, help: 'Answers given without an outside party: embedder (lexical only), synthesizer (extractive).', labelNames: ['dependency'], registers });
  const syncRuns = new Counter({ name: `${prefix}sync_runs_total`, help: 'Channel syncs, by channel kind and result (synced, unchanged, skipped, failed).', labelNames: ['kind', 'result'], registers });
  const syncItems = new Counter({ name: `${prefix}sync_items_total`, help: 'Items created, updated or removed by syncs, by channel kind.', labelNames: ['kind'], registers });
  const syncErrors = new Counter({ name: `${prefix}sync_errors_total`, help: 'Items that failed in syncs, and syncs that failed, by channel kind.', labelNames: ['kind'], registers });
  const rateLimited = new Counter({ name: `${prefix}rate_limited_total`, help: 'Requests refused with 429, by limit.', labelNames: ['limit'], registers });
  const indexChunks = new Gauge({ name: `${prefix}index_chunks`, help: 'Chunks in the lexical index when it loaded.', registers });
  const indexLoadSeconds = new Gauge({ name: `${prefix}index_load_seconds`, help: 'How long the lexical index took to load.', registers });
  const { sources = {} } = options;
  new Gauge({
    name: `${prefix}breaker_state`,
    help: 'Each outside party\'s breaker: 0 closed (called), 0.5 half open (probing), 1 open (skipped).',
    labelNames: ['dependency'],
    registers,
    collect() {
      if (!sources.breakers) return;
      for (const d of dependencies) this.set({ dependency: d }, breakerValue[sources.breakers[d].state()]);
    },
  });
  new Gauge({
    name: `${prefix}channel_last_sync_age_seconds`,
    help: 'Seconds since each syncing channel last synced well (channels never synced are left out).',
    labelNames: ['channel', 'kind'],
    registers,
    async collect() {
      this.reset();
      if (!sources.channels) return;
      const now = Date.now();
      // A scrape while the database is away shows no ages rather than failing whole.
      const channels = await sources.channels().catch(() => []);
      for (const c of channels) if (c.syncedAt !== null) this.set({ channel: c.id, kind: c.kind }, Math.max(0, (now - c.syncedAt) / 1000));
    },
  });
  return {
    httpRequest({ transport, method, route, status, seconds }) {
      requests.inc({ transport, method, route, status: String(status) });
      requestSeconds.observe({ transport, route }, seconds);
    },
    query({ transport, mode, outcome, confidence, seconds }) {
      queries.inc({ transport, mode, outcome, confidence });
      querySeconds.observe({ transport, outcome }, seconds);
    },
    stage: (stage, seconds) => stageSeconds.observe({ stage }, seconds),
    charge({ kind, rail, usd, units }) {
      charges.inc({ kind, rail });
      if (usd !== undefined) revenueUsd.inc({ kind, rail }, usd);
      if (units) balanceSpent.inc({ kind, unit: units.unit }, units.amount);
    },
    reversal: ({ kind, rail }) => reversals.inc({ kind, rail }),
    payment: (rail, state, count = 1) => count > 0 && payments.inc({ rail, state }, count),
    dependencyFailure: (dependency, kind) => failures.inc({ dependency, kind }),
    fallback: (dependency) => fallbacks.inc({ dependency }),
    sync({ kind, result, items, errors }) {
      syncRuns.inc({ kind, result });
      if (items > 0) syncItems.inc({ kind }, items);
      if (errors > 0) syncErrors.inc({ kind }, errors);
    },
    rateLimited: (limit) => rateLimited.inc({ limit }),
    indexLoaded({ chunks, seconds }) {
      indexChunks.set(chunks);
      indexLoadSeconds.set(seconds);
    },
    async render() {
      return { contentType: registry.contentType, body: await registry.metrics() };
    },
  };
}
