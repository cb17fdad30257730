import { describe, expect, test } from 'vitest';
import * as Config from '../src/config/Config.js';
import * as Log from '../src/log/Logger.js';

describe('Config.load', () => {
  test('behavior: defaults serve on 127.0.0.1:3000 with the database under data/ and the demo loaded', () => {
    const config = Config.load({});
    expect(config).toMatchObject({ host: '127.0.0.1', port: 3000, environment: 'development', demoData: true });
    expect(config.database).toEqual({ engine: 'sqlite', path: expect.stringMatching(/data\/profile-edge\.db$/) });
    expect(config.rails.tempo).toMatchObject({ chainId: 4217, currency: '0x20C000000000000000000000b9537d11c60E8b50', payTo: undefined });
    expect(config.rails.x402_base).toMatchObject({ chainId: 8453, currency: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913' });
  });

  test('behavior: production loads no demo rows unless asked; test networks are selectable', () => {
    expect(Config.load({ ENVIRONMENT: 'production' }).demoData).toBe(false);
    expect(Config.load({ ENVIRONMENT: 'production', DEMO_DATA: 'true' }).demoData).toBe(true);
    const config = Config.load({ TEMPO_NETWORK: 'testnet', X402_BASE_NETWORK: 'sepolia' });
    expect(config.rails.tempo.chainId).toBe(42431);
    expect(config.rails.x402_base).toMatchObject({ chainId: 84532, currency: '0x036CbD53842c5426634e7929541eC2318f3dCF7e' });
  });

  test('error: invalid values are reported together, by name', () => {
    expect(() => Config.load({ PORT: 'eighty', TEMPO_PAY_TO: '0x123', LOG_LEVEL: 'loud' })).toThrow(/PORT[\s\S]*LOG_LEVEL[\s\S]*TEMPO_PAY_TO|PORT[\s\S]*TEMPO_PAY_TO/);
    try {
      Config.load({ PORT: 'eighty', TEMPO_PAY_TO: '0x123' });
    } catch (error) {
      expect(error).toBeInstanceOf(Config.ConfigError);
      expect((error as Error).message).toContain('TEMPO_PAY_TO: must be a 0x-prefixed 20-byte hex address');
    }
  });

  test('behavior: on PostgreSQL a process keeps at most DATABASE_POOL_SIZE connections, 10 unless set; 1 to 100', () => {
    const url = 'postgres://postgres@127.0.0.1:5432/profile_edge';
    expect(Config.load({ DATABASE_URL: url }).database).toEqual({ engine: 'postgres', url, connections: 10 });
    expect(Config.load({ DATABASE_URL: url, DATABASE_POOL_SIZE: '4' }).database).toEqual({ engine: 'postgres', url, connections: 4 });
    for (const bad of ['0', '101', '2.5', 'many']) expect(() => Config.load({ DATABASE_URL: url, DATABASE_POOL_SIZE: bad })).toThrow(/DATABASE_POOL_SIZE/);
  });

  test('error: a retired setting is refused, saying what replaced it; empty counts as unset', () => {
    for (const name of ['EMBEDDING_WEIGHT', 'EMBEDDING_MIN_SIMILARITY']) {
      expect(() => Config.load({ [name]: '0.25' })).toThrow(new RegExp(`${name}: no longer read; vector similarity is weighted per embedder by \`profile-edge fit\``));
      expect(() => Config.load({ [name]: '' })).not.toThrow();
    }
  });
});

describe('connector base URLs', () => {
  test('behavior: YOUTUBE_BASE_URL and NOTION_BASE_URL default to the real services and lose trailing slashes', () => {
    expect(Config.load({})).toMatchObject({ youtube: { baseUrl: 'https://www.youtube.com' }, notion: { baseUrl: 'https://api.notion.com' } });
    const config = Config.load({ YOUTUBE_BASE_URL: ' http://127.0.0.1:9000/yt/ ', NOTION_BASE_URL: 'http://127.0.0.1:9001/' });
    expect(config).toMatchObject({ youtube: { baseUrl: 'http://127.0.0.1:9000/yt' }, notion: { baseUrl: 'http://127.0.0.1:9001' } });
  });

  test.each(['YOUTUBE_BASE_URL', 'NOTION_BASE_URL'])('error: %s must be an http(s) URL', (name) => {
    expect(() => Config.load({ [name]: 'www.youtube.com' })).toThrow(new RegExp(`${name}: Invalid url`));
    expect(() => Config.load({ [name]: 'ftp://mirror.example.com' })).toThrow(new RegExp(`${name}: must be an http\\(s\\) URL`));
  });
});

describe('on-chain payment settings', () => {
  const address = '0x1111111111111111111111111111111111111111';

  test('behavior: rails read their node, fee payer, facilitator and token domain; a local chain id overrides', () => {
    const config = Config.load({
      TEMPO_PAY_TO: address,
      TEMPO_RPC_URL: 'http://127.0.0.1:8545/',
      TEMPO_FEE_PAYER_KEY: 'ab'.repeat(32),
      X402_BASE_NETWORK: 'sepolia',
      X402_BASE_CHAIN_ID: '1337',
      X402_FACILITATOR_URL: 'http://127.0.0.1:9000',
    });
    expect(config.rails.tempo).toMatchObject({ rpcUrl: 'http://127.0.0.1:8545', feePayerKey: `0x${'ab'.repeat(32)}` });
    expect(config.rails.x402_base).toMatchObject({ chainId: 1337, currencyName: 'USDC', currencyVersion: '2', facilitatorUrl: 'http://127.0.0.1:9000', rpcUrl: 'https://sepolia.base.org' });
    expect(Config.load({}).rails.x402_base).toMatchObject({ currencyName: 'USD Coin', facilitatorUrl: 'https://x402.org/facilitator' });
    expect(Config.load({}).payments).toEqual({ secret: undefined, challengeTtlSeconds: 300, crashAt: undefined });
  });

  test('error: production refuses an on-chain rail without PAYMENT_SECRET, and any secret shorter than 32 bytes', () => {
    expect(() => Config.load({ ENVIRONMENT: 'production', TEMPO_PAY_TO: address })).toThrow(/PAYMENT_SECRET: required in production/);
    expect(() => Config.load({ ENVIRONMENT: 'production' })).not.toThrow();
    expect(Config.load({ ENVIRONMENT: 'production', X402_BASE_PAY_TO: address, PAYMENT_SECRET: 's'.repeat(32) }).payments.secret).toBe('s'.repeat(32));
    expect(() => Config.load({ PAYMENT_SECRET: 'short' })).toThrow(/PAYMENT_SECRET: must be at least 32 bytes/);
    expect(() => Config.load({ TEMPO_FEE_PAYER_KEY: '0x1234' })).toThrow(/TEMPO_FEE_PAYER_KEY: must be a 32-byte hex private key/);
  });

  test('behavior: the crash hook is honoured only in tests', () => {
    expect(Config.load({ PROFILE_EDGE_CRASH_AT: 'after_settle' }).payments.crashAt).toBeUndefined();
    expect(Config.load({ ENVIRONMENT: 'test', PROFILE_EDGE_CRASH_AT: 'after_settle' }).payments.crashAt).toBe('after_settle');
  });

  test('behavior: a configuration error never echoes the secret it refuses', () => {
    const secret = 'zz'.repeat(32);
    try {
      Config.load({ TEMPO_FEE_PAYER_KEY: secret });
    } catch (error) {
      expect((error as Error).message).not.toContain(secret);
    }
  });
});

describe('Logger', () => {
  test('behavior: writes JSON lines at or above its level and redacts secret-looking fields', () => {
    const lines: string[] = [];
    const logger = Log.create({ level: 'info', write: (l) => lines.push(l) });
    logger.debug('hidden');
    logger.info('shown', { apiKey: 'pek_x', authorization: 'Bearer y', path: '/a' });
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: 'info', message: 'shown', apiKey: '[redacted]', authorization: '[redacted]', path: '/a' });
  });

  test('behavior: an error is written with its code and what caused it, so a failure says why', () => {
    const lines: string[] = [];
    const logger = Log.create({ level: 'info', write: (l) => lines.push(l) });
    const socket = Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    logger.error('settlement failed', { error: new Error('fetch failed', { cause: new Error('connect refused', { cause: socket }) }) });
    const { error } = JSON.parse(lines[0]!) as { error: { message: string; cause: { message: string; cause: { message: string; code: string } } } };
    expect(error.message).toBe('fetch failed');
    expect(error.cause.message).toBe('connect refused');
    expect(error.cause.cause).toMatchObject({ message: 'socket hang up', code: 'ECONNRESET' });
  });
});
