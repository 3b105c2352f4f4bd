// Appends float32 rows to an f16 KV cache: per batch row b, `count` values of src (from b *
// count) become halves at elements first + b * batch_stride .. + count of the cache, 2 per u32
// (element e in the low half of word e / 2 when e is even). One invocation per word, which keeps
// the halves of that word outside the range (a row need not start on a word). Dispatch: flat
// (flat_main.wgsl) over the words per batch row + 1, z = B.

struct Params { first: u32, count: u32, batch_stride: u32, pad0: u32 }

@group(0) @binding(0) var<storage, read> src: array<f32>;
@group(0) @binding(1) var<storage, read_write> cache: array<u32>;
@group(0) @binding(2) var<uniform> params: Params;

#include "half_bits.wgsl"

#include "flat_main.wgsl"

// Word w (from the first word holding batch row b's range) of batch row b.
fn element(w: u32, b: u32) {
  let begin = params.first + b * params.batch_stride;
  let end = begin + params.count;
  let word = begin / 2u + w;
  if (params.count == 0u || word * 2u >= end) { return; }
  var bits = cache[word];
  for (var i = 0u; i < 2u; i++) {
    let e = word * 2u + i;
    if (e >= begin && e < end) {
      let shift = i * 16u;
      bits = (bits & ~(0xffffu << shift)) | (float_to_half(src[b * params.count + e - begin]) << shift);
    }
  }
  cache[word] = bits;
}
