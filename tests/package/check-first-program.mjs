// Runs the README's first program (first.mjs, written by readme-examples.mjs) in the current
// directory, a project that installed the packed tarball, and checks what it prints: the shapes,
// and causal weights for token 1 (two keys seen, summing to 1, the later two zero).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';

const printed = execFileSync(process.execPath, ['first.mjs'], { encoding: 'utf8' });
process.stdout.write(printed.replace(/^/gm, '  | '));
const lines = printed.trim().split('\n');
assert.equal(lines[0], '[ 1, 4, 8 ]', 'the output shape');
assert.equal(lines[1], '[ 1, 4, 4 ]', 'the weights shape');
const row = lines.slice(2).join(' ').replace(/Float32Array\(\d+\)/, '').match(/-?\d+(\.\d+)?(e-?\d+)?/g).map(Number);
assert.equal(row.length, 4, `token 1's weights: ${lines.slice(2).join(' ')}`);
assert.ok(row[0] > 0 && row[1] > 0, 'token 1 attends to tokens 0 and 1');
assert.deepEqual(row.slice(2), [0, 0], 'and not to the later tokens (causal)');
assert.ok(Math.abs(row[0] + row[1] - 1) < 1e-6, 'its weights sum to 1');
console.log('the README\'s first program runs as pasted and prints what it says');
