import { describe, expect, test } from 'vitest';
import * as Config from '../src/config/Config.js';
import * as Log from '../src/log/Logger.js';

describe('Config.load', () => {
  test('behavior: defaults serve on 127.0.0.1:3000 with the database under data/ and the demo loaded', () => {
    const config = Config.load({});
    expect(config).toMatchObject({ host: '127.0.0.1', port: 3000, environment: 'development', demoData: true });
    expect(config.databasePath.endsWith('data/profile-edge.db')).toBe(true);
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
});
