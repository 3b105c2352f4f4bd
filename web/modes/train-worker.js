// The worker's side of the Train mode (web/modes/train.js is the page's side): the session
// (web/training/session.js) owns the trainer; its loop yields to the other messages between steps.
//   train (progress: steps, evaluations, probes), trainPause, trainAblate, trainProbe { text },
//   trainExport -> { bytes }, trainUse -> the trained weights become the default model
// Each step asks which backend runs Train (the switch may move it mid-run); a device lost mid-step
// moves the page to wasm, and the step runs again there from the unchanged training state. No DOM.
import { readSafetensors } from '../../bindings/js/index.js';
import { DemoModel } from '../model.js';
import { describeHeads } from '../training/head-scores.js';
import { TrainingSession } from '../training/session.js';
import { buffersOf, yieldToMessages } from '../worker-context.js';

/** The Train mode's messages, on `context` (a WorkerContext). */
export function trainWorker(context) {
  let training = null;  // made on the mode's first message
  const session = () => (training ??= new TrainingSession({
    mha: context.mha, vocab: context.model.vocab,
    gpu: () => (context.backends.backendFor('train') === 'webgpu' ? context.backends.gpu : null),
    lose: (why) => context.backends.lose(why),
  }));
  const probeBuffers = (message) => (message.probe ? buffersOf(message.probe.layers) : []);

  /** "Use these weights": the trained model becomes the default model (the text box, Generate). */
  function useTrainedWeights() {
    const { evaluation, trainer } = session();
    if (!trainer) throw new Error('use weights: nothing trained yet');
    context.replaceModel(new DemoModel(context.mha, readSafetensors(session().exportWeights()), context.model.vocab));
    return {
      step: trainer.step,
      config: context.modelConfig(),
      heads: { heads: evaluation ? describeHeads(evaluation.headScores) : [] },
    };
  }

  return {
    train: (args, progress) => session().train(args, (message) => progress(message, probeBuffers(message)), yieldToMessages),
    trainPause: () => session().pause(),
    trainAblate: (args) => session().ablate(args),
    trainProbe: ({ text }) => session().probe(text),
    trainExport: () => ({ bytes: session().exportWeights() }),
    trainUse: useTrainedWeights,
  };
}
