// Writes a few fixture cases as plain JSON (the packed-package checks run them in Node and in
// Chromium, where the repo's fixture loader is not available). Usage: node export-cases.mjs out.json
import { writeFileSync } from 'node:fs';

import { loadFixtures } from '../js/fixtures.js';

const NAMES = ['self_basic', 'kdim_vdim', 'masks_combined', 'gqa', 'large'];
const { tolerance, cases } = loadFixtures();
const plain = ({ data, shape }) => ({ dtype: data instanceof Uint8Array ? 'uint8' : 'float32', data: [...data], shape });

const picked = NAMES.map((name) => cases.find((c) => c.name === name)).map((c) => ({
  name: c.name,
  config: c.config,
  options: c.options,
  tensors: Object.fromEntries(Object.entries(c.tensors).map(([k, t]) => [k, plain(t)])),
  stateDict: Object.fromEntries(Object.entries(c.stateDict).map(([k, v]) => [k, [...v]])),
}));
writeFileSync(process.argv[2], JSON.stringify({ tolerance, cases: picked }));
