// window.__mhaDemo: the documented hook tests use to drive the page and read the numbers behind
// its pictures (docs/demo.md; tests/browser/*, tests/webgpu/demo-*). It works through `page`, the
// facade main.js builds: the page's state, its modes, and the few actions below need.

/**
 * The hook over `page`: { $, worker, state, modes: { generate, sentiment, train, steps }, backends (BackendSwitch),
 * rowOf(layer, head, i), layerShape(), geometry() -> { heatmap, lines }, render(), nextRender(), runText() -> run number }.
 */
export function testHook(page) {
  const { $, state, modes: { generate, sentiment, train, steps, yourModel, patching }, backends, nextRender } = page;
  return {
    /** Resolves once the model is loaded and the first view is drawn (main.js sets it). */
    ready: null,
    /** Sets the text box and resolves when the page has drawn the result. */
    async setText(text) {
      if (state.source === 'model') return yourModel.setText(text);
      if (state.source === 'patching') return patching.setInputs({ clean: text });  // (the clean text)
      $('text').value = text;
      const run = page.runText();
      // An earlier run (or another view's result of the same text) may be drawn first: wait for this call's run.
      while (state.source !== 'default' || !(state.result?.run >= run) || state.result.text !== text) await nextRender();
    },
    /** The weights the page shows: [L * L] row-major (query rows), a copy. head = number or 'mean'. */
    getWeights(layer, head) {
      const L = state.result.labels.length;
      return Array.from({ length: L }, (_, i) => Array.from(page.rowOf(layer, head, i))).flat();
    },
    /** The selected layer's attention output [L * E]. */
    getOutput(layer) {
      const { L, E } = page.layerShape();
      return Array.from(state.result.layers[layer].output.subarray(0, L * E));
    },
    /** What is on the page now. */
    getState() {
      const { result } = state;
      return {
        source: state.source,
        /** The backend the page runs on ('webgpu' | 'wasm'); modes WebGPU cannot run yet stay on wasm (backends.modes). */
        backend: backends.chosen,
        /** The WebGPU adapter's description (vendor and architecture where the browser gives none), or null without one. */
        adapter: backends.backends?.adapter?.name ?? null,
        /** { chosen, available, adapter, note, timings, build, modes: { default|custom|generate|train|steps|sentiment: { backend, why } } } */
        backends: backends.backends ? structuredClone(backends.backends) : null,
        /** The backend that computed the result shown. */
        ranOn: state.result?.backend ?? null,
        build: state.info?.build ?? null,
        ids: result?.ids ?? null,
        labels: result?.labels ?? null,
        numLayers: result?.layers.length ?? 0,
        config: result?.config ?? null,
        causal: result?.causal ?? null,
        padding: result?.padding ? Array.from(result.padding) : null,
        prediction: result?.prediction ?? null,
        wasmMs: result?.wasmMs ?? null,
        renderMs: state.renderMs,
        selected: { ...state.selected },
        mode: state.mode,
        view: state.view,
        focus: state.focus,
        locked: state.locked,
        renders: state.renders,
        /**
         * Steps view: { layer, head, query, scale, q: [Dh], keys: [S][Dh], scores: [S], logits: [S], pattern: [S],
         * values: [S][Dv], z: [Dv], output: [E] } (-Infinity where blocked), or null when another view is shown.
         */
        steps: state.view === 'steps' && steps.steps ? structuredClone(steps.steps) : null,
        /** Steps view: { code (tab), hovered (step id or null), tooltip (text or null), ablated, patched, patchText, patchFile (Your layer's second embeddings' name) }. */
        stepsView: { ...steps.hookState(), tooltip: $('steps-tooltip').hidden ? null : $('steps-tooltip').textContent },
        /** Generate: { running, cacheLength (tokens the worker's caches hold), generated, useCache, changed (generated with the Steps view's ablated or patched heads), tokensPerSecond, msPerToken, attentionMsPerToken, wallMs } */
        generation: generate.state(),
        /** Sentiment mode: { label, probability, words } of the sentence shown, or null. */
        sentiment: result?.sentiment ?? null,
        /**
         * Train mode: { running, step, steps, loss, heldOutLoss, tokensPerSecond, stepsPerSecond, trainingSeconds,
         * headScores: [{ layer, head, previousToken, induction, bracket, bos }], ablated, backend, settings,
         * ranOn: the latest step's backend ('wasm' | 'webgpu'), rates: { wasm?, webgpu?: { stepsPerSecond, tokensPerSecond } } } or null.
         */
        training: train.status ? structuredClone(train.status) : null,
        /**
         * Sentiment tab's "Train in this browser": { running, phase, backend, threads, settings, epoch, epochs, batch,
         * batchesPerEpoch, progress, loss, accuracy, history: { loss, accuracy, valLoss, valAccuracy, seconds } (per epoch),
         * curves: { x (epochs), loss, accuracy } (per batch, running means), stopped, finished, error,
         * framesDuringTraining, inputsDuringTraining } or null before the first run.
         */
        sentimentTraining: sentiment.training.status ? structuredClone(sentiment.training.status) : null,
        /** Your model: what was loaded ({ family, layers, heads, ... }) and the logit lens, or null on another source. */
        model: state.source === 'model' && yourModel.model ? { ...yourModel.model } : null,
        ...(state.source === 'model' ? { lens: structuredClone(state.result?.lens ?? null) } : {}),
        /** Your model on an encoder (BERT, RoBERTa): the prediction's title and [{ position, token, top }] per [MASK] / <mask>. */
        ...(state.source === 'model' && state.result?.encoder
          ? { predictionTitle: $('prediction-title').textContent, fillMask: structuredClone(state.result.fillMask) } : {}),
        /**
         * Patching: { error, running: { over, done, total } | null, prepared: { clean, corrupted: { text, ids, tokens },
         * refused, answer, wrong: { id, token, chosen }, logitDiff: { clean, corrupted }, attribution: { heads, mlps,
         * accumulated }, scores: { previous_token, duplicate_token, induction } } | null, sweeps: { over: { shape, data } },
         * figures: [ids drawn], json: what the JSON button saves }; each { shape, data } with plain arrays.
         */
        patching: patching.hookState(),
      };
    },
    /** Your model: loads a checkpoint (File objects or { name, bytes }); resolves when its first view is drawn. */
    loadModel: (files) => yourModel.load(files),
    /** Your model: greedy generation of `count` tokens; resolves with { generated, ids, tokensPerSecond, cancelled } once drawn. */
    async generateModel(count) {
      $('model-gen-count').value = String(count);
      return yourModel.generate();
    },
    /**
     * Patching: opens the tab and sets its inputs ({ clean, corrupted, answer, wrong }: texts, tokens
     * as text or '#id', '' for the default); resolves once drawn with getState().patching.
     */
    async setPatching(inputs = {}) {
      await patching.setInputs(inputs);
      return patching.hookState();
    },
    /**
     * Patching: runs a sweep ('head_out' | 'resid_pre' | 'attn_out' | 'mlp_out' | 'all'; default the
     * select's) as its button does; resolves with { over, shape, data } (plain) once drawn, or { cancelled: true }.
     */
    async runPatching(over) {
      const result = await patching.runSweep(over);
      return result?.data ? { over: result.over, shape: [...result.shape], data: Array.from(result.data) } : result;
    },
    /** Patching: the Cancel button. */
    cancelPatching: () => patching.cancel(),
    /** Patching: where cell (row, col) of a figure ('head_out', 'resid_pre', ..., 'attribution', 'score-induction', ...) is drawn, in page coordinates. */
    patchingPoint: (figure, row, col) => patching.cellPoint(figure, row, col),
    /** Your model: the whole state as the State JSON button saves it. */
    modelStateJson: () => structuredClone(yourModel.stateJson()),
    /** Resolves when the running generation (if any) has ended and been drawn. */
    async generationDone() {
      while (generate.running) await nextRender();
    },
    /** Line view: where token `index` of the 'query' or 'key' column is, in page coordinates (null if not shown). */
    linePoint(side, index) {
      const p = page.geometry().lines?.point(side, index);
      if (!p || state.view !== 'lines') return null;
      const rect = $('lines').getBoundingClientRect();
      return { x: rect.left + p.x, y: rect.top + p.y };
    },
    /** Heatmap view: the centre of cell (query, key), in page coordinates. */
    heatmapPoint(query, key) {
      const g = page.geometry().heatmap;
      const rect = $('heatmap').getBoundingClientRect();
      return { x: rect.left + g.margin + (key + 0.5) * g.cell, y: rect.top + g.margin + (query + 0.5) * g.cell };
    },
    /** Resolves after the next redraw. */
    nextRender,
    /** Runs the page on 'webgpu' or 'wasm' (the header's switch); resolves once it has switched and redrawn. */
    setBackend: (backend) => backends.switchTo(backend),
    /** Test only: destroys the Sentiment training worker's WebGPU device (tfjs'); resolves once training runs on wasm again. */
    async loseSentimentTrainingDevice() {
      await sentiment.training.testLoseDevice();
    },
    /** Test only: destroys the worker's WebGPU device (as a driver reset would); resolves once the page runs on wasm again. */
    async loseDevice() {
      await page.worker.request('testLoseDevice', {});
      while (backends.backends.available) await nextRender();
    },
    /**
     * Opens the Steps view on layer `layer`, head `head` and query token `query` (default: the last
     * token); resolves with getState().steps once it is drawn.
     */
    async showSteps({ layer = 0, head = 0, query = null } = {}) {
      state.selected = { layer, head };
      state.mode = 'head';
      document.querySelector('input[name=mode][value=head]').checked = true;
      steps.query = query;
      steps.steps = null;
      const drawn = () => steps.steps && steps.steps.layer === layer && steps.steps.head === head
        && (query === null || steps.steps.query === query);
      if (state.view !== 'steps') $('view-steps').click();
      else page.render();
      while (!drawn()) await nextRender();
      return structuredClone(steps.steps);
    },
    /** Steps view: the centre of cell (row, column) of step `id` (web/steps-view.js CHAIN), in page coordinates. */
    stepsPoint(id, row, column) {
      return steps.view.cellPoint(id, row, column);
    },
    /** Opens the Train tab and starts (or resumes) training with settings ({ seed, learningRate, batchSize, seqLen, steps, ... }); resolves once it runs. */
    async startTraining(settings = {}) {
      if (state.source !== 'train') $('source-train').click();
      const fresh = train.status === null || Object.keys(settings).some((k) => k !== 'learningRate' && k !== 'batchSize' && k !== 'steps');
      await train.start(settings, { reset: fresh && !train.running });
    },
    /** The Train view's curves (what Curves JSON saves): { settings, backend, steps, losses, evaluations }. */
    trainingCurves() {
      return structuredClone(train.curvesJson());
    },
    /** Pauses training; resolves with getState().training once the worker has stopped. */
    async pauseTraining() {
      await train.pause();
      return structuredClone(train.status);
    },
    /** Ablates (ablated false: restores) a head of the model being trained; resolves with the new training state. */
    async ablateHead(layer, head, ablated = true) {
      await train.ablate(layer, head, ablated);
      return structuredClone(train.status);
    },
    /** The trained weights as .safetensors bytes (what Export .safetensors downloads), as a plain array. */
    async trainedWeights() {
      return Array.from(await train.weightsFile());
    },
    /**
     * Opens the Sentiment tab and trains the classifier from a fresh initialisation with settings
     * ({ epochs, learningRate, batchSize, samples, validationSplit, seed, backend: 'wasm' | 'cpu' | 'webgpu' (default: the
     * page's backend, 'webgpu' when the page runs on WebGPU, else 'wasm') }); resolves once it runs.
     */
    async startSentimentTraining(settings = {}) {
      if (state.source !== 'sentiment') $('source-sentiment').click();
      await sentiment.training.start(settings);
    },
    /** Stops the classifier's training after its current batch; resolves with getState().sentimentTraining once its weights classify. */
    async stopSentimentTraining() {
      return structuredClone(await sentiment.training.stop());
    },
    /** Resolves with getState().sentimentTraining when the run has ended and its weights classify. */
    async sentimentTrainingDone() {
      return structuredClone(await sentiment.training.done());
    },
    /** "Use these weights in Generate": the default model becomes the trained one. */
    async useTrainedWeights() {
      return train.useWeights();
    },
  };
}
