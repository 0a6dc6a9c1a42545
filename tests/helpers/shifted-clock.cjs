/**
 * Preloaded (NODE_OPTIONS=--require) into a test server so a test can let time pass without waiting:
 * on SIGUSR2 the server reads how far ahead its clock runs (in ms) from CLOCK_OFFSET_FILE, moves
 * Date.now that far ahead of real time, and says so. Timers still run on real time.
 */
const fs = require('node:fs');

const offsetFile = process.env.CLOCK_OFFSET_FILE;
if (!offsetFile) throw new Error('shifted-clock: CLOCK_OFFSET_FILE is not set');
const realNow = Date.now.bind(Date);
let offset = 0;
Date.now = () => realNow() + offset;
process.on('SIGUSR2', () => {
  offset = Number(fs.readFileSync(offsetFile, 'utf8'));
  process.stdout.write(`clock offset ${offset} ms\n`);
});
