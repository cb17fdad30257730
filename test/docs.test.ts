import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { commands } from '../src/cli/Cli.js';
import { projectRoot, variables } from '../src/config/Config.js';
import { errorCodes } from '../src/errors/ServiceError.js';

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

  test('behavior: .ci/run installs from the lockfile and runs the README test command', () => {
    const ci = read('.ci/run');
    expect(ci).toContain('npm ci');
    expect(ci).toContain('npm test');
    expect(read('README.md')).toContain('npm test');
  });
});
