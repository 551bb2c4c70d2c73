import { z } from 'zod';

/**
 * What sign-in through an identity provider exchanges between the console and the API (OpenID Connect
 * authorization code with PKCE, RFC 7636): shared by the browser code and the server, so both read one shape.
 */

/** What the console sends back after the provider redirected to it (POST /v1/sign-in/token). */
export const SignInGrant = z.strictObject({
  /** The authorization code from the redirect's query. */
  code: z.string().min(1).max(4096),
  /** The PKCE verifier the console made before it left (RFC 7636 §4.1). */
  codeVerifier: z.string().regex(/^[A-Za-z0-9._~-]{43,128}$/, 'a PKCE code verifier: 43 to 128 characters of A-Z a-z 0-9 - . _ ~'),
  /** The redirect URI the authorization request named: the console's own address. */
  redirectUri: z.url({ protocol: /^https?$/ }).refine(isConsoleAddress, 'the console address (…/console/), without query or fragment'),
});
export type SignInGrant = z.infer<typeof SignInGrant>;

/** What the console needs to send a browser to the provider (GET /v1/sign-in). */
export interface IdentityProvider {
  /** The button's label (ELMA_OIDC_PROVIDER_NAME), if configured. */
  name?: string;
  issuer: string;
  authorizationEndpoint: string;
  clientId: string;
  scope: string;
  resource?: string;
}

/** The console's address: the page the provider redirects back to. */
function isConsoleAddress(uri: string): boolean {
  if (!URL.canParse(uri)) return false;
  const url = new URL(uri);
  return url.pathname === '/console/' && url.search === '' && url.hash === '' && url.username === '' && url.password === '';
}
