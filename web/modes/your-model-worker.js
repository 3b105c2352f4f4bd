// The worker's side of the Your model mode (issue 43; web/modes/your-model.js is the page's side):
// its messages, answered by the worker context's Your model session (web/your-model/session.js):
//   modelLoad (progress), modelRun, modelGenerate (progress), modelCancel
// No DOM.

/** The Your model mode's messages, on `context` (a WorkerContext). */
export function yourModelWorker(context) {
  const session = context.yourModel;
  return {
    modelLoad: (args, progress) => session.load(args, progress),
    modelRun: (args) => session.run(args),
    modelGenerate: (args, progress) => session.generate(args, progress),
    modelCancel: () => session.cancel(),
  };
}
