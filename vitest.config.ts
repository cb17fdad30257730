import { defineConfig } from 'vitest/config';

/**
 * Two groups, one after the other: every test file, in parallel; then the on-chain payment files alone. Their bursts
 * of paid requests sign, verify and settle on loopback chains in one process, and a signed tempo transfer lives 25 s:
 * run beside other files on two cores, the last of a burst can arrive after its own expiry (and callers who leave at
 * chosen moments would leave at other ones).
 */
const alone = ['test/onchain.test.ts', 'test/onchain-departure.test.ts'];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    projects: [
      { extends: true, test: { name: 'suite', include: ['test/**/*.test.ts'], exclude: alone, sequence: { groupOrder: 0 } } },
      { extends: true, test: { name: 'payments under load', include: alone, sequence: { groupOrder: 1 } } },
    ],
  },
});
