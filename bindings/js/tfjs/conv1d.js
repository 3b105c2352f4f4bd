// Conv1D's three products on typed arrays (channels last, stride 1, dilation 1), for the fast
// kernels of tfjs-kernels.js. Each output element is a dot product over contiguous memory, four
// outputs at a time so that one load of the shared operand feeds four multiply-adds (JavaScript
// loops run at a few loads per cycle; the strided, one-at-a-time loops they replace did not).
//
// dims: { rows (batch x height), inWidth, outWidth, inChannels, outChannels, filterWidth, left
// (padding before the first position) }. Layouts: x [rows, inWidth, inChannels], filter
// [filterWidth, inChannels, outChannels], y / dy [rows, outWidth, outChannels].
import { dotRows } from '../core/dot-rows.js';

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
      const xAt = (r * inWidth + start + lo) * inChannels;
      dotRows(x, xAt, wt, lo * inChannels, K, (hi - lo) * inChannels, y, yAt, outChannels, false);
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
        const dxAt = (r * inWidth + iw) * inChannels;
        dotRows(dy, dyAt, filter, kw * inChannels * outChannels, outChannels, outChannels, dx, dxAt, inChannels, true);
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
