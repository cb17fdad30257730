#!/usr/bin/env node
// Runs the TypeScript sources directly through tsx, so `npm install` needs no build step.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli/Cli.ts');
const { exitOnClosedPipe } = await import('../src/cli/Output.ts');
exitOnClosedPipe();
process.exitCode = await main(process.argv.slice(2));
