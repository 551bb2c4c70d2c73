import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

/** Debian's Chromium (scripts/ensure-chromium.sh installs it); ELMA_CHROMIUM names another build. */
export const CHROMIUM = process.env.ELMA_CHROMIUM ?? '/usr/bin/chromium';

/** Where the browser suites keep their screenshots (gitignored; CI keeps them as test artefacts). */
export const SCREENSHOTS = fileURLToPath(new URL('../../../../../artifacts/console/', import.meta.url));

/**
 * No network beyond the page's own origin, no background traffic, no first-run pages: the run sees only what
 * the console itself loads. Software rendering, and no sandbox (CI runs as root in a container).
 */
const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export interface ConsoleBrowser {
  context: BrowserContext;
  page: Page;
  /** Every URL the page requested, to show that no token ever travels in one. */
  requestedUrls: string[];
  /**
   * Console errors and uncaught exceptions of the page (a CSP violation is reported as one); not the
   * browser's note on each non-2xx answer, which the console expects and shows as a problem.
   */
  pageErrors: string[];
  close(): Promise<void>;
}

/**
 * One real Chromium on a new, empty profile (its own --user-data-dir): a browser context with nothing shared
 * with any other (storage, cookies, cache), as a second person at a second machine.
 */
export async function openConsoleBrowser(options: { locale?: string } = {}): Promise<ConsoleBrowser> {
  if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: run scripts/ensure-chromium.sh (or set ELMA_CHROMIUM)`);
  const profile = mkdtempSync(join(tmpdir(), 'elma-console-profile-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: FLAGS,
    acceptDownloads: true,
    locale: options.locale ?? 'en-GB',
    timezoneId: 'UTC',
    viewport: { width: 1280, height: 900 },
  });
  const page = context.pages()[0] ?? (await context.newPage());
  const requestedUrls: string[] = [];
  const pageErrors: string[] = [];
  page.on('request', (request) => void requestedUrls.push(request.url()));
  page.on('console', (message) => {
    if (message.type() === 'error' && !message.text().startsWith('Failed to load resource')) pageErrors.push(message.text());
  });
  page.on('pageerror', (error) => void pageErrors.push(error.message));
  return {
    context,
    page,
    requestedUrls,
    pageErrors,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Saves a full-page screenshot as artifacts/console/<name>.png. */
export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  const path = join(SCREENSHOTS, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}
