// Saving and loading tfjs-layers models as files in Node with the pure-JS @tensorflow/tfjs (whose
// file:// handler comes only with @tensorflow/tfjs-node): model.json (topology + weights manifest,
// the format tf.loadLayersModel reads over http) and weights.bin beside it.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** An IOHandler for model.save(fileHandler(tf, dir)) and tf.loadLayersModel(fileHandler(tf, dir)). */
export function fileHandler(tf, dir) {
  return {
    async save(artifacts) {
      mkdirSync(dir, { recursive: true });
      const weightData = tf.io.CompositeArrayBuffer.join(artifacts.weightData);
      writeFileSync(join(dir, 'weights.bin'), Buffer.from(weightData));
      const { weightData: _, weightSpecs, ...rest } = artifacts;
      writeFileSync(join(dir, 'model.json'), JSON.stringify({
        ...rest, weightsManifest: [{ paths: ['weights.bin'], weights: weightSpecs }],
      }));
      return { modelArtifactsInfo: tf.io.getModelArtifactsInfoForJSON(artifacts) };
    },
    async load() {
      const json = JSON.parse(readFileSync(join(dir, 'model.json'), 'utf8'));
      const [manifest] = json.weightsManifest;
      const bytes = readFileSync(join(dir, manifest.paths[0]));
      const { weightsManifest: _, ...rest } = json;
      return { ...rest, weightSpecs: manifest.weights, weightData: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) };
    },
  };
}
