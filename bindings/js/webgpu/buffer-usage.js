// The GPUBufferUsage flags the backend makes and checks buffers with, declared once. Numbers, not
// the global GPUBufferUsage: Dawn's Node bindings define that global only when asked
// (Object.assign(globalThis, globals)), and the values are fixed by the WebGPU spec.
export const MAP_READ = 0x01;
export const COPY_SRC = 0x04;
export const COPY_DST = 0x08;
export const UNIFORM = 0x40;
export const STORAGE = 0x80;
