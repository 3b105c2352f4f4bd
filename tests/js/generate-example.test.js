// examples/generate.mjs: greedy generation with the demo model through KV caches gives the same
// tokens as recomputing the whole text each step (the example exits 1 otherwise).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';

test('examples/generate.mjs: cached and recomputed generation agree', () => {
  const script = new URL('../../examples/generate.mjs', import.meta.url).pathname;
  const out = execFileSync(process.execPath, [script, 'the kelu sat on the mat. the kelu', '80'], { encoding: 'utf8' });
  assert.match(out, /^generated: ".{80}"$/m);
  assert.match(out, /with a KV cache: {3}80 tokens in \d+ ms \(\d+ tokens\/s, the prompt included\)/);
  assert.match(out, /^the same tokens both ways$/m);
});
