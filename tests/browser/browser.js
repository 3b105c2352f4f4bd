// Starts Debian's Chromium through playwright-core with the flags the machine needs
// (see docs/demo.md: headless, no sandbox, no background networking) and a fresh profile.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { startServer } from '../../tools/serve.mjs';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/** Chromium's flags for WebGPU (and WebGL) on SwiftShader, the machine's software Vulkan (../shared facts in docs/tfjs.md). */
export const SWIFTSHADER_GPU_FLAGS = ['--enable-unsafe-webgpu', '--enable-features=Vulkan', '--use-vulkan=swiftshader',
  '--use-webgpu-adapter=swiftshader', '--use-angle=swiftshader', '--enable-unsafe-swiftshader'];

/**
 * A browser context with its own throwaway user-data-dir; close() removes it. `gpu`: software WebGL
 * and WebGPU (SwiftShader) instead of --disable-gpu.
 */
export async function launchBrowser({ gpu = false } = {}) {
  const profile = await mkdtemp(join(tmpdir(), 'mha-demo-chromium-'));
  const args = gpu ? [...FLAGS.filter((f) => f !== '--disable-gpu'), ...SWIFTSHADER_GPU_FLAGS] : FLAGS;
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM, headless: true, args, acceptDownloads: true,
    viewport: { width: 1360, height: 1000 },
  });
  return {
    context,
    async close() {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}

/**
 * The repository served (tools/serve.mjs on a free port) and its root page open in a fresh
 * Chromium with WebGPU on SwiftShader: for tests that import the package in the page. Returns
 * { page, close() }.
 */
export async function openServedPage() {
  const { server, url } = await startServer({ port: 0 });
  const browser = await launchBrowser({ gpu: true });
  const page = await browser.context.newPage();
  await page.goto(url);
  return {
    page,
    async close() {
      await browser.close();
      server.close();
    },
  };
}

/**
 * Serves the demo (tools/serve.mjs on a free port), opens it in a fresh Chromium and waits (at most
 * 60 s) until it has drawn its first view. Returns the page, a live list of console errors and
 * uncaught exceptions, and close() for the browser and the server. `gpu`: Chromium with WebGPU on
 * SwiftShader (launchBrowser), so the page finds a (software) adapter.
 */
export async function startDemo({ gpu = false } = {}) {
  const { server, url } = await startServer({ port: 0 });
  const browser = await launchBrowser({ gpu });
  const close = async () => {
    await browser.close();
    server.close();
  };
  try {
    const page = await browser.context.newPage();
    const problems = [];
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(`console error: ${message.text()}`);
    });
    page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
    await page.goto(url);
    await page.evaluate(() => Promise.race([
      window.__mhaDemo.ready,
      new Promise((_, reject) => { setTimeout(() => reject(new Error('the demo was not ready after 60 s')), 60_000); }),
    ]));
    return { page, problems, close };
  } catch (error) {
    await close();
    throw error;
  }
}
