// web/latest-only.js: the demo's text boxes run only the latest text while a run is in flight, and
// a caller that handed its text to a running call can wait, with idle(), until that text has run.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { LatestOnly } from '../../web/latest-only.js';

const tick = () => new Promise((resolve) => setTimeout(resolve, 5));

test('values handed over while a job runs replace each other: the last one runs next', async () => {
  const ran = [];
  const runs = new LatestOnly(async (value) => {
    await tick();
    ran.push(value);
  });
  const first = runs.run('a');
  await runs.run('b');  // (a job runs: resolves at once)
  await runs.run('c');
  await first;
  assert.deepEqual(ran, ['a', 'c']);
});

test('idle() resolves once the value a caller handed to a running call has run, with nothing after it', async () => {
  const ran = [];
  let drawn = 0;
  const runs = new LatestOnly(async (value) => {
    await tick();
    ran.push(value);
    drawn++;  // (the demo redraws here, before the running call sees that no value waits)
  });
  const first = runs.run('a');
  await runs.run('b');
  await runs.idle();
  assert.deepEqual(ran, ['a', 'b'], "the joiner's value has run when idle() resolves");
  assert.equal(drawn, 2);
  await first;
  await runs.idle();  // (idle: at once)
});

test('a job that throws still ends the run: idle() resolves and the next value runs', async () => {
  const ran = [];
  const runs = new LatestOnly(async (value) => {
    ran.push(value);
    if (value === 'bad') throw new Error('bad');
  });
  await assert.rejects(runs.run('bad'), /bad/);
  await runs.idle();
  await runs.run('good');
  assert.deepEqual(ran, ['bad', 'good']);
});
