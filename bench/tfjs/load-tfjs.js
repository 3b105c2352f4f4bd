// Loads tfjs (pure JS, as the package's users have it) on one backend in Node, without its greeting.
/** The tfjs namespace with `backend` ('cpu' or 'wasm') ready. */
export async function loadTfjs(backend) {
  const { log, warn } = console;
  console.log = console.warn = () => {};  // tfjs greets Node users on load and on the first tensor
  try {
    const tf = await import('@tensorflow/tfjs');
    if (backend === 'wasm') await import('@tensorflow/tfjs-backend-wasm');
    if (!(await tf.setBackend(backend))) throw new Error(`loadTfjs: backend '${backend}' failed to initialize`);
    tf.tensor([0]).dispose();
    return tf;
  } finally {
    Object.assign(console, { log, warn });
  }
}
