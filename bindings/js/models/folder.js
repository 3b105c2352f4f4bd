// loadModel's Node helper: a checkpoint folder's files by its path (Node reads them through the
// "#platform" import; a browser has no paths: there, give File objects to loadModel).
import { readCheckpointFolder } from '#platform';
import { loadModel } from './hooked-model.js';

/** loadModel() on the .json and .safetensors files of the folder at `path` (Node only). */
export async function loadModelFromFolder(mha, path, options = {}) {
  if (typeof path !== 'string') throw new TypeError(`loadModelFromFolder: path must be a folder's path (a string), got ${typeof path}`);
  return loadModel(mha, await readCheckpointFolder(path), options);
}
