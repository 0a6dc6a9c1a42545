/**
 * Preloaded (NODE_OPTIONS=--require) into a test server so a test can read what the server keeps: on
 * SIGUSR2 it collects all garbage, then says how much JavaScript heap and external memory (buffers)
 * is still in use, and how large V8's young generation is. Resident memory cannot tell that: how much
 * the heap and the allocator hold on to after a burst of large requests is theirs to choose.
 */
const v8 = require('node:v8');
const vm = require('node:vm');

v8.setFlagsFromString('--expose-gc');
const collect = vm.runInNewContext('gc');
process.on('SIGUSR2', () => {
  // A second pass takes what the first only made unreachable (weak references, finalizers).
  collect();
  collect();
  const { heapUsed, external } = process.memoryUsage();
  process.stdout.write(`heap after gc ${Math.round((heapUsed + external) / 1024)} KiB\n`);
  const newSpace = v8.getHeapSpaceStatistics().find((space) => space.space_name === 'new_space');
  process.stdout.write(`young generation ${Math.round(newSpace.space_size / 1024)} KiB\n`);
});
