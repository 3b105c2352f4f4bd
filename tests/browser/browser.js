// Starts Debian's Chromium through playwright-core with the flags the machine needs
// (see the README: headless, no sandbox, no background networking) and a fresh profile.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/** A browser context with its own throwaway user-data-dir; close() removes it. */
export async function launchBrowser() {
  const profile = await mkdtemp(join(tmpdir(), 'mha-demo-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM, headless: true, args: FLAGS, acceptDownloads: true,
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
