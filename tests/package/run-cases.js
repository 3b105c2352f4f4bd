// Runs exported fixture cases (export-cases.mjs) through an installed mha-wasm module and reports
// each case's worst error against PyTorch, in units of the tolerance (<= 1 passes).
// Plain ES module: the Node checks and the Vite-built page both import it.

const typed = ({ dtype, data, shape }) => ({ data: dtype === 'uint8' ? Uint8Array.from(data) : Float32Array.from(data), shape });

export function runCases(mha, { tolerance, cases }) {
  return cases.map((c) => {
    const { embedDim, numHeads, kdim, vdim, bias, numKvHeads, scale } = c.config;
    const layer = new mha.MultiHeadAttention({ embedDim, numHeads, kdim, vdim, bias, numKvHeads, ...(scale === undefined ? {} : { scale }) });
    try {
      layer.loadStateDict(Object.fromEntries(Object.entries(c.stateDict).map(([k, v]) => [k, Float32Array.from(v)])));
      const t = Object.fromEntries(Object.entries(c.tensors).map(([k, v]) => [k, typed(v)]));
      const { output } = layer.forward(t.query, t.key ?? null, t.value ?? null, {
        ...c.options, ...(t.keyPaddingMask ? { keyPaddingMask: t.keyPaddingMask } : {}), ...(t.attnMask ? { attnMask: t.attnMask } : {}),
      });
      const want = t.output.data;
      let ratio = output.data.length === want.length ? 0 : Infinity;
      for (let i = 0; i < want.length; i++) {
        const d = Math.abs(output.data[i] - want[i]) / (tolerance.absolute + tolerance.relative * Math.abs(want[i]));
        ratio = Math.max(ratio, Number.isNaN(d) ? Infinity : d);
      }
      return { name: c.name, ratio, sameShape: JSON.stringify(output.shape) === JSON.stringify(t.output.shape) };
    } finally {
      layer.dispose();
    }
  });
}

/** Throws unless every case matched. */
export function assertAllPass(label, results) {
  const bad = results.filter((r) => !(r.ratio <= 1) || !r.sameShape);
  if (bad.length) throw new Error(`${label}: cases off PyTorch: ${JSON.stringify(bad)}`);
  const worst = Math.max(...results.map((r) => r.ratio));
  return `${label}: ${results.length} fixture cases match PyTorch (worst error ${worst.toFixed(3)} of the tolerance)`;
}
