// examples/train-sentiment.mjs, run as a user runs it (a child process, wasm backend), on a slice
// of the corpus for speed: --seed N gives the same history twice (and another seed another one),
// and --restore-best ends with the weights of the epoch with the best validation accuracy (the
// example evaluates them again on the validation data and saves them).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';

const ROOT = new URL('../../', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'mha-train-sentiment-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** Runs the example; returns its history.json and its output. */
function train(name, ...flags) {
  const out = join(dir, name);
  const stdout = execFileSync(process.execPath, ['examples/train-sentiment.mjs', '--epochs=3', '--samples=256', `--out=${out}`, ...flags],
    { cwd: ROOT, encoding: 'utf8' });
  return { ...JSON.parse(readFileSync(join(out, 'history.json'), 'utf8')), stdout };
}

test('--seed N: the same history twice; another seed, another history; --restore-best keeps the best epoch', () => {
  const first = train('a', '--seed', '7', '--restore-best');
  const second = train('b', '--seed=7', '--restore-best');
  const other = train('c', '--seed=8');
  assert.equal(first.seed, 7);
  assert.equal(first.history.loss.length, 3);
  assert.deepEqual(second.history, first.history);
  assert.deepEqual(second.heldOut, first.heldOut);
  assert.notDeepEqual(other.history.loss, first.history.loss);

  const accuracies = first.history.val_acc;
  const best = accuracies.indexOf(Math.max(...accuracies));
  assert.equal(first.restored.epoch, best + 1);
  assert.ok(Math.abs(first.restored.val_accuracy - accuracies[best]) < 1e-6, `evaluated ${first.restored.val_accuracy}, epoch ${best + 1} had ${accuracies[best]}`);
  assert.match(first.stdout, new RegExp(`restored the weights of epoch ${best + 1} `));
  assert.equal(other.restored, null);
});
