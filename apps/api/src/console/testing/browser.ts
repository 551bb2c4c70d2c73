import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, extname, join, resolve } from 'node:path';
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

/**
 * The browsers a suite opens, each a person at a machine of their own, closed together when the suite ends;
 * a suite's last test reads all of them (every URL requested, every page error).
 */
export class ConsoleBrowsers {
  private readonly opened: ConsoleBrowser[] = [];

  /** `offline`: hosts whose requests are refused, for pages (an identity provider's) that would reach the internet. */
  constructor(private readonly options: { offline?: RegExp } = {}) {}

  async open(locale?: string): Promise<ConsoleBrowser> {
    const browser = await openConsoleBrowser({ locale });
    if (this.options.offline) await browser.context.route(this.options.offline, (route) => route.abort());
    this.opened.push(browser);
    return browser;
  }

  all(): readonly ConsoleBrowser[] {
    return this.opened;
  }

  async closeAll(): Promise<void> {
    for (const browser of this.opened) await browser.close().catch(() => undefined);
  }
}

/** Waits for UI states: bounds on a slow machine, not assertions on time. */
export const LONG = { timeout: 120_000 };

/** Requests the erasure of a data subject through the console's form, and answers the request's id once its page shows it. */
export async function requestSubjectErasure(page: Page, subject: string): Promise<string> {
  await page.getByTestId('tab-request').click();
  await page.getByTestId('scope-type').selectOption('subject');
  await page.getByTestId('subject').fill(subject);
  await page.getByTestId('reason').selectOption('subject_request');
  await page.getByTestId('request-submit').click();
  const title = page.getByTestId('progress').locator('h2').filter({ hasText: /era_/ });
  await title.waitFor(LONG);
  return (await title.textContent())!.replace('Erasure ', '').trim();
}

/** Saves a full-page screenshot as artifacts/console/<name>.png. */
export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  const path = join(SCREENSHOTS, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}

/** One page of a PDF as the browser rendered it. */
export interface RenderedPdfPage {
  page: number;
  /** Where its screenshot is (artifacts/console/). */
  path: string;
  /** The page's text as pdf.js extracts it (through the embedded fonts' ToUnicode maps). */
  text: string;
  /** Pixels of the canvas that are not (nearly) white: a blank render has none. */
  inkPixels: number;
}

export interface RenderedPdf {
  numPages: number;
  /** The pages rendered (up to `maxPages`). */
  pages: RenderedPdfPage[];
  /** pdf.js's warnings and errors while rendering (a font it could not load says so here). */
  warnings: string[];
}

/** A made-up origin the PDF viewer is served from, by `page.route`: nothing of it goes to the network. */
const PDF_ORIGIN = 'http://pdf.test';
const PDFJS = dirname(dirname(createRequire(import.meta.url).resolve('pdfjs-dist/build/pdf.min.mjs')));
const VIEWER = fileURLToPath(new URL('./pdf-viewer.html', import.meta.url));
const TYPES: Record<string, string> = {
  '.mjs': 'text/javascript',
  '.wasm': 'application/wasm',
};

/**
 * Renders a PDF the way a reader's browser does: pdf.js (the project's own pdfjs-dist) in a new tab of `context`,
 * each page onto a canvas (testing/pdf-viewer.html), kept as artifacts/console/<name>.png (page 1) and
 * <name>-<n>.png (the next ones, up to `maxPages`). The tab loads only the viewer, pdf.js's files and the PDF,
 * all answered by `page.route`.
 */
export async function screenshotPdf(context: BrowserContext, pdf: Buffer, name: string, maxPages = 2): Promise<RenderedPdf> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  const page = await context.newPage();
  const warnings: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'warning' || message.type() === 'error') warnings.push(message.text());
  });
  page.on('pageerror', (error) => void warnings.push(error.message));
  await page.route('**/*', (route) => {
    const url = new URL(route.request().url());
    if (url.origin !== PDF_ORIGIN) return route.abort();
    if (url.pathname === '/') return route.fulfill({ contentType: 'text/html; charset=utf-8', body: readFileSync(VIEWER) });
    if (url.pathname === '/certificate.pdf') return route.fulfill({ contentType: 'application/pdf', body: pdf });
    const file = resolve(PDFJS, `.${decodeURIComponent(url.pathname.replace(/^\/pdfjs/, ''))}`);
    if (!url.pathname.startsWith('/pdfjs/') || !file.startsWith(`${PDFJS}/`) || !existsSync(file)) return route.fulfill({ status: 404 });
    return route.fulfill({ contentType: TYPES[extname(file)] ?? 'application/octet-stream', body: readFileSync(file) });
  });
  try {
    await page.goto(`${PDF_ORIGIN}/`);
    await page.waitForFunction('window.pdfViewerReady === true');
    const rendered = (await page.evaluate(`window.renderPdf(${Number(maxPages)})`)) as {
      numPages: number;
      pages: Omit<RenderedPdfPage, 'path'>[];
    };
    const pages: RenderedPdfPage[] = [];
    for (const r of rendered.pages) {
      const path = join(SCREENSHOTS, r.page === 1 ? `${name}.png` : `${name}-${r.page}.png`);
      await page.locator(`canvas[data-page="${r.page}"]`).screenshot({ path });
      pages.push({ ...r, path });
    }
    return { numPages: rendered.numPages, pages, warnings };
  } finally {
    await page.close();
  }
}
