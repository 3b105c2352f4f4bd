// The trainer's non-gradient parts: seeded reproducibility, the data tasks and their mix, the
// settings' checks, the head scores on hand-made attention patterns, and the worker-side session
// (pause, resume, export, ablation) run in Node.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { readSafetensors } from '../../bindings/js/index.js';
import { describeHeads, inductionScores, textScores } from '../../web/training/head-scores.js';
import { Random } from '../../web/training/random.js';
import { TrainingSession } from '../../web/training/session.js';
import { checkSettings } from '../../web/training/settings.js';
import { bracketPairs, SequenceSource, trainingText } from '../../web/training/tasks.js';
import { Trainer } from '../../web/training/trainer.js';

const vocab = JSON.parse(await readFile(new URL('../../web/model/vocab.json', import.meta.url), 'utf8'));
const SMALL = { dModel: 16, numHeads: 2, numLayers: 2, batchSize: 2, seqLen: 16, evalEvery: 2 };

test('Random: the same seed gives the same sequence; integers stay in range', () => {
  const a = new Random(7);
  const b = new Random(7);
  const c = new Random(8);
  const xs = Array.from({ length: 20 }, () => a.uint32());
  assert.deepEqual(xs, Array.from({ length: 20 }, () => b.uint32()));
  assert.notDeepEqual(xs, Array.from({ length: 20 }, () => c.uint32()));
  const r = new Random(1);
  const counts = new Array(6).fill(0);
  for (let i = 0; i < 6000; i++) counts[r.int(2, 7) - 2] += 1;
  for (const n of counts) assert.ok(n > 850 && n < 1150, `randint(2, 7) counts ${counts}`);
  const normals = Array.from({ length: 4000 }, () => r.normal());
  const mean = normals.reduce((s, v) => s + v, 0) / normals.length;
  const variance = normals.reduce((s, v) => s + (v - mean) ** 2, 0) / normals.length;
  assert.ok(Math.abs(mean) < 0.06 && Math.abs(variance - 1) < 0.08, `mean ${mean}, variance ${variance}`);
  assert.throws(() => new Random(1.5), /Random: seed must be an integer, got 1.5/);
});

test('trainingText: the requested length; copy 1 gives one random block repeated; brackets balance in bracket-only text', () => {
  const rng = new Random(3);
  for (let i = 0; i < 20; i++) assert.equal(trainingText(rng, 63).length, 63);
  const copy = trainingText(new Random(4), 63, { copy: 1, repeat: 0, bracket: 0, sentence: 1 });
  const block = copy.slice(0, copy.indexOf(' ') + 1);
  assert.match(block, /^[a-z]{8,28} $/);
  assert.equal(copy, block.repeat(10).slice(0, 63));
  const brackets = trainingText(new Random(5), 200, { copy: 0, repeat: 0, bracket: 1, sentence: 0 });
  assert.match(brackets, /^[([{<]/);
  const pairs = bracketPairs([brackets], 200);
  assert.ok(pairs.length >= 3, `${pairs.length} pairs in ${brackets}`);
  for (const [b, query, opener] of pairs) {
    assert.equal(b, 0);
    assert.equal(')]}>'.indexOf(brackets[query]), '([{<'.indexOf(brackets[opener - 1]), `${brackets[opener - 1]}...${brackets[query]}`);
  }
  assert.throws(() => trainingText(new Random(1), 10, { copy: 0, repeat: 0, bracket: 0, sentence: 0 }) && checkSettings({ mix: { copy: 0, repeat: 0, bracket: 0, sentence: 0 } }),
    /mix: repeat, bracket and sentence cannot all be 0 unless copy is 1/);
});

test('SequenceSource: <bos> first, seqLen tokens; the user\'s text is cut into windows of it', () => {
  const source = new SequenceSource({ vocab, rng: new Random(1), seqLen: 12, text: 'abcdefghijklmnopqrstuvwxyz' });
  const { ids } = source.batch(3);
  assert.equal(ids.length, 36);
  const letter = (id) => vocab.tokens[id];
  for (let b = 0; b < 3; b++) {
    assert.equal(ids[b * 12], vocab.bos);
    const text = Array.from(ids.subarray(b * 12 + 1, (b + 1) * 12), letter).join('');
    assert.ok('abcdefghijklmnopqrstuvwxyz'.includes(text), text);
  }
  assert.throws(() => new SequenceSource({ vocab, rng: new Random(1), seqLen: 64, text: 'too short' }),
    /text: your text has 9 characters; it needs at least seqLen \(64\)/);
});

test('checkSettings: defaults, and errors that name the setting', () => {
  const s = checkSettings({ seed: 9 });
  assert.equal(s.seed, 9);
  assert.equal(s.learningRate, 1e-2);
  assert.deepEqual([s.batchSize, s.seqLen, s.dModel, s.numHeads, s.numLayers], [16, 64, 64, 4, 2]);
  assert.throws(() => checkSettings({ batchSize: 0 }), /settings\.batchSize must be an integer in \[1, 128\], got 0/);
  assert.throws(() => checkSettings({ seqLen: 1000 }), /settings\.seqLen must be an integer in \[8, 256\], got 1000/);
  assert.throws(() => checkSettings({ learningRate: -1 }), /settings\.learningRate must be a number in \[0, 1\], got -1/);
  assert.throws(() => checkSettings({ dModel: 30, numHeads: 4 }), /settings\.dModel \(30\) must be even and a multiple of numHeads \(4\)/);
  assert.throws(() => checkSettings({ lr: 1 }), /settings: unknown setting 'lr'/);
  assert.throws(() => checkSettings({ schedule: 'cosine' }), /settings\.schedule must be 'constant' or 'onecycle', got cosine/);
  assert.throws(() => checkSettings({ mix: { copy: 2 } }), /mix\.copy is a probability in \[0, 1\], got 2/);
});

test('head scores: a pure previous-token head scores 1 on previous token, a pure induction head 1 on induction', () => {
  const [B, H, L] = [2, 2, 7];  // head 0: previous token (row 0 on itself); head 1: all on <bos>
  const w = new Float32Array(B * H * L * L);
  for (let b = 0; b < B; b++) {
    for (let i = 0; i < L; i++) {
      w[((b * H + 0) * L + i) * L + Math.max(0, i - 1)] = 1;
      w[((b * H + 1) * L + i) * L] = 1;
    }
  }
  const t = textScores(w, B, H, L, [[0, 4, 2], [1, 5, 4]]);
  assert.deepEqual(t.previousToken, [1, 1 / 6]);  // row 1: the previous token is <bos>
  assert.deepEqual(t.bos, [1 / 6, 1]);  // row 1's previous token is <bos>
  assert.deepEqual(t.bracket, [0.5, 0]);  // the second pair's opener is the query's previous token
  const period = 3;
  const L2 = 2 * period + 1;
  const v = new Float32Array(1 * 1 * L2 * L2);
  for (let q = period + 1; q <= 2 * period; q++) v[q * L2 + q - period + 1] = 1;
  assert.deepEqual(inductionScores(v, 1, 1, L2), [1]);
  const described = describeHeads([{ layer: 1, head: 0, previousToken: 0.1, induction: 0.4, bracket: 0.1, bos: 0.3 },
    { layer: 1, head: 1, previousToken: 0.1, induction: 0.1, bracket: 0.1, bos: 0.3 }]);
  assert.equal(described[0].role, 'induction');
  assert.equal(described[0].scores.previous_token, 0.1);
  assert.equal(described[1].role, 'mixed');
});

test('Trainer: the same seed and settings give the same losses; another seed does not; the loss falls', () => {
  const run = (seed) => {
    const trainer = new Trainer({ vocab, settings: { ...SMALL, seed, learningRate: 0.01 } });
    const losses = Array.from({ length: 6 }, () => trainer.trainStep().loss);
    trainer.dispose();
    return losses;
  };
  const a = run(1);
  assert.deepEqual(run(1), a);
  assert.notDeepEqual(run(2), a);
  assert.ok(a.at(-1) < a[0], `${a}`);
});

test('TrainingSession: trains to `steps`, pauses, resumes with a new learning rate, exports a loadable .safetensors', async () => {
  const session = new TrainingSession({ mha: null, vocab });
  const messages = [];
  const yieldNow = () => new Promise((resolve) => { setImmediate(resolve); });
  const done = await session.train({ settings: { ...SMALL, steps: 4 } }, (m) => messages.push(m), yieldNow);
  assert.equal(done.step, 4);
  assert.equal(done.running, false);
  assert.equal(done.evaluatedAt, 4);
  assert.equal(done.headScores.length, 4);
  assert.deepEqual(messages.flatMap((m) => m.newLosses.map(([step]) => step)), [1, 2, 3, 4]);
  assert.ok(messages[0].probe.layers.length === 2, 'the first message carries the probe text\'s attention');

  const running = session.train({ settings: { steps: 1000, learningRate: 0.002 } }, () => {}, yieldNow);
  await yieldNow();
  await yieldNow();
  session.pause();
  const paused = await running;
  assert.ok(paused.step > 4 && paused.step < 1000, `paused at ${paused.step}`);
  assert.equal(paused.settings.learningRate, 0.002);
  await assert.rejects(session.train({ settings: { seqLen: 32 } }, () => {}, yieldNow), /train: seqLen cannot change during a run; press Reset first/);

  const { tensors, metadata } = readSafetensors(session.exportWeights());
  assert.deepEqual(tensors['layers.0.in_proj_weight'].shape, [48, 16]);
  assert.equal(metadata.trainedSteps, String(paused.step));
  assert.deepEqual(Array.from(tensors['unembed.bias'].data), Array.from(session.trainer.params['unembed.bias']));
  const ablated = session.ablate({ layer: 1, head: 1, ablated: true });
  assert.deepEqual(ablated.ablated, [{ layer: 1, head: 1 }]);
  assert.notEqual(ablated.heldOutLoss, paused.heldOutLoss);
  assert.throws(() => new TrainingSession({ mha: null, vocab }).exportWeights(), /export: nothing trained yet/);
  session.trainer.dispose();
});

test('Trainer on the user\'s text: trains on its first nine tenths and holds out the last tenth', () => {
  const text = 'abcdefgh '.repeat(40) + 'zzzzzzzzz '.repeat(4);  // the last tenth is all z
  const trainer = new Trainer({ vocab, settings: { ...SMALL, text } });
  try {
    const seen = new Set();
    for (let i = 0; i < 20; i++) for (const id of trainer.nextBatch().ids) seen.add(vocab.tokens[id]);
    assert.ok(!seen.has('z'), 'no training window reaches the held-out tenth');
    const { headScores, heldOutLoss } = trainer.evaluate();
    assert.equal(headScores.length, 4);
    assert.ok(headScores.every((h) => h.bracket === 0), 'no brackets in the held-out text');
    assert.ok(Number.isFinite(heldOutLoss));
  } finally {
    trainer.dispose();
  }
});
