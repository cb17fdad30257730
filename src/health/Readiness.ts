import type { Readiness } from '../contract/Contract.js';
import type { Rail } from '../contract/Quote.js';

/** What readiness looks at: the process's draining flag, its database, its search index and its rails. */
export type Watched = {
  readonly draining: boolean;
  store: { ping(): Promise<void> };
  indexLoaded(): boolean;
  indexLoading(): { source: 'snapshot' | 'rows'; done: number; total: number } | undefined;
  lexicalIndex(): Promise<{ size(): { chunks: number } }>;
  rails: { get(rail: Rail): Promise<{ probe(): Promise<void> } | undefined>; configured(): Rail[] };
};

/** How long a rail's answer is reused: a load balancer asks every few seconds, and chains need not hear of each. */
const railCheckMs = 10_000;
/** How long a rail may take to answer before it counts as down. */
const railTimeoutMs = 2_000;

/**
 * Whether this instance should be sent requests: it is not shutting down, its database answers and its search index
 * is loaded (a question would otherwise wait seconds for it). Each configured rail is asked whether its chain (and
 * facilitator) answers, at most every 10 s, and reported without gating readiness.
 */
export function create(services: Watched): { check(): Promise<Readiness> } {
  const rails = new Map<string, { at: number; check: Promise<Readiness['checks']['rails'][string]> }>();
  const railCheck = (name: Rail) => {
    const cached = rails.get(name);
    if (cached && Date.now() - cached.at < railCheckMs) return cached.check;
    const check = (async () => {
      const rail = await services.rails.get(name);
      if (!rail) return { ok: false, detail: 'not configured' };
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${railTimeoutMs / 1000} s`)), railTimeoutMs)));
      try {
        await Promise.race([rail.probe(), late]);
        return { ok: true };
      } catch (error) {
        return { ok: false, detail: error instanceof Error ? error.message : String(error) };
      } finally {
        clearTimeout(timer);
      }
    })();
    rails.set(name, { at: Date.now(), check });
    return check;
  };
  return {
    async check() {
      const configured = services.rails.configured();
      const [database, railChecks] = await Promise.all([
        services.store.ping().then(
          () => true,
          () => false,
        ),
        Promise.all(configured.map(railCheck)),
      ]);
      const loaded = services.indexLoaded();
      const chunks = loaded ? (await services.lexicalIndex()).size().chunks : undefined;
      const loading = loaded ? undefined : services.indexLoading();
      return {
        ready: !services.draining && database && loaded,
        draining: services.draining,
        checks: {
          database: { ok: database },
          index: {
            ok: loaded,
            ...(chunks !== undefined && { chunks }),
            ...(loading && { loading: { ...loading, percent: loading.total > 0 ? Math.floor((1000 * loading.done) / loading.total) / 10 : 0 } }),
          },
          rails: Object.fromEntries(configured.map((name, i) => [name, railChecks[i]!])),
        },
      };
    },
  };
}
