import fs from 'node:fs';
import path from 'node:path';
import type { Rail } from '../../contract/Quote.js';
import { type Command, UsageError, jsonOption, number, oneOf, required, text, untilSignal } from '../Command.js';
import type { Output } from '../Output.js';

/** A private key from a file: one 32-byte hex key, nothing else. The key is never printed. */
function readKey(file: string): `0x${string}` {
  let content: string;
  try {
    content = fs.readFileSync(file, 'utf8').trim();
  } catch (error) {
    throw new UsageError(`cannot read --wallet-key-file ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  if (!/^(0x)?[0-9a-fA-F]{64}$/.test(content)) throw new UsageError(`--wallet-key-file ${file} must hold one 32-byte hex private key (0x and 64 hex digits)`);
  return (content.startsWith('0x') ? content : `0x${content}`) as `0x${string}`;
}

type Answer = {
  answer?: string;
  citations?: { label: string; profileUrl: string }[];
  chunks?: { text: string; score: number; profileUrl: string }[];
  confidence?: string;
  charge?: string;
  rail?: string;
  txHash?: string;
  error?: string;
  message?: string;
};

function print(out: Output, base: string, body: Answer, receipt: Record<string, unknown> | undefined): void {
  if (body.answer !== undefined) {
    out.line(body.answer);
    if (body.citations?.length) {
      out.line('');
      out.line('Sources:');
      body.citations.forEach((c, i) => out.line(`  [${i + 1}] ${c.label}  ${new URL(c.profileUrl, base).href}`));
    }
  } else {
    for (const [i, c] of (body.chunks ?? []).entries()) out.line(`[${i + 1}] (${c.score}) ${c.text}\n    ${new URL(c.profileUrl, base).href}`);
  }
  out.line('');
  out.line(`confidence: ${body.confidence ?? 'unknown'}`);
  if (body.charge === 'onchain') out.line(`paid on ${body.rail}: ${body.txHash?.startsWith('credit_') ? `credit ${body.txHash}` : `transaction ${body.txHash}`}`);
  else out.line(`charged: ${body.charge}`);
  if (receipt) out.line(`receipt: ${JSON.stringify(receipt)}`);
}

export const ask: Command = {
  name: 'ask',
  summary: 'Ask a server a question and pay for the answer: on-chain from a wallet (the mppx or x402 client), or with an API key.',
  usage:
    'ask "QUESTION" --url URL [--profile SLUG] [--rail tempo|x402_base] [--wallet-key-file FILE | --api-key KEY [--payment-mode credits|unlocks]] [--mode synthesized|raw] [--max-usd N] [--json]',
  positionals: { min: 1, max: 1 },
  options: {
    url: { type: 'string' },
    profile: { type: 'string' },
    rail: { type: 'string' },
    'wallet-key-file': { type: 'string' },
    'api-key': { type: 'string' },
    'payment-mode': { type: 'string' },
    mode: { type: 'string' },
    'max-usd': { type: 'string' },
    ...jsonOption,
  },
  async run({ config, out }, { values, positionals }) {
    const question = positionals[0]!;
    const base = required(values, 'url');
    if (!/^https?:\/\/[^/]/i.test(base)) throw new UsageError(`--url must be the server's http(s) address, got "${base}"`);
    const slug = text(values, 'profile');
    const endpoint = new URL(slug ? `/api/profiles/${encodeURIComponent(slug)}/query` : '/api/ask/query', base).href;
    const mode = oneOf(values, 'mode', ['synthesized', 'raw'] as const);
    const apiKey = text(values, 'api-key');
    const keyFile = text(values, 'wallet-key-file');
    if (apiKey !== undefined && keyFile !== undefined) throw new UsageError('pay with --wallet-key-file or --api-key, not both');
    if (apiKey === undefined && keyFile === undefined) throw new UsageError('--wallet-key-file (pay on-chain) or --api-key (pay from an account) is required');
    const rail: Rail = oneOf(values, 'rail', ['tempo', 'x402_base'] as const) ?? 'tempo';
    const maxUsd = number(values, 'max-usd', { min: 0 }) ?? 1;
    // The wallet's client libraries load only for this command.
    const Wallet = await import('../../client/Wallet.js');
    const wallet = keyFile === undefined ? undefined : Wallet.create({ privateKey: readKey(keyFile), maxUsd, tempo: { rpcUrl: config.rails.tempo.rpcUrl, chainId: config.rails.tempo.chainId } });
    const body = {
      question,
      ...(mode && { mode }),
      ...(wallet ? { rail, walletAddress: wallet.address } : { paymentMode: oneOf(values, 'payment-mode', ['credits', 'unlocks'] as const) ?? 'credits' }),
    };
    const send = async (headers: Record<string, string>): Promise<Response | undefined> => {
      try {
        return await fetch(endpoint, { method: 'POST', headers: { 'content-type': 'application/json', ...(apiKey !== undefined && { 'service-api-key': apiKey }), ...headers }, body: JSON.stringify(body) });
      } catch (error) {
        out.error(`cannot reach ${base}: ${((error as Error).cause as Error | undefined)?.message ?? (error as Error).message}`);
        return undefined;
      }
    };
    let response = await send({});
    if (response?.status === 402 && wallet) {
      let headers: Record<string, string>;
      try {
        headers = await wallet.pay(response, rail);
      } catch (error) {
        // Nothing was signed or sent: a price over the cap, an unreadable challenge, or a chain the wallet cannot reach.
        out.error(`not paid: ${(error as Error).message.split('\n')[0]}`);
        return 1;
      }
      response = await send(headers);
    }
    if (!response) return 1;
    const answer = (await response.json().catch(() => ({ error: 'invalid_response', message: `HTTP ${response.status} without a JSON body` }))) as Answer;
    const receipt = Wallet.receiptOf(response);
    if (values.json) {
      out.json({ status: response.status, body: answer, ...(receipt && { receipt }) });
      return response.ok ? 0 : 1;
    }
    if (!response.ok) {
      out.error(`${response.status} ${answer.error ?? ''}: ${answer.message ?? ''}`.trim());
      return 1;
    }
    print(out, base, answer, receipt);
    return 0;
  },
};

/** Writes a file only its owner can read: it holds a key, or settings that name one. */
function writePrivate(file: string, content: string): void {
  fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  fs.writeFileSync(file, content, { mode: 0o600 });
  fs.chmodSync(file, 0o600);
}

export const sandbox: Command = {
  name: 'sandbox',
  summary: 'Run local stand-ins for the payment rails (a Tempo node, a Base chain with USDC, an x402 facilitator) with a funded wallet, to pay queries offline.',
  usage: 'sandbox [--settings-file FILE] [--wallet-key-file FILE] [--usd N] [--port N]   (defaults: sandbox.env, sandbox-wallet.key, free ports; --port N: the Tempo node on N, the Base chain on N+1, the facilitator on N+2)',
  // `--env-file` was its first name: Node 20 reads that flag itself wherever it stands (and fails on a file that does
  // not exist yet), so it is kept only for the Node versions that leave it to the script.
  options: { 'settings-file': { type: 'string' }, 'env-file': { type: 'string' }, 'wallet-key-file': { type: 'string' }, usd: { type: 'string' }, port: { type: 'string' } },
  async run({ out }, { values }) {
    const envFile = text(values, 'settings-file') ?? text(values, 'env-file') ?? 'sandbox.env';
    const keyFile = text(values, 'wallet-key-file') ?? 'sandbox-wallet.key';
    const usd = number(values, 'usd', { min: 0.01, max: 1_000_000 }) ?? 10;
    const port = number(values, 'port', { min: 1, max: 65_533, integer: true });
    // ganache and solc load only for this command.
    const Sandbox = await import('../../sandbox/Sandbox.js');
    const running = await Sandbox.start({ payerUsd: usd, port }).catch((error: unknown) => {
      if (!(error instanceof Sandbox.PortTaken)) throw error;
      throw new UsageError(`${error.message}: ${error.code === 'EADDRINUSE' ? 'the port is in use' : 'not allowed here'}; choose another --port (the sandbox takes it and the next two)`);
    });
    writePrivate(envFile, `${Object.entries(running.environment).map(([k, v]) => `${k}=${v}`).join('\n')}\n`);
    writePrivate(keyFile, `${running.payer.key}\n`);
    const lines = [
      `sandbox ready (Ctrl-C stops it; nothing leaves this machine)`,
      `  Tempo node    ${running.tempo.url}  (chain ${running.tempo.chainId}, pathUSD, a fee payer sponsors gas)`,
      `  Base chain    ${running.base.rpcUrl}  (chain ${running.base.chainId}, USDC ${running.base.usdc.address})`,
      `  facilitator   ${running.facilitator.url}  (x402, exact scheme)`,
      `  payer wallet  ${running.payer.address}  (${usd} USD on each chain; key in ${keyFile})`,
      `  server settings written to ${envFile}; start a server with them:`,
      `    node --env-file=${envFile} bin/profile-edge.mjs serve --port 3001`,
      `  then pay for an answer:`,
      `    node --env-file=${envFile} bin/profile-edge.mjs ask "How warm should a sourdough starter be?" --url http://127.0.0.1:3001 --rail tempo --wallet-key-file ${keyFile}`,
    ];
    for (const line of lines) out.line(line);
    await untilSignal();
    await running.close();
  },
};

export const payments: Command = {
  name: 'payments',
  summary: 'Show the newest on-chain payments: rail, wallet, state (answered, released, credited...), transaction and credit.',
  usage: 'payments [--wallet ADDRESS] [--limit N] [--json]',
  options: { wallet: { type: 'string' }, limit: { type: 'string' }, ...jsonOption },
  async run({ services, out }, { values }) {
    const rows = await (await services()).store.payments.recent({ wallet: text(values, 'wallet'), limit: number(values, 'limit', { min: 1, integer: true }) ?? 50 });
    if (values.json) {
      out.json(rows.map(({ receipt, ...row }) => ({ ...row, receipt: receipt === null ? null : JSON.parse(receipt) })));
      return;
    }
    out.table(
      rows.map((p) => ({
        at: new Date(p.createdAt).toISOString(),
        rail: p.rail,
        wallet: p.wallet,
        usd: p.amountMillicents / 100_000,
        state: p.state,
        tx: p.txHash,
        credit: p.creditLeft ?? (p.creditId ? `spent ${p.creditId}` : null),
        query: p.queryId,
        note: p.note,
      })),
    );
  },
};
