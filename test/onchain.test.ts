import crypto from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { decodePaymentRequiredHeader, decodePaymentSignatureHeader, encodePaymentSignatureHeader } from '@x402/core/http';
import { Challenge, Credential } from 'mppx';
import { Mppx as MppxClient, tempo as tempoClient } from 'mppx/client';
import { McpClient } from 'mppx/mcp/client';
import { createPublicClient, createWalletClient, defineChain, http as viemHttp, parseAbi } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import { pathToFileURL } from 'node:url';
import { wrapFetchWithPayment, x402Client } from '@x402/fetch';
import { projectRoot } from '../src/config/Config.js';
import path from 'node:path';
import { beforeAll, describe, expect, test, vi } from 'vitest';
import { credentialFor, tempoFetch, tempoGetClient, useChains, x402Fetch, x402Payer } from './support/Chains.js';
import { cli } from './support/Transports.js';
import * as SearchTerms from '../src/retrieval/index/SearchTerms.js';
import * as OnchainPayment from '../src/payments/OnchainPayment.js';
import * as Credentials from '../src/payments/Credentials.js';
import * as Tools from '../tools/Tools.js';
import * as Environment from './support/Environment.js';
import * as Proxy from './support/Proxy.js';

const served = useChains();
const question = 'How warm should a sourdough starter be?';

/** A response body, as the JSON the test probes. */
const json = (r: Response): Promise<any> => r.json();

const post = (f: typeof fetch, path: string, body: unknown, headers: Record<string, string> = {}) =>
  f(`${served.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

describe('on-chain payment over REST', () => {
  test('tempo: the mppx client pays; the answer comes with a receipt; the payer pays once', async () => {
    const { sandbox } = served;
    const before = await sandbox.balance('tempo');
    const unpaid = await post(fetch, '/api/ask/query', { question, rail: 'tempo' });
    expect(unpaid.status).toBe(402);
    expect(unpaid.headers.get('www-authenticate')).toMatch(/^Payment /);
    const res = await post(tempoFetch(sandbox, sandbox.payer.key), '/api/ask/query', { question, rail: 'tempo' });
    const body = await json(res);
    expect(res.status, JSON.stringify(body)).toBe(200);
    expect(body).toMatchObject({ charge: 'onchain', rail: 'tempo' });
    expect(res.headers.get('payment-receipt')).toBeTruthy();
    expect(before - (await sandbox.balance('tempo'))).toBe(50_000n);
  });

  test('x402_base: @x402/fetch pays; the answer comes with a receipt; the payer pays once', async () => {
    const { sandbox } = served;
    const before = await sandbox.balance('x402_base');
    const unpaid = await post(fetch, '/api/ask/query', { question, rail: 'x402_base' });
    expect(unpaid.status).toBe(402);
    expect(unpaid.headers.get('payment-required')).toBeTruthy();
    const res = await post(x402Fetch(sandbox, sandbox.payer.key), '/api/ask/query', { question, rail: 'x402_base' });
    const body = await json(res);
    expect(res.status, JSON.stringify(body)).toBe(200);
    expect(body).toMatchObject({ charge: 'onchain', rail: 'x402_base' });
    expect(res.headers.get('payment-response')).toBeTruthy();
    expect(before - (await sandbox.balance('x402_base'))).toBe(50_000n);
  });
});

/** The SDK's MCP client over Streamable HTTP, wrapped by mppx so it pays -32042 challenges with a tempo wallet. */
async function payingMcpClient(path: string, key: `0x${string}`) {
  const client = new Client({ name: 'wallet-agent', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${served.url}${path}`)));
  return { client, paying: McpClient.wrap(client, { methods: [tempoClient.charge({ account: privateKeyToAccount(key), getClient: tempoGetClient(served.sandbox) })] }) };
}

describe('on-chain payment over MCP', () => {
  test('tempo over HTTP: an unpaid tools/call is JSON-RPC -32042 with data.challenges', async () => {
    const client = new Client({ name: 'plain-host', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${served.url}/mcp`)));
    const error = await client.callTool({ name: 'profile_query', arguments: { question, rail: 'tempo' } }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: -32042, data: { error: 'payment_required', challenges: [expect.objectContaining({ method: 'tempo', intent: 'charge' })] } });
    await client.close();
  });

  for (const path of ['/mcp', '/mara-lindqvist/mcp']) {
    test(`tempo over HTTP (${path}): mppx's MCP client pays, and the result carries the receipt in _meta`, async () => {
      const { sandbox } = served;
      const before = await sandbox.balance('tempo');
      const { client, paying } = await payingMcpClient(path, sandbox.payer.key);
      const result = (await paying.callTool({ name: 'profile_query', arguments: { question, rail: 'tempo' } })) as any;
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toMatchObject({ charge: 'onchain', rail: 'tempo' });
      expect(result._meta['org.paymentauth/receipt']).toMatchObject({ method: 'tempo', status: 'success' });
      expect(result.receipt.reference).toBe(result.structuredContent.txHash);
      expect(before - (await sandbox.balance('tempo'))).toBe(50_000n);
      await client.close();
    });
  }

  test('x402_base over HTTP: the challenge in data.challenges is paid with the x402 client, the credential sent in _meta', async () => {
    const { sandbox } = served;
    const before = await sandbox.balance('x402_base');
    const client = new Client({ name: 'x402-agent', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${served.url}/mcp`)));
    const args = { question, rail: 'x402_base' };
    const error = (await client.callTool({ name: 'profile_query', arguments: args }).catch((e: unknown) => e)) as any;
    expect(error.code).toBe(-32042);
    const payload = await x402Payer(sandbox, sandbox.payer.key).createPaymentPayload(error.data.challenges[0]);
    const result = (await client.callTool({ name: 'profile_query', arguments: args, _meta: { 'org.paymentauth/credential': payload } })) as any;
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ charge: 'onchain', rail: 'x402_base' });
    expect(result._meta['org.paymentauth/receipt']).toMatchObject({ success: true, transaction: result.structuredContent.txHash });
    expect(before - (await sandbox.balance('x402_base'))).toBe(50_000n);
    await client.close();
  });

  test('a direct method call unpaid is -32042; paid through params._meta it returns the payload with the receipt', async () => {
    const { sandbox } = served;
    const call = (params: Record<string, unknown>) =>
      fetch(`${served.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'profile_query', params }) }).then((r) => r.json() as Promise<any>);
    const unpaid = await call({ question, rail: 'tempo' });
    expect(unpaid.error).toMatchObject({ code: -32042, data: { challenges: [expect.objectContaining({ method: 'tempo' })] } });
    const payer = MppxClient.create({ methods: [tempoClient.charge({ account: privateKeyToAccount(sandbox.payer.key), getClient: tempoGetClient(sandbox) })], polyfill: false });
    const credential = Credential.deserialize(await payer.createCredential(new Response(null, { status: 402, headers: { 'WWW-Authenticate': Challenge.serialize(unpaid.error.data.challenges[0]) } })));
    const paid = await call({ question, rail: 'tempo', _meta: { 'org.paymentauth/credential': credential } });
    expect(paid.result).toMatchObject({ charge: 'onchain', rail: 'tempo', _meta: { 'org.paymentauth/receipt': { status: 'success' } } });
  });

  test('stdio: mppx pays a tools/call through the local server', async () => {
    const { sandbox, environment } = served;
    const before = await sandbox.balance('tempo');
    const client = new Client({ name: 'stdio-wallet', version: '1.0.0' });
    await client.connect(new StdioClientTransport({ command: cli.command, args: [...cli.args, 'mcp'], env: { PATH: process.env.PATH ?? '', ...environment.env }, cwd: environment.directory, stderr: 'pipe' }));
    const paying = McpClient.wrap(client, { methods: [tempoClient.charge({ account: privateKeyToAccount(sandbox.payer.key), getClient: tempoGetClient(sandbox) })] });
    const result = (await paying.callTool({ name: 'profile_query', arguments: { question, rail: 'tempo' } })) as any;
    expect(result.structuredContent).toMatchObject({ charge: 'onchain', rail: 'tempo' });
    expect(result._meta['org.paymentauth/receipt']).toMatchObject({ status: 'success' });
    expect(before - (await sandbox.balance('tempo'))).toBe(50_000n);
    await client.close();
  });
});

describe.each(['tempo', 'x402_base'] as const)('%s credentials are single-use, bound and checked', (rail) => {
  const ask = (body: Record<string, unknown>, headers: Record<string, string> = {}) => post(fetch, '/api/ask/query', body, headers);
  const paid = async (body: Record<string, unknown>, key = served.sandbox.payer.key) => credentialFor(served.sandbox, rail, await ask(body), key);

  test('behavior: a replay gets a fresh 402, never a second answer; the payer pays once', async () => {
    const { sandbox } = served;
    const before = await sandbox.balance(rail);
    const headers = await paid({ question, rail });
    expect((await ask({ question, rail }, headers)).status).toBe(200);
    const replay = await ask({ question, rail }, headers);
    expect(replay.status).toBe(402);
    expect((await json(replay)).message).toMatch(/already used|refused/);
    expect(before - (await sandbox.balance(rail))).toBe(50_000n);
  });

  test('behavior: a replay is refused by the spent-credential record, in the same words on every rail, before any facilitator round trip', async () => {
    const { sandbox } = served;
    const headers = await paid({ question, rail });
    expect((await ask({ question, rail }, headers)).status).toBe(200);
    const verifications = sandbox.facilitator.verifications();
    const replay = await ask({ question, rail }, headers);
    expect(replay.status).toBe(402);
    expect((await json(replay)).message).toMatch(/^The payment credential was refused: it was already used: each pays for one answer\. Payment of 0\.05 USD/);
    expect(sandbox.facilitator.verifications()).toBe(verifications);
  });

  test('behavior: a spent credential presented for another question is refused as spent, in the same words on every rail', async () => {
    const { sandbox } = served;
    const headers = await paid({ question, rail });
    expect((await ask({ question, rail }, headers)).status).toBe(200);
    const verifications = sandbox.facilitator.verifications();
    const elsewhere = await ask({ question: `${question} In winter?`, rail }, headers);
    expect(elsewhere.status).toBe(402);
    expect((await json(elsewhere)).message).toMatch(/^The payment credential was refused: it was already used: each pays for one answer\./);
    expect(sandbox.facilitator.verifications()).toBe(verifications);
  });

  test('behavior: one credential on 20 parallel requests gets one answer and one settlement', async () => {
    const { sandbox } = served;
    const before = await sandbox.balance(rail);
    const headers = await paid({ question, rail });
    const verifications = sandbox.facilitator.verifications();
    const statuses = await Promise.all(Array.from({ length: 20 }, () => ask({ question, rail }, headers).then((r) => r.status)));
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 402)).toHaveLength(19);
    expect(before - (await sandbox.balance(rail))).toBe(50_000n);
    // The copies were turned away by the service itself: the facilitator was asked about the credential once.
    if (rail === 'x402_base') expect(sandbox.facilitator.verifications() - verifications).toBe(1);
  });

  test('behavior: a credential for another question, scope or mode is refused with a fresh challenge and nothing moves', async () => {
    const { sandbox } = served;
    const before = await sandbox.balance(rail);
    const headers = await paid({ question, rail });
    for (const other of [{ question: 'What flour should I feed a starter?', rail }, { question, rail, mode: 'raw' }, { question, rail, scope: { kind: 'profile', slug: 'mara-lindqvist' } }]) {
      const res = await ask(other, headers);
      expect(res.status).toBe(402);
      expect(res.headers.get(rail === 'tempo' ? 'www-authenticate' : 'payment-required')).toBeTruthy();
      expect((await json(res)).message).toMatch(/refused/);
    }
    expect(await sandbox.balance(rail)).toBe(before);
  });

  test('behavior: a tampered credential is refused and nothing moves', async () => {
    const { sandbox } = served;
    const before = await sandbox.balance(rail);
    const headers = await paid({ question, rail });
    const [name, value] = Object.entries(headers)[0]!;
    // Change the price the payer agreed to inside the echoed challenge: the server's binding no longer holds.
    const tampered =
      rail === 'tempo'
        ? (() => {
            const credential = Credential.deserialize(value);
            return Credential.serialize({ ...credential, challenge: { ...credential.challenge, request: { ...credential.challenge.request, amount: '1' } } });
          })()
        : (() => {
            const payload = JSON.parse(Buffer.from(value, 'base64').toString('utf8'));
            payload.accepted.amount = '1';
            return Buffer.from(JSON.stringify(payload)).toString('base64');
          })();
    const res = await ask({ question, rail }, { [name]: tampered });
    expect(res.status).toBe(402);
    expect((await json(res)).message).toMatch(/refused/);
    expect(await sandbox.balance(rail)).toBe(before);
  });

  test('behavior: an expired challenge is refused and nothing moves', async () => {
    const { sandbox } = served;
    const before = await sandbox.balance(rail);
    const headers = await paid({ question, rail });
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 60 * 60_000 });
    try {
      const res = await ask({ question, rail }, headers);
      expect(res.status).toBe(402);
      expect((await json(res)).message).toMatch(/expired|refused/);
    } finally {
      vi.useRealTimers();
    }
    expect(await sandbox.balance(rail)).toBe(before);
  });

  test('behavior: with an API key, a valid credential is ignored and the balance pays', async () => {
    const { sandbox, environment } = served;
    const before = await sandbox.balance(rail);
    const headers = await paid({ question, rail });
    const res = await ask({ question, rail, paymentMode: 'credits' }, { ...headers, 'service-api-key': environment.keys.callerKey });
    expect(res.status).toBe(200);
    expect(await json(res)).toMatchObject({ charge: 'credits' });
    expect(await sandbox.balance(rail)).toBe(before);
  });
});

describe('a credential someone else saw before it was spent', () => {
  const victimQuestion = question;
  const thiefPath = '/api/profiles/mara-lindqvist/query';
  const thiefBody = { question: 'What flour should I feed a starter?', rail: 'x402_base' };
  /** The victim's x402 payment, moved onto the thief's own challenge: the same authorization and signature. */
  const rebound = (victim: Record<string, string>, thiefChallenge: Response): Record<string, string> => {
    const payload = decodePaymentSignatureHeader(victim['PAYMENT-SIGNATURE']!);
    const required = decodePaymentRequiredHeader(thiefChallenge.headers.get('payment-required')!);
    return { 'PAYMENT-SIGNATURE': encodePaymentSignatureHeader({ ...payload, accepted: required.accepts[0]!, resource: required.resource }) };
  };

  test('behavior: an x402 authorization signed on its challenge\'s nonce and moved onto another challenge is refused, and its payer is still answered with it', async () => {
    const { sandbox } = served;
    const victim = await sandbox.newPayer();
    const thief = await sandbox.newPayer();
    const body = { question: victimQuestion, rail: 'x402_base' };
    const signed = await credentialFor(sandbox, 'x402_base', await post(fetch, '/api/ask/query', body), victim.key, undefined, 'bound');
    // The thief sends it first, on another profile and question at the same price.
    const stolen = await post(fetch, thiefPath, thiefBody, rebound(signed, await post(fetch, thiefPath, thiefBody)));
    expect(stolen.status).toBe(402);
    expect((await json(stolen)).message).toMatch(/nonce was issued for another challenge/);
    expect(await sandbox.balance('x402_base', victim.address)).toBe(10_000_000n);
    const own = await post(fetch, '/api/ask/query', body, signed);
    expect(own.status).toBe(200);
    expect(await sandbox.balance('x402_base', victim.address)).toBe(10_000_000n - 50_000n);
    expect(await sandbox.balance('x402_base', thief.address)).toBe(10_000_000n);
  });

  test('behavior: a tempo credential moved onto another challenge is refused (its transfer memo names its own), and its payer is still answered', async () => {
    const { sandbox } = served;
    const victim = await sandbox.newPayer();
    const body = { question: victimQuestion, rail: 'tempo' };
    const { authorization } = await credentialFor(sandbox, 'tempo', await post(fetch, '/api/ask/query', body), victim.key);
    const thiefTempo = { ...thiefBody, rail: 'tempo' };
    const thiefChallenge = Challenge.deserialize((await post(fetch, thiefPath, thiefTempo)).headers.get('www-authenticate')!);
    const moved = Credential.serialize({ ...Credential.deserialize(authorization!), challenge: thiefChallenge });
    const stolen = await post(fetch, thiefPath, thiefTempo, { authorization: moved });
    expect(stolen.status).toBe(402);
    expect(await sandbox.balance('tempo', victim.address)).toBe(10_000_000n);
    expect((await post(fetch, '/api/ask/query', body, { authorization: authorization! })).status).toBe(200);
    expect(await sandbox.balance('tempo', victim.address)).toBe(10_000_000n - 50_000n);
  });

  test('behavior: the hash of a transfer this server broadcast, presented as a pushed payment, buys nothing and is not credited', async () => {
    const { sandbox } = served;
    const payer = await sandbox.newPayer();
    const body = { question: victimQuestion, rail: 'tempo' };
    const paid = await json(await post(fetch, '/api/ask/query', body, await credentialFor(sandbox, 'tempo', await post(fetch, '/api/ask/query', body), payer.key)));
    expect(paid.txHash).toMatch(/^0x[0-9a-f]{64}$/);
    // The same transfer, sent again as a hash credential for a fresh challenge (its memo names the first one).
    const fresh = Challenge.deserialize((await post(fetch, '/api/ask/query', body)).headers.get('www-authenticate')!);
    const again = Credential.serialize({ challenge: fresh, payload: { type: 'hash', hash: paid.txHash }, source: `did:pkh:eip155:${sandbox.tempo.chainId}:${payer.address}` });
    const refused = await post(fetch, '/api/ask/query', body, { authorization: again });
    expect(refused.status).toBe(402);
    expect((await json(refused)).message).toMatch(/already used/);
    expect(await served.environment.services.store.payments.openCredit('tempo', payer.address)).toBeUndefined();
    // Its next signed payment pays: no credit stood in for it.
    const next = await post(fetch, '/api/ask/query', body, await credentialFor(sandbox, 'tempo', await post(fetch, '/api/ask/query', body), payer.key));
    expect((await json(next)).txHash).toMatch(/^0x[0-9a-f]{64}$/);
    expect(await sandbox.balance('tempo', payer.address)).toBe(10_000_000n - 2n * 50_000n);
  });

  test('behavior: by default a stock payer\'s own nonce is taken, bound to the first challenge it came with, refusals included', async () => {
    const { sandbox } = served;
    const send = (path: string, body: Record<string, unknown>, headers: Record<string, string> = {}) => post(fetch, path, body, headers);
    const victim = await sandbox.newPayer();
    const body = { question: victimQuestion, rail: 'x402_base' };

    // First seen with an expired challenge: refused, and bound to it all the same.
    const late = await credentialFor(sandbox, 'x402_base', await send('/api/ask/query', body), victim.key, undefined, 'stock');
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 60 * 60_000 });
    try {
      expect((await json(await send('/api/ask/query', body, late))).message).toMatch(/expired/);
    } finally {
      vi.useRealTimers();
    }
    const stolen = await send(thiefPath, thiefBody, rebound(late, await send(thiefPath, thiefBody)));
    expect(stolen.status).toBe(402);
    expect((await json(stolen)).message).toMatch(/first presented with another challenge/);

    // A nonce some challenge announced stays that challenge's, whoever sends it first.
    const bound = await credentialFor(sandbox, 'x402_base', await send('/api/ask/query', body), victim.key, undefined, 'bound');
    expect((await send(thiefPath, thiefBody, rebound(bound, await send(thiefPath, thiefBody)))).status).toBe(402);
    expect((await send('/api/ask/query', body, bound)).status).toBe(200);

    // A stock credential seen first with its own challenge is answered, and binds to it.
    const fresh = await credentialFor(sandbox, 'x402_base', await send('/api/ask/query', body), victim.key, undefined, 'stock');
    expect((await send('/api/ask/query', body, fresh)).status).toBe(200);
    expect((await send(thiefPath, thiefBody, rebound(fresh, await send(thiefPath, thiefBody)))).status).toBe(402);
    expect(await sandbox.balance('x402_base', victim.address)).toBe(10_000_000n - 2n * 50_000n);
  });

  test('behavior: with X402_NONCE_BINDING=required a stock payer is refused, told what to sign, and the bound scheme pays', async () => {
    const { sandbox } = served;
    const environment = await Environment.create({ ...sandbox.environment, X402_NONCE_BINDING: 'required' });
    const server = await Environment.serve(environment);
    const send = (path: string, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
      fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
    try {
      const payer = await sandbox.newPayer();
      const body = { question: victimQuestion, rail: 'x402_base' };
      const stock = await credentialFor(sandbox, 'x402_base', await send('/api/ask/query', body), payer.key, undefined, 'stock');
      const refused = await send('/api/ask/query', body, stock);
      expect(refused.status).toBe(402);
      expect((await json(refused)).message).toMatch(/accepted\.extra\.nonce/);
      expect(await sandbox.balance('x402_base', payer.address)).toBe(10_000_000n);
      const bound = await credentialFor(sandbox, 'x402_base', await send('/api/ask/query', body), payer.key, undefined, 'bound');
      expect((await send('/api/ask/query', body, bound)).status).toBe(200);
      expect(await sandbox.balance('x402_base', payer.address)).toBe(10_000_000n - 50_000n);
    } finally {
      await server.close();
      await environment.close();
    }
  });
});

describe('SKILL.md', () => {
  test('behavior: the x402 scheme SKILL.md shows pays through @x402/fetch as written', async () => {
    const { sandbox } = served;
    const block = /```js\n([\s\S]*?)```/.exec(fs.readFileSync(path.join(projectRoot, 'SKILL.md'), 'utf8'))![1]!;
    const code = block.split('\n').map((line) => line.replace(/^ {4}/, '')).join('\n');
    // Written beside a node_modules that resolves as the project's, and imported as an agent would.
    const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'profile-edge-skill-'));
    fs.symlinkSync(path.join(projectRoot, 'node_modules'), path.join(directory, 'node_modules'));
    fs.writeFileSync(path.join(directory, 'bound.mjs'), code);
    try {
      const { boundExact } = (await import(pathToFileURL(path.join(directory, 'bound.mjs')).href)) as { boundExact: (account: unknown) => never };
      const payer = await sandbox.newPayer();
      const network = `eip155:${sandbox.base.chainId}` as const;
      const client = new x402Client().register(network, boundExact(privateKeyToAccount(payer.key)));
      // The sandbox's USDC is no default asset of the client's: allowed, as a wallet would list its own token.
      client.setSpendControls({ allowedAssets: [{ network, asset: sandbox.base.usdc.address, maxAmountPerPayment: '1000000' }] });
      const res = await post(wrapFetchWithPayment(fetch, client), '/api/ask/query', { question, rail: 'x402_base' });
      expect(res.status, await res.clone().text()).toBe(200);
      expect(await sandbox.balance('x402_base', payer.address)).toBe(10_000_000n - 50_000n);
    } finally {
      fs.rmSync(directory, { recursive: true, force: true });
    }
  });
});

describe('tempo credits: money that moved without an answer', () => {
  test('behavior: a payment the payer broadcast, for a question that then has nothing relevant, is kept as a credit only that wallet can spend', async () => {
    const { sandbox, environment } = served;
    const { store } = environment.services;
    const profile = await store.profiles.create({ slug: 'quince-notes', name: 'Quince Notes', visibility: 'unlisted' });
    const channel = await store.channels.create({ profileId: profile.id, kind: 'user_upload', label: 'Notes', accessLevel: 'public', ratePerMillionTokens: 1 });
    const { itemId } = await store.items.put(SearchTerms.indexed({
      channelId: channel.id,
      externalId: 'quince.md',
      title: 'Quince jam',
      contentHash: 'quince-v1',
      chunks: [{ text: 'Quince jam sets when the fruit simmers with its cores and pips: they hold the pectin the set needs.' }],
    }));
    const path = '/api/profiles/quince-notes/query';
    const body = { question: 'What makes quince jam set?', rail: 'tempo' };
    const owner = await sandbox.newPayer();
    const received = await sandbox.balance('tempo', sandbox.payTo.tempo);
    const headers = await credentialFor(sandbox, 'tempo', await post(fetch, path, body), owner.key, 'push');
    // Pushed: the payer sent the transfer (and its own gas fee) before the server saw anything.
    expect(await sandbox.balance('tempo', sandbox.payTo.tempo)).toBe(received + 50_000n);
    const afterPush = await sandbox.balance('tempo', owner.address);
    // The content goes away between the challenge and the paid retry: nothing relevant is left to sell.
    await store.items.remove(itemId);
    const refused = await post(fetch, path, body, headers);
    const refusal = await json(refused);
    expect(refused.status).toBe(422);
    expect(refusal).toMatchObject({ error: 'no_relevant_content', creditId: expect.stringMatching(/^credit_/) });
    expect(refusal.message).toContain(`signed by ${owner.address.toLowerCase()}`);

    // Another wallet naming the owner's address pays for itself; the credit stays.
    const next = { question, rail: 'tempo', walletAddress: owner.address };
    const stranger = await sandbox.newPayer();
    const strangerPaid = await post(fetch, '/api/ask/query', next, await credentialFor(sandbox, 'tempo', await post(fetch, '/api/ask/query', next), stranger.key));
    expect(strangerPaid.status).toBe(200);
    expect(await sandbox.balance('tempo', stranger.address)).toBe(10_000_000n - 50_000n);

    // Naming the wallet tells nobody whether it has a credit; the owner's next signed query spends it: the answer,
    // the credit id as txHash, no transfer.
    const unpaid = await post(fetch, '/api/ask/query', next);
    const challenge = await json(unpaid.clone());
    expect(challenge.error).toBe('payment_required');
    expect(challenge.creditAvailable).toBeUndefined();
    expect(challenge.message).not.toMatch(/credit/);
    const answered = await post(fetch, '/api/ask/query', { question, rail: 'tempo' }, await credentialFor(sandbox, 'tempo', unpaid, owner.key));
    expect(answered.status).toBe(200);
    expect(await json(answered)).toMatchObject({ charge: 'onchain', rail: 'tempo', txHash: refusal.creditId });
    expect(await sandbox.balance('tempo', owner.address)).toBe(afterPush);

    // Spent once: the next query pays again.
    const again = await post(fetch, '/api/ask/query', next, await credentialFor(sandbox, 'tempo', await post(fetch, '/api/ask/query', next), owner.key));
    expect((await json(again)).txHash).toMatch(/^0x[0-9a-f]{64}$/);
    expect(await sandbox.balance('tempo', owner.address)).toBe(afterPush - 50_000n);
  });
});

describe.each(['tempo', 'x402_base'] as const)('%s under concurrency', (rail) => {
  test('behavior: 200 parallel paid requests with distinct credentials settle exactly 200 times; 50 replays settle none', async () => {
    const { sandbox } = served;
    const payer = await sandbox.newPayer(20);
    const received = await sandbox.balance(rail, sandbox.payTo[rail]);
    const body = { question, rail };
    // Each request is challenged, paid and sent at once, as a wallet would (a signed tempo transfer lives ~25 s).
    const paid = await Promise.all(
      Array.from({ length: 200 }, async () => {
        const headers = await credentialFor(sandbox, rail, await post(fetch, '/api/ask/query', body), payer.key);
        return { headers, answer: await post(fetch, '/api/ask/query', body, headers) };
      }),
    );
    const credentials = paid.map((p) => p.headers);
    const answers = paid.map((p) => p.answer);
    const failed = await Promise.all(answers.filter((r) => r.status !== 200).map(async (r) => `${r.status} ${await r.text()}`));
    expect(failed).toEqual([]);
    const hashes = new Set(await Promise.all(answers.map(async (r) => (await json(r)).txHash as string)));
    expect(hashes.size).toBe(200);
    expect(await sandbox.balance(rail, payer.address)).toBe(20_000_000n - 200n * 50_000n);
    expect(await sandbox.balance(rail, sandbox.payTo[rail])).toBe(received + 200n * 50_000n);

    const replays = await Promise.all(credentials.slice(0, 50).map((headers) => post(fetch, '/api/ask/query', body, headers)));
    expect(replays.map((r) => r.status)).toEqual(Array(50).fill(402));
    expect(await sandbox.balance(rail, payer.address)).toBe(20_000_000n - 200n * 50_000n);
  }, 120_000);
});

describe('profile-edge ask', () => {
  /** Runs the CLI with the sandbox's settings (the wallet needs TEMPO_RPC_URL), resolving with its output. */
  const ask = (args: string[], extra: Record<string, string> = {}) =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const env = { PATH: process.env.PATH ?? '', ...served.environment.env, ...served.sandbox.environment, ...extra };
      const child = spawn(cli.command, [...cli.args, 'ask', ...args], { env });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('exit', (code) => resolve({ code, stdout, stderr }));
    });
  let keyFile = '';
  beforeAll(async () => {
    keyFile = path.join(served.environment.directory, 'wallet.key');
    fs.writeFileSync(keyFile, `${(await served.sandbox.newPayer()).key}\n`, { mode: 0o600 });
  });

  test('behavior: pays x402_base with the x402 client and prints the answer, sources and receipt; --json has it all', async () => {
    const { sandbox } = served;
    const received = await sandbox.balance('x402_base', sandbox.payTo.x402_base);
    const printed = await ask([question, '--url', served.url, '--rail', 'x402_base', '--wallet-key-file', keyFile]);
    expect(printed.code, printed.stderr).toBe(0);
    expect(printed.stdout).toMatch(/Sources:\n {2}\[1\] .*http:\/\/127\.0\.0\.1:\d+\/[a-z-]+\/i\//);
    expect(printed.stdout).toMatch(/paid on x402_base: transaction 0x[0-9a-f]{64}\nreceipt: \{"success":true/);
    const json = await ask([question, '--url', served.url, '--rail', 'x402_base', '--wallet-key-file', keyFile, '--mode', 'raw', '--json']);
    const out = JSON.parse(json.stdout);
    expect(out).toMatchObject({ status: 200, body: { mode: 'raw', charge: 'onchain', rail: 'x402_base' }, receipt: { success: true, transaction: out.body.txHash } });
    expect(await sandbox.balance('x402_base', sandbox.payTo.x402_base)).toBe(received + 100_000n);
  });

  test('behavior: pays with an API key from the account instead', async () => {
    const printed = await ask([question, '--url', served.url, '--api-key', served.environment.keys.callerKey, '--payment-mode', 'unlocks']);
    expect(printed.code, printed.stderr).toBe(0);
    expect(printed.stdout).toContain('charged: unlock');
  });

  test('error: a price over --max-usd, a question nothing answers, a bad key file, an unreachable server, and a Tempo node away or of another chain fail clearly, and nothing is paid', async () => {
    const { sandbox } = served;
    const received = await sandbox.balance('tempo', sandbox.payTo.tempo);
    const capped = await ask([question, '--url', served.url, '--wallet-key-file', keyFile, '--max-usd', '0.01']);
    expect(capped).toMatchObject({ code: 1, stderr: expect.stringContaining('not paid: the server asks 0.05 USD, over the 0.01 USD cap (--max-usd)') });
    const nothing = await ask(['How do I laminate butter into dough to make croissants?', '--url', served.url, '--wallet-key-file', keyFile]);
    expect(nothing).toMatchObject({ code: 1, stderr: expect.stringContaining('422 no_relevant_content') });
    const badKey = path.join(served.environment.directory, 'bad.key');
    fs.writeFileSync(badKey, 'not a key');
    const bad = await ask([question, '--url', served.url, '--wallet-key-file', badKey]);
    expect(bad).toMatchObject({ code: 2, stderr: expect.stringContaining('must hold one 32-byte hex private key') });
    const away = await ask([question, '--url', 'http://127.0.0.1:9', '--wallet-key-file', keyFile]);
    expect(away).toMatchObject({ code: 1, stderr: expect.stringContaining('cannot reach http://127.0.0.1:9') });
    const neither = await ask([question, '--url', served.url]);
    expect(neither).toMatchObject({ code: 2, stderr: expect.stringContaining('--wallet-key-file (pay on-chain) or --api-key') });
    // The Tempo node the wallet signs through is named, with the chain it should serve: away, or another chain's.
    const chain = sandbox.tempo.chainId;
    const noNode = await ask([question, '--url', served.url, '--wallet-key-file', keyFile], { TEMPO_RPC_URL: 'http://127.0.0.1:9' });
    expect(noNode.code).toBe(1);
    expect(noNode.stderr).toContain(`not paid: cannot reach the Tempo node at http://127.0.0.1:9 (TEMPO_RPC_URL), which should serve chain ${chain}: `);
    const otherChain = await ask([question, '--url', served.url, '--wallet-key-file', keyFile], { TEMPO_RPC_URL: sandbox.base.rpcUrl });
    expect(otherChain.code).toBe(1);
    expect(otherChain.stderr).toContain(`not paid: the Tempo node at ${sandbox.base.rpcUrl} (TEMPO_RPC_URL) serves chain ${sandbox.base.chainId}, not chain ${chain} this payment is on`);
    expect(await sandbox.balance('tempo', sandbox.payTo.tempo)).toBe(received);
    const key = fs.readFileSync(keyFile, 'utf8').trim();
    for (const run of [capped, nothing, away]) expect(run.stdout + run.stderr).not.toContain(key.slice(2));
  });
});

describe('reconciling payments a crash cut off', () => {
  /** A payment row as a crash would have left it: a state the running service never leaves behind. */
  const insert = (row: { id: string; rail: string; spendKey: string; state: string; txHash?: string; settleBy?: number; wallet?: string }) =>
    served.environment.peek.run(
      `INSERT INTO payments (id, spend_key, rail, wallet, query_id, request_digest, amount_millicents, state, tx_hash, settle_by, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, 'd', 5000, ?, ?, ?, ?, ?)`,
      row.id, row.spendKey, row.rail, (row.wallet ?? served.sandbox.payer.address).toLowerCase(), `q_${row.id}`, row.state, row.txHash ?? null, row.settleBy ?? null, Date.now(), Date.now(),
    );

  test('behavior: settling payments from before transfers were kept: landed ones become credits, unused ones are released, unknown ones are credited', async () => {
    const { sandbox, environment } = served;
    const { store } = environment.services;
    // A real x402 payment, answered, then written again as a crash mid-settle would have left it (the database keeps an
    // answered payment answered: the row is replaced, not moved back).
    const res = await post(x402Fetch(sandbox, sandbox.payer.key), '/api/ask/query', { question, rail: 'x402_base' });
    const { queryId } = await json(res);
    const landed = (await store.payments.byQuery(queryId))!;
    await environment.peek.run('DELETE FROM payments WHERE id = ?', landed.id);
    await insert({ id: landed.id, rail: 'x402_base', spendKey: landed.spendKey, state: 'settling' });
    await insert({ id: 'never-landed', rail: 'x402_base', spendKey: `${sandbox.payer.address.toLowerCase()}:0x${'11'.repeat(32)}`, state: 'settling' });
    await insert({ id: 'signed-unknown', rail: 'tempo', spendKey: `signed:0x${'22'.repeat(32)}`, state: 'settling' });
    await insert({ id: 'only-verified', rail: 'tempo', spendKey: `signed:0x${'33'.repeat(32)}`, state: 'verified' });

    const result = await OnchainPayment.reconcile(store, environment.services.rails, { olderThanMs: 60_000, now: Date.now() + 120_000 });
    expect(result).toEqual({ released: 2, credited: 2, pending: 0 });
    const state = async (id: string) => (await store.payments.get(id))!.state;
    expect(await Promise.all([state(landed.id), state('never-landed'), state('signed-unknown'), state('only-verified')])).toEqual(['credited', 'released', 'credited', 'released']);
    // Reconciling again changes nothing.
    expect(await OnchainPayment.reconcile(store, environment.services.rails, { olderThanMs: 60_000, now: Date.now() + 120_000 })).toEqual({ released: 0, credited: 0, pending: 0 });
  });

  /** The Base stand-in as anyone holding a signed authorization sees it: a gas-paying account of their own. */
  const outsider = () => {
    const chain = defineChain({ id: served.sandbox.base.chainId, name: 'base-stand-in', nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 }, rpcUrls: { default: { http: [served.sandbox.base.rpcUrl] } } });
    const account = privateKeyToAccount(served.sandbox.base.gasKey);
    const wallet = createWalletClient({ account, chain, transport: viemHttp(served.sandbox.base.rpcUrl) });
    const reader = createPublicClient({ chain, transport: viemHttp(served.sandbox.base.rpcUrl) });
    const usdc = served.sandbox.base.usdc.address;
    const abi = parseAbi([
      'function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)',
      'function cancelAuthorization(address authorizer, bytes32 nonce, bytes signature)',
    ]);
    return {
      /** Sends a leaked x402 payment's authorization straight to the token, as a leaking gateway could. */
      async send(header: string) {
        const { authorization: a, signature } = decodePaymentSignatureHeader(header).payload as any;
        const args = [a.from, a.to, BigInt(a.value), BigInt(a.validAfter), BigInt(a.validBefore), a.nonce, signature] as const;
        await reader.waitForTransactionReceipt({ hash: await wallet.writeContract({ address: usdc, abi, functionName: 'transferWithAuthorization', args }) });
      },
      /** The payer withdraws an authorization nobody used: its nonce reads as used, no money moves. */
      async cancel(key: `0x${string}`, nonce: `0x${string}`) {
        const payer = privateKeyToAccount(key);
        const domain = { name: served.sandbox.base.usdc.name, version: served.sandbox.base.usdc.version, chainId: served.sandbox.base.chainId, verifyingContract: usdc };
        const types = { CancelAuthorization: [{ name: 'authorizer', type: 'address' }, { name: 'nonce', type: 'bytes32' }] } as const;
        const signature = await payer.signTypedData({ domain, types, primaryType: 'CancelAuthorization', message: { authorizer: payer.address, nonce } });
        await reader.waitForTransactionReceipt({ hash: await wallet.writeContract({ address: usdc, abi, functionName: 'cancelAuthorization', args: [payer.address, nonce, signature] }) });
      },
    };
  };

  test('behavior: an x402 answer a credit paid for, whose authorization someone else sends later, leaves the wallet a credit again', async () => {
    const { sandbox, environment } = served;
    const { store } = environment.services;
    const payer = await sandbox.newPayer();
    // The wallet holds a credit (a payment of its that got no answer).
    await insert({ id: `owed-${payer.address}`, rail: 'x402_base', spendKey: `${payer.address.toLowerCase()}:0x${'88'.repeat(32)}`, state: 'settled', wallet: payer.address });
    const owed = (await store.payments.creditWallet(`owed-${payer.address}`, { from: ['settled'], reason: 'test: an earlier payment got no answer' }))!;
    const body = { question, rail: 'x402_base' };
    const headers = await credentialFor(sandbox, 'x402_base', await post(fetch, '/api/ask/query', body), payer.key);
    const answered = await json(await post(fetch, '/api/ask/query', body, headers));
    expect(answered.txHash).toBe(owed);
    expect(await sandbox.balance('x402_base', payer.address)).toBe(10_000_000n);
    // A gateway that saw PAYMENT-SIGNATURE sends it anyway: the wallet paid, for an answer its credit already bought.
    await outsider().send(headers['PAYMENT-SIGNATURE']!);
    expect(await sandbox.balance('x402_base', payer.address)).toBe(10_000_000n - 50_000n);
    const row = (await store.payments.byQuery(answered.queryId))!;
    // Until the authorization expires it is not looked at; after, the transfer is found and credited, once.
    expect((await OnchainPayment.reconcile(store, environment.services.rails, { olderThanMs: 600_000, now: Date.now() })).credited).toBe(0);
    const later = { olderThanMs: 600_000, now: row.settleBy! + 61_000 };
    expect((await OnchainPayment.reconcile(store, environment.services.rails, later)).credited).toBe(1);
    // The transfer is a payment of its own, credited; the answered payment holds no credit.
    expect(await store.payments.openCredit('x402_base', payer.address)).toMatchObject({ paymentId: `${row.id}:sent` });
    expect(await store.payments.get(`${row.id}:sent`)).toMatchObject({ state: 'credited', wallet: payer.address.toLowerCase() });
    expect(await store.payments.get(row.id)).toMatchObject({ state: 'answered', settleBy: null });
    expect((await OnchainPayment.reconcile(store, environment.services.rails, later)).credited).toBe(0);
  });

  test('behavior: an authorization its payer cancelled is not taken for a transfer: settling, it is released; released, it is not credited', async () => {
    const { sandbox, environment } = served;
    const { store } = environment.services;
    const payer = await sandbox.newPayer();
    const wallet = payer.address.toLowerCase();
    const [settling, released] = [`0x${'9a'.repeat(32)}`, `0x${'9b'.repeat(32)}`] as const;
    const past = Date.now() - 120_000;
    await insert({ id: `cancelled-settling-${wallet}`, rail: 'x402_base', spendKey: `${wallet}:${settling}`, state: 'settling', settleBy: past, wallet });
    await insert({ id: `cancelled-released-${wallet}`, rail: 'x402_base', spendKey: `${wallet}:${released}`, state: 'released', settleBy: past, wallet });
    for (const nonce of [settling, released]) await outsider().cancel(payer.key, nonce);
    await OnchainPayment.reconcile(store, environment.services.rails, { olderThanMs: 0, now: Date.now() + 1 });
    expect((await store.payments.get(`cancelled-settling-${wallet}`))!.state).toBe('released');
    expect((await store.payments.get(`cancelled-released-${wallet}`))!.state).toBe('released');
    expect(await environment.peek.value('SELECT COUNT(*) FROM wallet_credits WHERE wallet = ?', wallet)).toBe(0);
  });

  test('behavior: a transfer that may still land is left for the next pass, and released once it can no longer land', async () => {
    const { sandbox, environment } = served;
    const { store } = environment.services;
    const wallet = sandbox.payer.address.toLowerCase();
    const soon = Date.now() + 20_000;
    // Kept before broadcast, never mined; an x402 authorization nobody settled; a signed transfer never broadcast.
    await insert({ id: 'tempo-in-flight', rail: 'tempo', spendKey: `signed:0x${'44'.repeat(32)}`, state: 'settling', txHash: `0x${'55'.repeat(32)}`, settleBy: soon });
    await insert({ id: 'x402-in-flight', rail: 'x402_base', spendKey: `${wallet}:0x${'66'.repeat(32)}`, state: 'settling', settleBy: soon });
    await insert({ id: 'tempo-never-sent', rail: 'tempo', spendKey: `signed:0x${'77'.repeat(32)}`, state: 'settling', settleBy: soon });
    const state = async (id: string) => (await store.payments.get(id))!.state;
    const ids = ['tempo-in-flight', 'x402-in-flight', 'tempo-never-sent'];

    // Even the one whose hash was never kept waits: a process that only stood still may be about to keep it and send.
    const early = await OnchainPayment.reconcile(store, environment.services.rails, { olderThanMs: 0, now: Date.now() + 1 });
    expect(early).toEqual({ released: 0, credited: 0, pending: 3 });
    expect(await Promise.all(ids.map(state))).toEqual(['settling', 'settling', 'settling']);

    // Past validBefore (and the margin for clocks), the chain can no longer take them: released, never credited.
    const late = await OnchainPayment.reconcile(store, environment.services.rails, { olderThanMs: 0, now: soon + 61_000 });
    expect(late).toEqual({ released: 3, credited: 0, pending: 0 });
    expect(await Promise.all(ids.map(state))).toEqual(['released', 'released', 'released']);
    expect(await environment.peek.value('SELECT COUNT(*) FROM wallet_credits WHERE payment_id IN (?, ?, ?)', ...ids)).toBe(0);
  });
});

describe('what an independent review found', () => {
  const ask = (body: Record<string, unknown>, headers: Record<string, string> = {}) => post(fetch, '/api/ask/query', body, headers);

  test('error: a question with a line break gets a challenge, not a 500', async () => {
    const res = await ask({ question: 'How warm should a sourdough\nstarter be?', rail: 'tempo' });
    expect(res.status).toBe(402);
    expect(res.headers.get('www-authenticate')).toMatch(/^Payment /);
  });

  test('error: malformed credentials are refused with 402 and a fresh challenge, never 503 or 500', async () => {
    const tempoChallenge = (await json(await ask({ question, rail: 'tempo' }))).challenges[0];
    const tempoPayloads = [null, 'str', 42, { type: 'weird' }, { type: 'transaction', signature: '0x76zz' }, { type: 'hash', hash: `0x${'ab'.repeat(32)}` }, { type: 'hash', hash: 'nothex' }];
    for (const payload of tempoPayloads) {
      const res = await ask({ question, rail: 'tempo', _meta: { 'org.paymentauth/credential': { challenge: tempoChallenge, payload } } });
      expect(res.status, JSON.stringify(payload)).toBe(402);
      expect((await json(res)).message).toMatch(/refused/);
    }
    const unpaid = await ask({ question, rail: 'x402_base' });
    const payload = await x402Payer(served.sandbox, served.sandbox.payer.key).createPaymentPayload((await json(unpaid)).challenges[0]);
    const odd = [
      { ...payload, payload: { ...payload.payload, authorization: { ...(payload.payload as any).authorization, from: 5 } } },
      { ...payload, accepted: { ...payload.accepted, extra: { ...payload.accepted.extra, challenge: `${String(payload.accepted.extra!.challenge).slice(0, -2)}é1` } } },
    ];
    for (const credential of odd) {
      const res = await ask({ question, rail: 'x402_base', _meta: { 'org.paymentauth/credential': credential } });
      expect(res.status).toBe(402);
      expect((await json(res)).message).toMatch(/refused/);
    }
  });

  test('behavior: an x402 payment whose signature is not its payer\'s is refused and binds nothing (no row per forged request)', async () => {
    const unpaid = await ask({ question, rail: 'x402_base' });
    const payload = await x402Payer(served.sandbox, served.sandbox.payer.key).createPaymentPayload((await json(unpaid)).challenges[0]);
    const bindings = () => served.environment.peek.value<number>('SELECT COUNT(*) FROM credential_bindings');
    const before = await bindings();
    for (let i = 0; i < 5; i++) {
      const from = `0x${crypto.randomBytes(20).toString('hex')}`;
      const forged = { ...payload, payload: { ...payload.payload, authorization: { ...(payload.payload as any).authorization, from }, signature: `0x${'ab'.repeat(65)}` } };
      const res = await ask({ question, rail: 'x402_base', _meta: { 'org.paymentauth/credential': forged } });
      expect(res.status).toBe(402);
    }
    expect(await bindings()).toBe(before);
  });

  test('behavior: a refused credential on a question nothing answers is 422, as without one', async () => {
    const res = await ask({ question: 'How do I laminate butter into dough to make croissants?', rail: 'tempo' }, { authorization: 'Payment eyJ9' });
    expect(res.status).toBe(422);
  });

  test('behavior: a transfer pushed for another question is credited to its wallet, and its next signed payment spends the credit', async () => {
    const { sandbox } = served;
    const payer = await sandbox.newPayer();
    const pushed = await credentialFor(sandbox, 'tempo', await ask({ question, rail: 'tempo' }), payer.key, 'push');
    const refused = await ask({ question: 'What flour should I feed a starter?', rail: 'tempo' }, pushed);
    expect(refused.status).toBe(402);
    const message = (await json(refused)).message as string;
    expect(message).toMatch(/refused .*kept as credit credit_/);
    const afterPush = await sandbox.balance('tempo', payer.address);

    // The challenge is the one anybody gets (both modes): whether a wallet has a credit is not said before it signs.
    const unpaid = await ask({ question, rail: 'tempo', walletAddress: payer.address });
    expect((await json(unpaid.clone())).challenges[0].request.methodDetails.supportedModes).toBeUndefined();
    const spent = await ask({ question, rail: 'tempo' }, await credentialFor(sandbox, 'tempo', unpaid, payer.key));
    expect(spent.status).toBe(200);
    expect((await json(spent)).txHash).toBe(/kept as credit (credit_[0-9a-f]+)/.exec(message)![1]);
    expect(await sandbox.balance('tempo', payer.address)).toBe(afterPush);
  });

  test('behavior: a caller that went away is not charged', async () => {
    const { sandbox, environment } = served;
    const unpaid = await ask({ question, rail: 'x402_base' });
    const headers = await credentialFor(sandbox, 'x402_base', unpaid, sandbox.payer.key);
    const before = await sandbox.balance('x402_base');
    const outcome = await Tools.invoke({
      services: environment.services,
      name: 'profile_query',
      args: { question, rail: 'x402_base' },
      presented: { origin: 'test' },
      binding: { kind: 'global' },
      payment: { credential: Credentials.fromHeaders((name) => new Headers(headers).get(name) ?? undefined) },
      connection: { gone: () => true },
    }).catch((e: unknown) => e);
    expect(outcome).toMatchObject({ code: 'service_unavailable' });
    expect(await sandbox.balance('x402_base')).toBe(before);
  });

  test.each([
    ['x402_base', 'X402_FACILITATOR_URL', (p: string) => p === '/settle'],
    ['tempo', 'TEMPO_RPC_URL', (_p: string, body: string) => body.includes('eth_sendRawTransactionSync')],
  ] as const)('behavior: %s: a settlement whose answer was lost is left for reconciliation, which credits the wallet once it is found on chain', async (rail, setting, drops) => {
    const { sandbox } = served;
    const proxy = await Proxy.start(sandbox.environment[setting]!, { drop: drops });
    const environment = await Environment.create({ ...sandbox.environment, [setting]: proxy.url });
    const server = await Environment.serve(environment);
    try {
      const payer = await sandbox.newPayer();
      const body = { question, rail };
      const send = (headers: Record<string, string> = {}) => fetch(`${server.url}/api/ask/query`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
      const res = await send(await credentialFor(sandbox, rail, await send(), payer.key));
      expect(res.status).toBe(503);
      expect((await json(res)).message).toMatch(/outcome is not known yet.*becomes a credit/);
      expect(await sandbox.balance(rail, payer.address)).toBe(10_000_000n - 50_000n);
      const [row] = await environment.peek.all<{ id: string; state: string }>('SELECT id, state FROM payments');
      expect(row!.state).toBe('settling');
      expect(await OnchainPayment.reconcile(environment.services.store, environment.services.rails, { olderThanMs: 0, now: Date.now() + 1 })).toEqual({ released: 0, credited: 1, pending: 0 });
      expect(await environment.services.store.payments.openCredit(rail, payer.address)).toBeDefined();
    } finally {
      await server.close();
      await environment.close();
      await proxy.close();
    }
  });
});
