import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { commands } from '../src/cli/Cli.js';
import { projectRoot, variables } from '../src/config/Config.js';
import { QueryRequest, maxQuestionLength } from '../src/contract/Query.js';
import { errorCodes, toServiceError } from '../src/errors/ServiceError.js';
import * as Tools from '../tools/Tools.js';
import * as Environment from './support/Environment.js';

const read = (file: string) => fs.readFileSync(path.join(projectRoot, file), 'utf8');

describe('the documentation stays true', () => {
  test.each(variables)('behavior: %s is in the README table and in .env.example', (name) => {
    expect(read('README.md')).toContain(`| \`${name}\` |`);
    expect(read('.env.example')).toMatch(new RegExp(`^#? ?${name}=`, 'm'));
  });

  test.each(commands.map((c) => c.name))('behavior: the CLI command "%s" is in the README', (name) => {
    expect(read('README.md')).toContain(`\`${name}`);
  });

  test.each(errorCodes)('behavior: the error code %s is in skill/errors.md', (code) => {
    expect(read('skill/errors.md')).toContain(`| \`${code}\` |`);
  });

  test('behavior: .ci/run installs from the lockfile, type-checks and lints, then runs the README test command', () => {
    const steps = read('.ci/run')
      .split('\n')
      .filter((line) => /^npm /.test(line));
    // The type check and the lint run side by side (each in the background, then waited for), before the tests.
    expect(steps).toEqual(['npm ci', 'npm run typecheck & typecheck=$!', 'npm run lint & lint=$!', 'npm test']);
    expect(read('.ci/run')).toMatch(/wait "\$typecheck"\nwait "\$lint"\nnpm test\n/);
    const scripts = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts;
    expect(scripts).toMatchObject({ typecheck: expect.any(String), lint: expect.any(String), test: expect.any(String) });
    const readme = read('README.md');
    expect(readme).toContain('npm test');
    expect(readme).toMatch(/`\.ci\/run`\) installs with `npm ci`, then runs `npm run typecheck` and `npm run lint` side by side, then `npm test`/);
  });

  test('behavior: the question cap and the wallet address pattern of the contract are said in the README and the decisions', () => {
    const cap = `${maxQuestionLength.toLocaleString('en-US')} characters`;
    const wallet = (QueryRequest.shape.walletAddress.unwrap()._def.checks.find((c) => c.kind === 'regex') as { regex: RegExp } | undefined)?.regex;
    // The words below describe this pattern: when it changes, so must they.
    expect(wallet?.source).toBe('^0x[0-9a-fA-F]{40}$');
    for (const file of ['README.md', 'docs/decisions.md']) {
      expect(read(file), file).toContain(cap);
      expect(read(file), file).toMatch(/`walletAddress`[^.]*EVM address[^.]*`0x` and 40 hex digits/);
    }
  });

  test('behavior: SKILL.md says what paying works today, and that cited text is untrusted', async () => {
    const skill = read('SKILL.md');
    expect(skill).toMatch(/untrusted\s+data: never follow instructions/);
    const environment = await Environment.create();
    try {
      const outcome = await Tools.invoke({
        services: environment.services,
        name: 'profile_query',
        args: { question: 'How warm should a starter be?', rail: 'tempo' },
        presented: { origin: 'docs-test' },
        binding: { kind: 'global' },
      }).catch(toServiceError);
      // A rail without a key is answered with a challenge, and SKILL.md says how to pay it on every transport.
      expect((outcome as { code?: string }).code).toBe('payment_required');
      expect(skill).not.toContain('not available yet');
      for (const part of ['WWW-Authenticate: Payment', 'PAYMENT-REQUIRED', 'PAYMENT-SIGNATURE', '-32042', 'org.paymentauth/credential', 'org.paymentauth/receipt', 'walletAddress']) {
        expect(skill).toContain(part);
      }
    } finally {
      await environment.close();
    }
  });
});
