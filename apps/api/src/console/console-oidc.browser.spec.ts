import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { callApi, changePolicy, chatEvent, ingestSettled, recordingLogger, startTestApp, type TestApp } from '../testing';
import { ConsoleBrowsers, LONG, requestSubjectErasure, screenshot, type ConsoleBrowser } from './testing/browser';
import { pkce, startIdentityProvider, type TestIdentityProvider } from './testing/identity-provider';

/**
 * The console signing staff in through the organisation's identity provider, in a real Chromium: a real
 * OpenID Connect provider (oidc-provider, its own sign-in and consent pages), authorization code with PKCE,
 * ELMA configured with ELMA_OIDC_* and the provider's keys (ELMA_JWKS_URL), so no HS256 token works here.
 * Two staff members sign in through it, one requests an erasure and the other approves it; their display
 * names come from the provider's tokens onto the certificate. Then what an attacker can try from a link.
 *
 * The console is opened as http://localhost:PORT and the provider lives at http://127.0.0.1:PORT, so the two
 * are different sites with cookies of their own, as they would be in production.
 */

let idp: TestIdentityProvider;
let t: TestApp;
let consoleUrl: string;
const log = recordingLogger();
// The provider's development pages import a web font from the internet; this run has none.
const browsers = new ConsoleBrowsers({ offline: /fonts\.googleapis\.com/ });
const staff = { tenant: 'acme', purposes: ['support'], clearance: 'restricted' };
const TOKEN_KEY = "sessionStorage.getItem('elma.console.token')";

/** Through the provider's own pages, as a person does: the console's button, sign-in form, consent. */
async function signInAtProvider(page: Page, login: string): Promise<void> {
  await page.goto(`${consoleUrl}/console`);
  await page.getByTestId('sign-in-idp').click();
  await page.waitForURL((url) => url.origin === idp.issuer, LONG);
  await page.locator('input[name=login]').fill(login);
  await page.locator('input[name=password]').fill('any password');
  await page.locator('button[type=submit]').click();
  await page.locator('button', { hasText: 'Continue' }).click();
  await page.waitForURL((url) => url.origin === consoleUrl, LONG);
}

beforeAll(async () => {
  idp = await startIdentityProvider({
    accounts: {
      'admin-1': { ...staff, roles: ['admin'], name: 'Alex Admin' },
      'comp-1': { ...staff, roles: ['compliance', 'dpo'], name: '李娜' },
      'dpo-2': { ...staff, roles: ['dpo'], name: 'Dana Smith' },
      visitor: { name: 'Visitor' },
    },
  });
  t = await startTestApp({ temporal: {}, logger: log.logger, env: { ...idp.env(), ELMA_OIDC_PROVIDER_NAME: 'Acme SSO' } });
  consoleUrl = t.url.replace('127.0.0.1', 'localhost');
  idp.register(`${consoleUrl}/console/`);

  // The admin's token, through ELMA's own code exchange: any two records need a second pair of eyes.
  const { verifier, challenge } = pkce();
  const back = await idp.authorize('admin-1', { redirectUri: `${consoleUrl}/console/`, challenge, state: 's' });
  const admin = await callApi(t.url, '', 'POST', '/v1/sign-in/token', {
    code: back.searchParams.get('code'),
    codeVerifier: verifier,
    redirectUri: `${consoleUrl}/console/`,
  });
  expect(admin.status, admin.text).toBe(200);
  const adminToken = (admin.body as { accessToken: string }).accessToken;
  await changePolicy(t.url, adminToken, (policy) => (policy.erasure = { approvalThreshold: 1, approvalTimeoutHours: 1 }));
  await ingestSettled(t, adminToken, [
    chatEvent('cust-zhao', '赵敏要求删除她在客服系统中的全部记录。'),
    chatEvent('cust-zhao', 'Zhao Min asked for every record about her to be deleted.'),
  ]);
}, 180_000);

afterAll(async () => {
  await browsers.closeAll();
  await t?.close();
  await idp?.close();
});

describe('the console signs staff in through the identity provider', () => {
  let requester: ConsoleBrowser;
  let requestId: string;

  it('offers the provider by name, and a bearer token does not work here', async () => {
    requester = await browsers.open();
    const { page } = requester;
    await page.goto(`${consoleUrl}/console`);
    const button = page.getByTestId('sign-in-idp');
    await button.waitFor();
    expect(await button.textContent()).toBe('Sign in with Acme SSO');
    await screenshot(page, 'sign-in-identity-provider');
    // A token minted with the shared secret: this ELMA trusts only the provider's keys.
    await page.getByTestId('token').fill(await t.token({ sub: 'comp-1', roles: ['compliance'] }));
    await page.getByTestId('sign-in-submit').click();
    await page.getByTestId('problem-code').filter({ hasText: 'AUTH.TOKEN_INVALID' }).waitFor();
  });

  it("signs in through the provider's pages and comes back signed in, the code gone from the address", async () => {
    const { page } = requester;
    await signInAtProvider(page, 'comp-1');
    await page.getByTestId('who').waitFor(LONG);
    expect(await page.getByTestId('who').textContent()).toContain('comp-1 · tenant acme');
    expect(new URL(page.url()).search).toBe('');
    expect(await page.evaluate("sessionStorage.getItem('elma.console.oidc')")).toBeNull();
    const token = (await page.evaluate(TOKEN_KEY)) as string;
    const claims = JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString('utf8'));
    expect(claims).toMatchObject({ iss: idp.issuer, aud: 'elma-api', sub: 'comp-1', name: '李娜' });
    // The way back: the one address with the code, then only the API on this origin.
    const withCode = requester.requestedUrls.filter((url) => url.includes('code='));
    expect(withCode).toHaveLength(1);
    expect(withCode[0]).toMatch(new RegExp(`^${consoleUrl}/console/\\?code=`));
    expect(await page.evaluate('document.cookie')).toBe('');
    await screenshot(page, 'signed-in-identity-provider');
  });

  it('a signed-in requester and a second dpo, both from the provider, take an erasure to its certificate with their names on it', async () => {
    const { page } = requester;
    requestId = await requestSubjectErasure(page, 'cust-zhao');
    await page.getByTestId('status').filter({ hasText: 'awaiting approval' }).waitFor(LONG);

    const approver = await browsers.open('zh-CN');
    await signInAtProvider(approver.page, 'dpo-2');
    await approver.page.getByTestId('open-id').fill(requestId);
    await approver.page.getByTestId('open-submit').click();
    await approver.page.getByTestId('approve').click();
    await approver.page.getByTestId('approved').waitFor();

    await page.getByTestId('tab-list').click();
    await page.getByTestId('open-id').fill(requestId);
    await page.getByTestId('open-submit').click();
    await page.getByTestId('certificate').waitFor(LONG);
    const certificate = await callApi(t.url, (await page.evaluate(TOKEN_KEY)) as string, 'GET', `/v1/erasures/${requestId}/certificate`);
    expect(certificate.status, certificate.text).toBe(200);
    expect(certificate.body).toMatchObject({
      certificate: { request: { requestedBy: 'comp-1', requestedByName: '李娜', approvedBy: 'dpo-2', approvedByName: 'Dana Smith' } },
    });
    expect(await page.getByTestId('certificate').textContent()).toContain('李娜');
    await page.getByTestId('certificate').scrollIntoViewIfNeeded();
    await screenshot(page, 'certificate-identity-provider');
  });

  it('signing out forgets the token; signing in again goes through the provider', async () => {
    const { page } = requester;
    await page.getByTestId('sign-out').click();
    await page.getByTestId('sign-in-idp').waitFor();
    expect(await page.evaluate(TOKEN_KEY)).toBeNull();
  });
});

describe('what an attacker can try against the sign-in', () => {
  it('a link carrying a code this tab did not ask for is refused in the browser, before any exchange', async () => {
    const { page, requestedUrls } = await browsers.open();
    await page.goto(`${consoleUrl}/console/?code=stolen-or-planted&state=guessed&iss=${encodeURIComponent(idp.issuer)}`);
    await page.getByTestId('problem-code').filter({ hasText: 'SIGN_IN.STATE_MISMATCH' }).waitFor();
    expect(new URL(page.url()).search).toBe('');
    expect(requestedUrls.some((url) => url.endsWith('/v1/sign-in/token'))).toBe(false);
    expect(await page.evaluate(TOKEN_KEY)).toBeNull();
  });

  it("an error link shows the provider's error code, not text someone wrote into the link", async () => {
    const { page } = await browsers.open();
    await page.goto(
      `${consoleUrl}/console/?error=access_denied&error_description=${encodeURIComponent('Call +1 555 0100 to restore access')}`,
    );
    await page.getByTestId('problem-code').filter({ hasText: 'SIGN_IN.REFUSED' }).waitFor();
    const shown = (await page.getByTestId('problem').textContent())!;
    expect(shown).toContain('access_denied');
    expect(shown).not.toContain('555');
  });

  it('a code exchanged with a verifier other than the one this tab made is refused by the provider', async () => {
    const { page } = await browsers.open();
    await page.route('**/v1/sign-in/token', async (route) => {
      const body = JSON.parse(route.request().postData() ?? '{}');
      await route.continue({ postData: JSON.stringify({ ...body, codeVerifier: pkce().verifier }) });
    });
    await signInAtProvider(page, 'comp-1');
    await page.getByTestId('problem-code').filter({ hasText: 'SIGN_IN.REFUSED' }).waitFor(LONG);
    expect(await page.evaluate(TOKEN_KEY)).toBeNull();
  });

  it('someone the provider knows but who holds no ELMA claims is not signed in', async () => {
    const { page } = await browsers.open();
    await signInAtProvider(page, 'visitor');
    await page.getByTestId('problem-code').filter({ hasText: 'AUTH.TOKEN_INVALID' }).waitFor(LONG);
    expect(await page.evaluate(TOKEN_KEY)).toBeNull();
    expect(await page.getByTestId('who').count()).toBe(0);
  });

  it('no token or code reached a log line, and nothing broke the page policy', async () => {
    const logged = JSON.stringify(log.lines);
    expect(logged).not.toMatch(/eyJ[\w-]{20,}\.[\w-]{20,}/);
    expect(logged).not.toContain('stolen-or-planted');
    expect(logged).not.toContain('cust-zhao');
    for (const b of browsers.all()) expect(b.pageErrors).toEqual([]);
  });
});
