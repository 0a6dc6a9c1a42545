#!/usr/bin/env node
/**
 * `npm start`: compiles the production server (server/, with the lib/ and db/ code it serves) into one
 * file when it is missing or older than its sources, then runs it in this process. The server itself
 * checks the configuration, migrates the database and builds the Next.js app when that is stale.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, stop } from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const outfile = path.join(root, 'dist', 'server.cjs');
const sources = ['server', 'lib', 'db', 'package.json', 'tsconfig.json'];

function newestMtime(entry) {
  if (!fs.existsSync(entry)) return 0;
  const stat = fs.statSync(entry);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return fs.readdirSync(entry).reduce((newest, child) => Math.max(newest, newestMtime(path.join(entry, child))), stat.mtimeMs);
}

const builtAt = fs.existsSync(outfile) ? fs.statSync(outfile).mtimeMs : 0;
if (sources.some((entry) => newestMtime(path.join(root, entry)) > builtAt)) {
  // Built beside it and renamed into place: instances started together from one checkout may each
  // build, and none may load a file another is still writing.
  const building = `${outfile}.${process.pid}.tmp`;
  await build({
    entryPoints: [path.join(root, 'server', 'main.ts')],
    outfile: building,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    packages: 'external',
    tsconfig: path.join(root, 'tsconfig.json'),
    logLevel: 'warning',
  });
  fs.renameSync(building, outfile);
  // esbuild's compiler runs as a child process, which would otherwise stay as long as the server (35 MB).
  await stop();
}

process.chdir(root);
const { main } = createRequire(import.meta.url)(outfile);
await main({ dev: process.argv.includes('--dev') });
