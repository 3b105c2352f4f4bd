// Conv1D's three products on typed arrays (channels last, stride 1, dilation 1), for the fast
// kernels of tfjs-kernels.js. Each output element is a dot product over contiguous memory, four
// outputs at a time so that one load of the shared operand feeds four multiply-adds (JavaScript
// loops run at a few loads per cycle; the strided, one-at-a-time loops they replace did not).
//
// dims: { rows (batch x height), inWidth, outWidth, inChannels, outChannels, filterWidth, left
// (padding before the first position) }. Layouts: x [rows, inWidth, inChannels], filter
// [filterWidth, inChannels, outChannels], y / dy [rows, outWidth, outChannels].

/** y = conv1d(x, filter). y is written whole. */
export function conv1dForward(x, filter, y, { rows, inWidth, outWidth, inChannels, outChannels, filterWidth, left }) {
  // The filter as [outChannels][filterWidth * inChannels]: a tap window of x rows is contiguous too.
  const K = filterWidth * inChannels;
  const wt = new Float32Array(outChannels * K);
  for (let t = 0; t < K; t++) for (let co = 0; co < outChannels; co++) wt[co * K + t] = filter[t * outChannels + co];
  for (let r = 0; r < rows; r++) {
    for (let ow = 0; ow < outWidth; ow++) {
      const start = ow - left;  // the input position under tap 0
      const lo = Math.max(0, -start), hi = Math.min(filterWidth, inWidth - start);
      const yAt = (r * outWidth + ow) * outChannels;
      if (hi <= lo) {
        y.fill(0, yAt, yAt + outChannels);
        continue;
      }
      const xAt = (r * inWidth + start + lo) * inChannels, wOff = lo * inChannels, n = (hi - lo) * inChannels;
      let co = 0;
      for (; co + 4 <= outChannels; co += 4) {
        const w0 = co * K + wOff, w1 = w0 + K, w2 = w1 + K, w3 = w2 + K;
        let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        for (let i = 0; i < n; i++) {
          const xv = x[xAt + i];
          s0 += xv * wt[w0 + i];
          s1 += xv * wt[w1 + i];
          s2 += xv * wt[w2 + i];
          s3 += xv * wt[w3 + i];
        }
        y[yAt + co] = s0; y[yAt + co + 1] = s1; y[yAt + co + 2] = s2; y[yAt + co + 3] = s3;
      }
      for (; co < outChannels; co++) {
        const w0 = co * K + wOff;
        let s = 0;
        for (let i = 0; i < n; i++) s += x[xAt + i] * wt[w0 + i];
        y[yAt + co] = s;
      }
    }
  }
}

/** dx = the gradient of conv1d(x, filter) with respect to x, for dy. dx is written whole. */
export function conv1dInputGradient(dy, filter, dx, { rows, inWidth, outWidth, inChannels, outChannels, filterWidth, left }) {
  dx.fill(0);
  for (let r = 0; r < rows; r++) {
    for (let ow = 0; ow < outWidth; ow++) {
      const dyAt = (r * outWidth + ow) * outChannels;
      for (let kw = 0; kw < filterWidth; kw++) {
        const iw = ow + kw - left;
        if (iw < 0 || iw >= inWidth) continue;
        const dxAt = (r * inWidth + iw) * inChannels, tap = kw * inChannels * outChannels;
        let ci = 0;
        for (; ci + 4 <= inChannels; ci += 4) {
          const w0 = tap + ci * outChannels, w1 = w0 + outChannels, w2 = w1 + outChannels, w3 = w2 + outChannels;
          let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
          for (let co = 0; co < outChannels; co++) {
            const d = dy[dyAt + co];
            s0 += d * filter[w0 + co];
            s1 += d * filter[w1 + co];
            s2 += d * filter[w2 + co];
            s3 += d * filter[w3 + co];
          }
          dx[dxAt + ci] += s0; dx[dxAt + ci + 1] += s1; dx[dxAt + ci + 2] += s2; dx[dxAt + ci + 3] += s3;
        }
        for (; ci < inChannels; ci++) {
          const w0 = tap + ci * outChannels;
          let s = 0;
          for (let co = 0; co < outChannels; co++) s += dy[dyAt + co] * filter[w0 + co];
          dx[dxAt + ci] += s;
        }
      }
    }
  }
}

/** dW = the gradient of conv1d(x, filter) with respect to the filter, for dy. dW is written whole. */
export function conv1dFilterGradient(x, dy, dW, { rows, inWidth, outWidth, inChannels, outChannels, filterWidth, left }) {
  // x as [inChannels][rows][P] with the padding as zeros (P = outWidth + filterWidth - 1: tap kw of
  // output ow reads padded position ow + kw), dy as [outChannels][rows][outWidth]: each dW element
  // is then a sum of contiguous dot products.
  const P = outWidth + filterWidth - 1;
  const xt = new Float32Array(inChannels * rows * P);
  for (let r = 0; r < rows; r++) {
    for (let j = 0; j < P; j++) {
      const iw = j - left;
      if (iw < 0 || iw >= inWidth) continue;
      const from = (r * inWidth + iw) * inChannels;
      for (let ci = 0; ci < inChannels; ci++) xt[(ci * rows + r) * P + j] = x[from + ci];
    }
  }
  const dyt = new Float32Array(outChannels * rows * outWidth);
  const plane = rows * outWidth;
  for (let p = 0; p < plane; p++) for (let co = 0; co < outChannels; co++) dyt[co * plane + p] = dy[p * outChannels + co];
  for (let kw = 0; kw < filterWidth; kw++) {
    for (let ci = 0; ci < inChannels; ci++) {
      const out = (kw * inChannels + ci) * outChannels, xPlane = ci * rows * P + kw;
      let co = 0;
      for (; co + 4 <= outChannels; co += 4) {
        const d0 = co * plane, d1 = d0 + plane, d2 = d1 + plane, d3 = d2 + plane;
        let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        for (let r = 0; r < rows; r++) {
          const xr = xPlane + r * P, dr = r * outWidth;
          for (let ow = 0; ow < outWidth; ow++) {
            const xv = xt[xr + ow];
            s0 += xv * dyt[d0 + dr + ow];
            s1 += xv * dyt[d1 + dr + ow];
            s2 += xv * dyt[d2 + dr + ow];
            s3 += xv * dyt[d3 + dr + ow];
          }
        }
        dW[out + co] = s0; dW[out + co + 1] = s1; dW[out + co + 2] = s2; dW[out + co + 3] = s3;
      }
      for (; co < outChannels; co++) {
        const d0 = co * plane;
        let s = 0;
        for (let r = 0; r < rows; r++) for (let ow = 0; ow < outWidth; ow++) s += xt[xPlane + r * P + ow] * dyt[d0 + r * outWidth + ow];
        dW[out + co] = s;
      }
    }
  }
}
