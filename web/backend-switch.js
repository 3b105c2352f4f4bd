// The header's backend line and switch: what runs the page (wasm or WebGPU, on which adapter), the
// modes that stay on wasm and why, and the <select> that moves the page to the other backend. The
// worker decides (web/backends.js); this shows its answer, and main.js redraws the page on it.

const MODE_NAMES = { default: 'Default model', custom: 'Your layer', generate: 'Generate', train: 'Train', steps: 'Steps', sentiment: 'Sentiment' };

export class BackendSwitch {
  #worker;
  #$;
  #message;  // (text | null, kind) => main.js's message line
  #redraw;   // async (backends) => main.js redraws the source shown on them (throws if its run failed)
  /** The worker's backends (web/backends.js info()): chosen, available, adapter, note, build, modes. */
  backends = null;

  constructor({ worker, $, message, redraw }) {
    this.#worker = worker;
    this.#$ = $;
    this.#message = message;
    this.#redraw = redraw;
    $('backend-switch').addEventListener('change', () => this.switchTo($('backend-switch').value).catch(() => {}));
    // The worker changed backend by itself (a lost device): say why and redraw.
    worker.onNotice = (backends) => {
      message(backends.note, 'info');
      this.#changed(backends);
    };
  }

  /** The backend the page runs on ('webgpu' | 'wasm'), or null before the model is loaded. */
  get chosen() { return this.backends?.chosen ?? null; }

  /** Shows the worker's backends (its load result's, or a change's). */
  show(backends) {
    this.backends = backends;
    this.render();
  }

  async #changed(backends) {
    this.show(backends);
    await this.#redraw(backends);
  }

  /** Runs the page on 'webgpu' or 'wasm' from now on; the text, generated tokens and training stay. */
  async switchTo(backend) {
    try {
      await this.#changed(await this.#worker.request('backend', { backend }));
    } catch (error) {
      this.#message(`Could not switch to ${backend}: ${error.message}`);
      this.render();
      throw error;
    }
  }

  /** The header's backend line: what runs, on which adapter, the modes that stay on wasm and why, and the switch. */
  render() {
    const $ = this.#$;
    const b = this.backends;
    if (!b) return;
    const onGpu = b.chosen === 'webgpu' && b.available;
    const gpuName = b.adapter ? `${b.adapter.name}${b.adapter.isFallbackAdapter ? ' (software)' : ''}` : null;
    const wasmName = `wasm SIMD · ${b.build.threads} thread${b.build.threads === 1 ? '' : 's'}`;
    $('backend-text').innerHTML = '';
    $('backend-text').append(Object.assign(document.createElement('b'), { textContent: onGpu ? `WebGPU · ${gpuName}` : wasmName }));
    const stays = Object.entries(b.modes).filter(([, m]) => m.why).map(([mode, m]) => `${MODE_NAMES[mode]}: wasm (${m.why})`);
    $('backend-note').textContent = [b.note, ...stays].filter(Boolean).join(' · ');
    const select = $('backend-switch');
    select.options[0].textContent = wasmName;
    select.options[1].textContent = gpuName ? `WebGPU · ${gpuName}` : 'WebGPU (not available)';
    select.options[1].disabled = !b.adapter;  // (after a loss the switch asks for a new device)
    select.disabled = !b.adapter;
    select.value = b.chosen;
  }
}
