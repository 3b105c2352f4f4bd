// The attention kernels' head sizes: DH of q and k (q.k), DV of v, and each as a count of vec4s
// (DH4, DV4: a head row zero-padded to whole vec4s, as the kernels hold it). Template: DH, DV.

const DH: u32 = {{DH}}u;
const DV: u32 = {{DV}}u;
const DH4: u32 = (DH + 3u) / 4u;
const DV4: u32 = (DV + 3u) / 4u;
