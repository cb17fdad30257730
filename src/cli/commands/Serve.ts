import { lazy } from '../../errors/Lazy.js';
import fs from 'node:fs';
import { defaultDatabasePath } from '../../config/Config.js';
import type { Services } from '../../Services.js';
import type * as Caller from '../../auth/Caller.js';
import type * as HttpServer from '../../transport/http/Server.js';
import type { Keeper, Subject } from '../../retrieval/SnapshotKeeper.js';
import { type Command, UsageError, number, text, untilSignal } from '../Command.js';

const loadDemo = lazy('The demo dataset loader', () => import('../../demo/Demo.js'));
const loadReconciliation = lazy('Payment reconciliation', () => import('../../payments/Reconciliation.js'));
const loadJobs = lazy('The job leases', () => import('../../health/Jobs.js'));
const loadTermModel = lazy('The term model', () => import('../../retrieval/terms/TermModel.js'));
const loadAccess = lazy('Access control', () => import('../../auth/Access.js'));
const loadCaller = lazy('The caller check', () => import('../../auth/Caller.js'));
const loadScheduler = lazy('The sync scheduler', () => import('../../sources/Scheduler.js'));
const loadHttpServer = lazy('The HTTP server', () => import('../../transport/http/Server.js'));
const loadStdio = lazy('The stdio MCP server', () => import('../../transport/mcp/Stdio.js'));
const loadMetricsRoute = lazy('The metrics server', () => import('../../transport/http/MetricsRoute.js'));
const loadServices = lazy('The service layer', () => import('../../Services.js'));
const loadSnapshotKeeper = lazy('The snapshot keeper', () => import('../../retrieval/SnapshotKeeper.js'));
const loadSnapshotStore = lazy('The search index snapshot', () => import('../../retrieval/index/SnapshotStore.js'));

/**
 * A database URL as a terminal may show it: a password, if it has one (`user:password@`, or `?password=` and
 * `sslpassword=` as node-postgres also reads them), stands as <password>.
 */
export function withoutPassword(url: string): string {
  const parsed = new URL(url);
  if (parsed.password) parsed.password = '<password>';
  for (const name of ['password', 'sslpassword']) if (parsed.searchParams.has(name)) parsed.searchParams.set(name, '<password>');
  return parsed.href.replaceAll('%3Cpassword%3E', '<password>');
}

/** What an operator needs first: where the data is, where to point clients, and how to get a key with a balance. */
function banner(input: { url: string; host: string; databasePath: string | undefined; databaseUrl: string | undefined; database: string; metrics: string[] }): string[] {
  const { databasePath } = input;
  // Listening on every interface: show the address this machine itself can use.
  const everywhere = input.host === '0.0.0.0' || input.host === '::';
  const url = everywhere ? input.url.replace(/\/\/[^/]+:/, '//127.0.0.1:') : input.url;
  // The key command must reach the same database: DATABASE_URL is in the environment already when it is used.
  const env =
    input.databaseUrl !== undefined
      ? `DATABASE_URL=${JSON.stringify(withoutPassword(input.databaseUrl))} `
      : databasePath === undefined || databasePath === defaultDatabasePath
        ? ''
        : `DATABASE_PATH=${JSON.stringify(databasePath)} `;
  return [
    `profile-edge listening on ${url}${everywhere ? ` (all interfaces, ${input.host})` : ''}`,
    `  database  ${databasePath ?? input.database}`,
    `  REST      ${url}/api/profiles  (OpenAPI ${url}/openapi.json)`,
    `  MCP       ${url}/mcp  (one profile: ${url}/<slug>/mcp; stdio: npx profile-edge mcp)`,
    `  agents    ${url}/SKILL.md`,
    ...input.metrics.map((where) => `  metrics   ${where}`),
    `  API key with 1000 credits, in another terminal in the project directory:`,
    `            ${env}npx profile-edge keys create --account my-agent --create --credits 1000`,
  ];
}


/** Above this many public chunks a sync in `serve` only folds new content into the term model (a rebuild blocks). */
const serveRebuildLimit = 2_000;

/**
 * Keeps the term model current without stalling requests: new public content is folded in (in proportion to it), a
 * rebuild runs only within `rebuildLimit` public chunks, and a due rebuild the server will not run is logged once.
 */
function termModelRefresher(services: Services): (rebuildLimit: number) => Promise<void> {
  let reported: string | undefined;
  return async (rebuildLimit) => {
    try {
      const [Jobs, TermModel] = await Promise.all([loadJobs(), loadTermModel()]);
      // One instance at a time, and a server never waits for another's: what it leaves out, the next refresh folds in.
      const refreshed = await Jobs.oneAtATime(services.store, 'term_model', () => TermModel.refresh(services.store, { rebuildLimit }), { skipIfHeld: true });
      if (!refreshed) return services.logger.info('term model: another process is refreshing it; left to that one');
      const { action, rebuildDue } = refreshed;
      if (action !== 'unchanged') services.logger.info(`term model ${action}`);
      if (rebuildDue !== undefined && rebuildDue !== reported) {
        services.logger.warn('term model: a rebuild is due; run `profile-edge reindex` (or `profile-edge sync`)', { reason: rebuildDue });
      }
      reported = rebuildDue;
    } catch (error) {
      // A busy database waits for the next sync; the server answers with the model it has.
      services.logger.error('term model refresh failed', { error });
    }
  };
}

export const serve: Command = {
  name: 'serve',
  summary: 'Serve the HTTP API and MCP over HTTP (loads the demo dataset on first start).',
  usage: 'serve [--host HOST] [--port PORT]',
  options: { host: { type: 'string' }, port: { type: 'string' } },
  async run({ config, services: open, out }, { values }) {
    const port = number(values, 'port', { min: 0, max: 65535, integer: true }) ?? config.port;
    const host = (text(values, 'host') ?? config.host).replace(/^\[(.*)\]$/, '$1');
    const [services, Reconciliation, TermModel, HttpServer, Scheduler, { syncDependencies }] = await Promise.all([
      open(),
      loadReconciliation(),
      loadTermModel(),
      loadHttpServer(),
      loadScheduler(),
      loadServices(),
    ]);
    // Registered first: what this process charges from here on is its own, and processes that are gone are settled.
    await services.instance.start();
    await Reconciliation.reconcile(services);
    if (config.demoData) {
      const Demo = await loadDemo();
      const loaded = await Demo.loadOnFirstStart(services, { chunkTargetTokens: config.chunkTargetTokens });
      if (loaded) services.logger.info('demo dataset loaded', { profiles: loaded.profiles, items: loaded.items, chunks: loaded.chunks });
    }
    // A small store gets its term model (re)built now; a large one folds in what is new and waits for a rebuild.
    const refreshTermModel = termModelRefresher(services);
    await refreshTermModel(TermModel.automaticLimit);
    // The search index and the vector codes (when vectors are on) load before the first question rather than during it
    // (seconds per million chunks); then the snapshot of each that instances start from is made again if it is missing
    // or behind.
    const [SnapshotKeeper, SnapshotStore] = await Promise.all([loadSnapshotKeeper(), loadSnapshotStore()]);
    const keep = (subject: Subject) => SnapshotKeeper.start({ store: services.store, subject, logger: services.logger, minChunks: config.searchSnapshotMinChunks });
    const keepers = { search: keep(SnapshotStore.subject(services.store, services.loadedIndex)), vectors: services.vectors && keep(services.vectors.snapshot) };
    const check = (keeper: Keeper | undefined) => void (keeper && services.pending.track(keeper.check()));
    void services.lexicalIndex().then(
      () => check(keepers.search),
      (error: unknown) => services.logger.error('search index failed to load; the first question tries again', { error }),
    );
    void services.vectors?.warm().then(() => check(keepers.vectors));
    const { server, url } = await HttpServer.listen(services, { host, port }).catch((error: NodeJS.ErrnoException) => {
      if (['EADDRINUSE', 'EACCES', 'EADDRNOTAVAIL', 'ENOTFOUND', 'EAI_AGAIN'].includes(error.code ?? '')) {
        throw new UsageError(`cannot listen on ${host}:${port}: ${error.code === 'EADDRINUSE' ? 'the port is in use (set PORT or --port)' : error.message}`);
      }
      throw error;
    });
    services.logger.info('listening', { url, database: config.databasePath ?? services.store.describe(), environment: config.environment });
    // Metrics on a port of their own, on loopback only: for a scraper beside the server.
    const metricsServer = config.metrics.port === undefined
      ? undefined
      : await (await loadMetricsRoute()).listen(services.metrics, { port: config.metrics.port, allowed: config.allowed }).catch(async (error: NodeJS.ErrnoException) => {
          // Nothing is left half-started: the main port closes before the command fails.
          await HttpServer.close(server);
          throw new UsageError(`cannot serve metrics on 127.0.0.1:${config.metrics.port}: ${error.code === 'EADDRINUSE' ? 'the port is in use (choose another METRICS_PORT)' : error.message}`);
        });
    if (metricsServer) services.logger.info('metrics served', { url: metricsServer.url });
    const databaseUrl = config.database.engine === 'postgres' ? config.database.url : undefined;
    const metrics = [
      ...(config.metrics.token !== undefined ? [`${url}/metrics  (Authorization: Bearer $METRICS_TOKEN)`] : []),
      ...(metricsServer ? [metricsServer.url] : []),
    ];
    for (const line of banner({ url, host, databasePath: config.databasePath, databaseUrl, database: services.store.describe(), metrics })) out.line(line);
    const scheduler = config.sync.schedule
      ? Scheduler.start(syncDependencies(services), {
          intervalMinutes: config.sync.intervalMinutes,
          // Rebuilding blocks requests for its duration: only small stores get it here; others fold in what is new.
          // Tracked, so a shutdown waits for it rather than leave its lease behind.
          onReport: (r) => void (r.created + r.updated + r.removed > 0 && services.pending.track(refreshTermModel(serveRebuildLimit).then(() => (check(keepers.search), check(keepers.vectors))))),
        })
      : undefined;
    // A server restarted within minutes of a crash reconciles later, while it runs; so are its own lost settlements.
    const stopReconciling = Reconciliation.periodically(services, config.reconcileIntervalSeconds * 1000);
    const signal = await untilSignal();
    stopReconciling();
    keepers.search.stop();
    keepers.vectors?.stop();
    await drain(services, server, signal);
    if (metricsServer) await HttpServer.close(metricsServer.server);
    await scheduler?.stop();
  },
};

/** How long a shutdown waits for what it took before cutting it off, and then for the cut-off calls to give back. */
const drainMs = 25_000;
const afterCutOffMs = 4_000;

/**
 * A deploy's stop: `/ready` answers 503 at once, no new connection is taken, and the requests in flight finish, paid
 * ones with their payments captured or released. Whatever still runs after `drainMs` is cut off (its caller is gone,
 * so what it charged is given back), and the process exits within 30 s of the signal, leaving its lease.
 */
async function drain(services: Services, server: Parameters<typeof HttpServer.close>[0], signal: string): Promise<void> {
  const HttpServer = await loadHttpServer();
  services.draining = true;
  services.logger.info('shutting down: unready, taking no new requests, finishing those in flight', { signal });
  const started = Date.now();
  const settled = (async () => {
    await HttpServer.close(server);
    await services.pending.idle();
  })();
  const within = (ms: number) => Promise.race([settled.then(() => true), new Promise<false>((resolve) => setTimeout(() => resolve(false), ms).unref())]);
  if (!(await within(drainMs))) {
    services.logger.warn('shutting down: requests still running are cut off', { afterSeconds: drainMs / 1000 });
    server.closeAllConnections();
    if (!(await within(afterCutOffMs))) services.logger.error('shutting down: payments still settling are left to reconciliation by another instance');
  }
  services.logger.info('shut down', { ms: Date.now() - started });
}

async function readable(services: Services, slug: string, caller: Caller.Caller): Promise<boolean> {
  const Access = await loadAccess();
  const profile = await services.store.profiles.byHandle(slug);
  return profile !== undefined && (await Access.canRead(services.store, profile, caller));
}

export const mcp: Command = {
  name: 'mcp',
  summary: 'Serve MCP over stdio for a local host (Claude Desktop, editors, agents).',
  usage: 'mcp [--profile SLUG]   (credentials: PROFILE_EDGE_API_KEY, PROFILE_EDGE_BEARER_TOKEN)',
  options: { profile: { type: 'string' } },
  async run({ config, services: open, out }, { values }) {
    // A mistyped DATABASE_PATH would otherwise create an empty database and serve nothing.
    if (config.databasePath !== undefined && config.databasePath !== ':memory:' && !fs.existsSync(config.databasePath)) {
      throw new UsageError(`no database at ${config.databasePath}: set DATABASE_PATH to the one \`profile-edge serve\` uses (it creates and loads it on first start)`);
    }
    const [services, Reconciliation, Caller, Stdio] = await Promise.all([open(), loadReconciliation(), loadCaller(), loadStdio()]);
    // Registered first: what this process charges from here on is its own, and processes that are gone are settled.
    await services.instance.start();
    await Reconciliation.reconcile(services);
    const slug = text(values, 'profile');
    // A bad key or token does not stop the server: the host connects, and each tool call that needs it says what is
    // wrong, as over HTTP. The operator sees it here too.
    const { caller, problem } = await Caller.inspect(services.store, Stdio.presentedBy(services));
    if (problem) out.warn(`${problem.message} Tool calls will report it.`);
    // A private profile these credentials cannot read is refused exactly like an unknown one.
    if (slug !== undefined && !(await readable(services, slug, caller))) throw new UsageError(`no profile "${slug}"${problem ? `. Also: ${problem.message}` : ''}`);
    // A host keeps a stdio server for as long as it runs: it reconciles as `serve` does.
    const stopReconciling = Reconciliation.periodically(services, config.reconcileIntervalSeconds * 1000);
    try {
      await Stdio.serve(services, slug === undefined ? { kind: 'global' } : { kind: 'profile', slug });
    } finally {
      stopReconciling();
    }
  },
};
