import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { verifySignedCertificate } from '@elma/infra';
import { callApi, changePolicy, chatEvent, ingestSettled, recordingLogger, startTestApp, type TestApp } from '../testing';
import { ConsoleBrowsers, LONG, requestSubjectErasure, screenshot, screenshotPdf, type ConsoleBrowser } from './testing/browser';

/**
 * The compliance console in a real Chromium against a real ELMA (real HTTP, SQLite files, the run's Temporal
 * dev server): a compliance officer requests an erasure above the approval threshold, a dpo in another
 * browser approves it, the requester follows the steps to the certificate, downloads it as JSON and PDF, and
 * verifies the download and a tampered copy. The staff appear by display name and id (one named in Chinese, one
 * in English); a data subject who erased their own records, by pseudonym only. Screenshots go to
 * artifacts/console/, the certificate PDF's pages too, rendered by pdf.js in the same Chromium.
 */

let t: TestApp;
const log = recordingLogger();
const tokens: Record<string, string> = {};
const browsers = new ConsoleBrowsers();
const files = mkdtempSync(join(tmpdir(), 'elma-console-files-'));
const ORGANISATION = '上海示例数据科技有限公司';
const REQUESTER = { sub: 'comp-1', name: '李娜', shown: '李娜 (comp-1)' };
const APPROVER = { sub: 'dpo-2', name: 'Alex Morgan', shown: 'Alex Morgan (dpo-2)' };
/** A data subject who erases their own records from the console. */
const SELF = { sub: 'cust-zhao', name: '赵敏' };

async function signIn(page: Page, token: string): Promise<void> {
  await page.goto(`${t.url}/console`);
  await page.getByTestId('token').fill(token);
  await page.getByTestId('sign-in-submit').click();
}

beforeAll(async () => {
  t = await startTestApp({ temporal: {}, logger: log.logger, env: { ELMA_ORGANISATION_NAME: ORGANISATION } });
  const mint = (sub: string, roles: string[], tenant = 'acme', name?: string) =>
    t.token({ tenant, sub, roles, purposes: ['support'], clearance: 'restricted', ...(name ? { name } : {}) });
  tokens.admin = await mint('admin-1', ['admin']);
  tokens.agent = await mint('agent-1', ['agent']);
  // The requester may approve erasures too: four eyes still keeps them from approving their own.
  tokens.requester = await mint(REQUESTER.sub, ['compliance', 'dpo'], 'acme', REQUESTER.name);
  tokens.approver = await mint(APPROVER.sub, ['dpo'], 'acme', APPROVER.name);
  tokens.otherTenant = await mint('comp-9', ['compliance', 'dpo'], 'globex');
  tokens.self = await t.token({ tenant: 'acme', sub: SELF.sub, name: SELF.name, roles: [], purposes: ['support'], clearance: 'internal' });
  // Any closure of two or more records waits for a second pair of eyes; a data subject may erase their own records.
  await changePolicy(t.url, tokens.admin, (policy) => {
    policy.erasure = { approvalThreshold: 1, approvalTimeoutHours: 1 };
    policy.rules.push({ id: 'erase-own', operations: ['erase'], when: { ownerIsSubject: true, crossPurpose: true } });
  });
  await ingestSettled(t, tokens.agent, [
    chatEvent('cust-wang', '王小明希望在下周三之前确认合同续约的报价。'),
    chatEvent('cust-wang', 'Wang Xiaoming prefers calls after 3 pm about the renewal quote.'),
    chatEvent(SELF.sub, '赵敏的快递地址是浦东新区。'),
  ]);
}, 180_000);

afterAll(async () => {
  await browsers.closeAll();
  await t?.close();
  rmSync(files, { recursive: true, force: true });
});

describe('the compliance console in a real browser', () => {
  let requester: ConsoleBrowser;
  let requestId: string;
  let certificateFile: string;
  let pdfFile: string;

  it('a wrong token is refused with the problem the API sent, and nothing is kept', async () => {
    requester = await browsers.open();
    const { page } = requester;
    await page.goto(`${t.url}/console`);
    await page.getByTestId('sign-in').waitFor();
    await screenshot(page, 'sign-in');
    await page.getByTestId('token').fill(`${tokens.requester.slice(0, -6)}AAAAAA`);
    await page.getByTestId('sign-in-submit').click();
    const problem = page.getByTestId('problem');
    await problem.waitFor();
    expect(await page.getByTestId('problem-code').textContent()).toContain('AUTH.TOKEN_INVALID');
    expect(await problem.textContent()).toContain('This token is not valid here');
    expect(await page.evaluate("sessionStorage.getItem('elma.console.token')")).toBeNull();
    await screenshot(page, 'sign-in-wrong-token');
  });

  it('compliance requests an erasure of a subject; above the threshold it waits for approval, and its requester cannot approve it', async () => {
    const { page } = requester;
    await page.getByTestId('token').fill(tokens.requester);
    await page.getByTestId('sign-in-submit').click();
    expect(await page.getByTestId('who').textContent()).toContain('comp-1');
    requestId = await requestSubjectErasure(page, 'cust-wang');
    await page.getByTestId('status').filter({ hasText: 'awaiting approval' }).waitFor(LONG);
    expect(requestId).toMatch(/^era_/);
    expect(Number(await page.getByTestId('closure-size').textContent())).toBeGreaterThan(1);
    // The steps so far, each with its time and attempts; approval is the current one.
    expect(await page.locator('[data-testid=step][data-state=done]').count()).toBe(4);
    expect(await page.locator('[data-step=approval]').getAttribute('data-state')).toBe('current');
    await screenshot(page, 'progress-awaiting-approval');

    await page.getByTestId('approve').click();
    await page.getByTestId('problem-code').filter({ hasText: 'ERASURE.SELF_APPROVAL' }).waitFor();
    expect(await page.getByTestId('problem').textContent()).toContain('another dpo must approve it');
    await screenshot(page, 'approve-own-refused');
  });

  it('lists the request, or says clearly that this ELMA cannot list erasures', async () => {
    const { page } = requester;
    await page.getByTestId('tab-list').click();
    const row = page.getByTestId('erasure-row').filter({ hasText: requestId });
    const unavailable = page.getByTestId('list-unavailable');
    await row.or(unavailable).first().waitFor(LONG);
    if (await unavailable.isVisible()) expect(await unavailable.textContent()).toContain('GET /v1/erasures is not available');
    else expect(await row.textContent()).toContain('awaiting approval');
    await screenshot(page, 'list');
  });

  it('a dpo in a second browser approves it, and the requester watches it reach its certificate', async () => {
    const approver = await browsers.open();
    await signIn(approver.page, tokens.approver);
    await approver.page.getByTestId('open-id').fill(requestId);
    await approver.page.getByTestId('open-submit').click();
    await approver.page.getByTestId('approve').click();
    await approver.page.getByTestId('approved').waitFor();
    await approver.close();

    const { page } = requester;
    await page.getByTestId('open-id').fill(requestId);
    await page.getByTestId('open-submit').click();
    await page.getByTestId('status').filter({ hasText: 'certified' }).waitFor(LONG);
    await page.getByTestId('certificate').waitFor(LONG);
    expect(await page.getByTestId('approved-by').textContent()).toBe(APPROVER.shown);
    expect(await page.locator('[data-testid=step][data-state=done]').count()).toBe(12);
    for (const attempts of await page.getByTestId('attempts').allTextContents()) expect(Number(attempts)).toBeGreaterThanOrEqual(0);
    expect(await page.getByTestId('cert-organisation').textContent()).toBe(ORGANISATION);
    expect(await page.getByTestId('cert-requested-by').textContent()).toBe(REQUESTER.shown);
    expect(await page.getByTestId('cert-approved-by').textContent()).toBe(APPROVER.shown);
    await screenshot(page, 'progress-certified');
    await page.getByTestId('certificate').scrollIntoViewIfNeeded();
    await screenshot(page, 'certificate');
  });

  it('downloads the certificate as JSON and as PDF through blob links, never a URL with the token', async () => {
    const { page } = requester;
    const [json] = await Promise.all([page.waitForEvent('download'), page.getByTestId('download-json').click()]);
    expect(json.url()).toMatch(/^blob:/);
    certificateFile = join(files, json.suggestedFilename());
    await json.saveAs(certificateFile);
    const signed = JSON.parse(readFileSync(certificateFile, 'utf8'));
    expect(signed.certificate.requestId).toBe(requestId);
    expect(verifySignedCertificate(signed, t.elma.signer.jwks()).ok).toBe(true);

    const [pdf] = await Promise.all([page.waitForEvent('download'), page.getByTestId('download-pdf').click()]);
    expect(pdf.url()).toMatch(/^blob:/);
    pdfFile = join(files, pdf.suggestedFilename());
    await pdf.saveAs(pdfFile);
    expect(readFileSync(pdfFile).subarray(0, 5).toString()).toBe('%PDF-');
    expect(pdf.suggestedFilename()).toBe(`erasure-${requestId}.pdf`);
  });

  it('the downloaded PDF renders in the same Chromium with its Chinese text: organisation and staff names', async () => {
    const rendered = await screenshotPdf(requester.context, readFileSync(pdfFile), 'certificate-pdf');
    expect(rendered.pages.length).toBe(Math.min(rendered.numPages, 2));
    const [first] = rendered.pages;
    // Text extraction ignores spacing, as a reader's copy and paste does.
    const text = first.text.replace(/\s+/g, '');
    expect(text).toContain(ORGANISATION);
    expect(text).toContain(`${REQUESTER.name}(${REQUESTER.sub})`);
    expect(text).toContain('数据删除证明');
    // Ink on the page: a render that drew nothing (or only the white page) would have none.
    for (const page of rendered.pages) expect(page.inkPixels).toBeGreaterThan(10_000);
    // A font pdf.js could not load (Chinese drawn as boxes or not at all) is reported as a warning.
    expect(rendered.warnings.filter((w) => /font|glyph|cmap/i.test(w))).toEqual([]);
  });

  it('verifies the downloaded certificate as valid, and a tampered copy as not valid, saying why', async () => {
    const { page } = requester;
    await page.getByTestId('tab-verify').click();
    await page.getByTestId('certificate-file').setInputFiles(certificateFile);
    await page.getByTestId('verify-submit').click();
    await page.getByTestId('verdict-valid').waitFor();
    expect(await page.getByTestId('verdict-request').textContent()).toBe(requestId);
    expect(await page.getByTestId('verdict-requested-by').textContent()).toBe(REQUESTER.shown);
    expect(await page.getByTestId('verdict-approved-by').textContent()).toBe(APPROVER.shown);
    await screenshot(page, 'verify-valid');

    const tampered = JSON.parse(readFileSync(certificateFile, 'utf8'));
    tampered.certificate.request.approvedBy = 'comp-1';
    const tamperedFile = join(files, 'tampered.json');
    writeFileSync(tamperedFile, JSON.stringify(tampered, null, 2));
    await page.getByTestId('certificate-file').setInputFiles(tamperedFile);
    await page.getByTestId('verify-submit').click();
    await page.getByTestId('verdict-invalid').waitFor();
    expect(await page.getByTestId('verdict-reason').textContent()).toMatch(/signature/);
    expect(await page.getByTestId('verify-result').textContent()).not.toContain(requestId);
    await screenshot(page, 'verify-tampered');
  });

  it('shows the console in Chinese, with the Chinese text rendered', async () => {
    const { page } = requester;
    await page.getByTestId('language').click();
    expect(await page.locator('header h1').textContent()).toBe('ELMA 合规控制台');
    expect(await page.getByTestId('verdict-invalid').count()).toBe(0);
    await page.getByTestId('tab-list').click();
    await page.getByTestId('open-id').fill(requestId);
    await page.getByTestId('open-submit').click();
    await page.getByTestId('status').filter({ hasText: '已认证' }).waitFor(LONG);
    await page.getByTestId('certificate').waitFor(LONG);
    expect(await page.locator('html').getAttribute('lang')).toBe('zh-CN');
    expect(await page.getByTestId('approved-by').textContent()).toBe(APPROVER.shown);
    expect(await page.getByTestId('cert-requested-by').textContent()).toBe(REQUESTER.shown);
    expect(await page.getByTestId('cert-approved-by').textContent()).toBe(APPROVER.shown);
    expect(await page.getByTestId('certificate').textContent()).toContain(`机构${ORGANISATION}`);
    await screenshot(page, 'certificate-zh');
    await page.getByTestId('tab-verify').click();
    await page.getByTestId('certificate-file').setInputFiles(pdfFile);
    await page.getByTestId('verify-submit').click();
    await page.getByTestId('verdict-valid').waitFor();
    expect(await page.getByTestId('verdict-valid').textContent()).toContain('证书有效');
    expect(await page.getByTestId('verdict-requested-by').textContent()).toBe(REQUESTER.shown);
    expect(await page.getByTestId('verdict-approved-by').textContent()).toBe(APPROVER.shown);
    await screenshot(page, 'verify-valid-zh');
    await page.getByTestId('language').click();
  });

  it('a data subject who erased their own records appears by pseudonym only, never by id or name', async () => {
    const self = await browsers.open();
    const { page } = self;
    await signIn(page, tokens.self);
    const id = await requestSubjectErasure(page, SELF.sub);
    // Above the threshold a dpo approves it, as a data subject cannot approve anything.
    await page
      .getByTestId('status')
      .filter({ hasText: /awaiting approval|certified/ })
      .waitFor(LONG);
    if (await page.getByTestId('approve').isVisible()) {
      const approved = await callApi(t.url, tokens.approver, 'POST', `/v1/erasures/${id}/approve`);
      expect(approved.status, approved.text).toBe(200);
    }
    await page.getByTestId('certificate').waitFor(LONG);
    const requestedBy = await page.getByTestId('cert-requested-by').textContent();
    expect(requestedBy).toMatch(/^the data subject, by pseudonym psn_/);
    for (const card of ['progress', 'certificate']) {
      const text = await page.getByTestId(card).textContent();
      expect(text).not.toContain(SELF.sub);
      expect(text).not.toContain(SELF.name);
    }
    await page.getByTestId('certificate').scrollIntoViewIfNeeded();
    await screenshot(page, 'certificate-data-subject');
  });

  it('does not reveal the erasure to another tenant', async () => {
    const other = await browsers.open();
    await signIn(other.page, tokens.otherTenant);
    await other.page.getByTestId('who').waitFor();
    const unavailable = other.page.getByTestId('list-unavailable');
    const empty = other.page.getByTestId('erasure-list').filter({ hasText: 'No erasure requests to show.' });
    await unavailable.or(empty).first().waitFor(LONG);
    expect(await other.page.getByTestId('erasure-row').count()).toBe(0);
    await other.page.getByTestId('open-id').fill(requestId);
    await other.page.getByTestId('open-submit').click();
    await other.page.getByTestId('problem-code').filter({ hasText: 'ERASURE.NOT_FOUND' }).waitFor();
    expect(await other.page.getByTestId('closure-size').count()).toBe(0);
    expect(await other.page.getByTestId('certificate').isVisible()).toBe(false);
    await screenshot(other.page, 'other-tenant');
  });

  it('signing out forgets the token; no token was ever in a URL, in storage beyond the tab, in a log line, or broke the page policy', async () => {
    const { page } = requester;
    expect(await page.evaluate("sessionStorage.getItem('elma.console.token')")).toBe(tokens.requester);
    expect(await page.evaluate('JSON.stringify(localStorage)')).not.toContain(tokens.requester);
    await page.getByTestId('sign-out').click();
    await page.getByTestId('sign-in').waitFor();
    expect(await page.evaluate("sessionStorage.getItem('elma.console.token')")).toBeNull();
    expect(await page.evaluate('document.cookie')).toBe('');

    const all = Object.values(tokens);
    for (const b of browsers.all()) {
      for (const url of b.requestedUrls) for (const token of all) expect(url).not.toContain(token.slice(-40));
      expect(b.pageErrors).toEqual([]);
    }
    const logged = JSON.stringify(log.lines);
    for (const token of all) expect(logged).not.toContain(token.slice(-40));
    for (const personal of ['cust-wang', SELF.sub, SELF.name, REQUESTER.name, APPROVER.name]) expect(logged).not.toContain(personal);
  });
});
