/**
 * Headless Chromium for the browser tests: Debian's `chromium` (installed by .ci/run when missing) driven
 * by playwright-core, never a downloaded browser. A missing binary fails the test with a message saying
 * so, rather than skipping it: a suite that silently skips proves nothing. Every test keeps a screenshot
 * under test-artifacts/ (git-ignored), to be looked at.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

export const CHROMIUM_PATH = process.env.SWITCHBOARD_CHROMIUM ?? '/usr/bin/chromium';
export const ARTIFACTS_DIR = join(process.cwd(), 'test-artifacts');

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(`browser tests need Chromium at ${CHROMIUM_PATH} (Debian: apt-get install chromium; .ci/run installs it). Set SWITCHBOARD_CHROMIUM to use another binary.`);
  }
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
  });
}

/** A fresh context per test (no cookie carried over), with short timeouts: every page here is local. */
export async function freshPage(browser: Browser): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  context.setDefaultTimeout(10_000);
  const page = await context.newPage();
  return { context, page };
}

export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(ARTIFACTS_DIR, { recursive: true });
  const path = join(ARTIFACTS_DIR, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}
