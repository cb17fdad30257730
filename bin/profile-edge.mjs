#!/usr/bin/env node
// Runs the JavaScript built from the TypeScript sources (dist/, made by `npm install` through bin/build.mjs). A build
// older than the sources is made again first, and says so: what runs is always the sources as they are.
import { dist, ensure } from './build.mjs';

try {
  await ensure();
} catch (error) {
  process.stderr.write(`profile-edge: ${error.message}\n`);
  process.exit(1);
}
const { main } = await import(`${dist}/src/cli/Cli.js`);
const { exitOnClosedPipe } = await import(`${dist}/src/cli/Output.js`);
exitOnClosedPipe();
process.exitCode = await main(process.argv.slice(2));
