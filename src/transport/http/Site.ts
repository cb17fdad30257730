import fs from 'node:fs';
import path from 'node:path';
import express from 'express';
import { projectRoot } from '../../config/Config.js';
import type { Health } from '../../contract/Contract.js';
import * as Readiness from '../../health/Readiness.js';
import * as Home from '../../pages/Home.js';
import type { Services } from '../../Services.js';
import { notAllowed } from './Http.js';
import * as MetricsRoute from './MetricsRoute.js';
import * as OpenApi from './OpenApi.js';

/** What the service says about itself over HTTP: what it is, liveness, readiness, metrics, the OpenAPI document and SKILL.md. */
export function mount(app: express.Express, services: Services): void {
  // Its own address: a page for a browser, the same as JSON for anyone else.
  const home = Home.home();
  app.route('/').get((req, res) => {
    res.vary('Accept');
    if (req.accepts(['json', 'html']) === 'html') res.status(200).set(Home.htmlHeaders).type('html').send(Home.html(home));
    else res.json(home);
  }).all(notAllowed('GET'));

  app.route('/health').get(async (_req, res) => {
    const database = await services.store.ping().then(
      () => true,
      () => false,
    );
    const health: Health = { ok: database, service: 'profile-edge', environment: services.config.environment, dependencies: { database: { ok: database } } };
    res.json(health);
  }).all(notAllowed('GET'));

  // Readiness, for a load balancer: 503 while shutting down, before the index is loaded, or without the database.
  const readiness = Readiness.create(services);
  app.route('/ready').get(async (_req, res) => {
    const ready = await readiness.check();
    res.status(ready.ready ? 200 : 503).json(ready);
  }).all(notAllowed('GET'));

  // Off unless METRICS_TOKEN is set: then for its bearer only. METRICS_PORT alone serves it elsewhere, on loopback.
  const metricsToken = services.config.metrics.token;
  if (metricsToken !== undefined) app.route('/metrics').get(MetricsRoute.handler(services.metrics, metricsToken)).all(notAllowed('GET'));

  const openapi = OpenApi.document();
  app.route('/openapi.json').get((_req, res) => res.json(openapi)).all(notAllowed('GET'));

  app.route('/SKILL.md').get((_req, res) => {
    res.type('text/markdown; charset=utf-8').sendFile(path.join(projectRoot, 'SKILL.md'));
  }).all(notAllowed('GET'));
  const skillDir = path.join(projectRoot, 'skill');
  if (fs.existsSync(skillDir)) app.use('/skill', express.static(skillDir, { dotfiles: 'ignore', index: false, redirect: false, fallthrough: true }));
}
