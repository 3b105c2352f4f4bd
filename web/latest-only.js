// The text boxes' runs (the default model, Sentiment, Your model): a keystroke while a run is in
// flight must not queue a run per keystroke, only the latest text. LatestOnly runs an async job
// on the latest value handed to it: values handed over while a job runs replace each other, and
// the last one runs next.

export class LatestOnly {
  #job;
  #running = false;
  #pending = null;
  #idle = Promise.resolve();  // resolves when the jobs under way end (idle())

  /** `job(value)`: the run of one value (its errors its own business: it should not throw). */
  constructor(job) {
    this.#job = job;
  }

  /**
   * Hands `value` over (non-null). The call that finds no job running runs jobs until no value
   * waits, and resolves then; a call made while one runs resolves at once (that one runs `value`).
   */
  async run(value) {
    this.#pending = value;
    if (this.#running) return;
    this.#running = true;
    let ended;
    this.#idle = new Promise((resolve) => { ended = resolve; });
    try {
      while (this.#pending !== null) {
        const next = this.#pending;
        this.#pending = null;
        await this.#job(next);
      }
    } finally {
      this.#running = false;
      ended();
    }
  }

  /**
   * Resolves once no job runs and no value waits (at once when idle). A caller that handed a value
   * to a running call waits here, not for a redraw: the last job's redraw can come before the
   * running call has seen that no value waits, and no redraw follows it.
   */
  idle() {
    return this.#idle;
  }
}
