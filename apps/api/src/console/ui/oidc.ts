/// <reference lib="dom" />
import type { IdentityProvider, SignInGrant } from '@elma/domain';
import { ApiProblem } from './api';

/**
 * The browser's half of OpenID Connect sign-in (authorization code with PKCE, RFC 7636): make a verifier and a
 * state, go to the identity provider, and on the way back check that this tab started the sign-in before the
 * API exchanges the code. The verifier and state live in this tab's sessionStorage until the provider answers.
 */

interface Pending {
  state: string;
  verifier: string;
  redirectUri: string;
  issuer: string;
}

const PENDING_KEY = 'elma.console.oidc';

/** The page the provider sends the browser back to: the console itself. */
const redirectUri = (): string => `${location.origin}/console/`;

function base64url(bytes: Uint8Array): string {
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '');
}

const random = (length: number): string => base64url(crypto.getRandomValues(new Uint8Array(length)));

/** Leaves for the provider's sign-in page. */
export async function startSignIn(provider: IdentityProvider): Promise<void> {
  // 32 random bytes: a 43-character verifier, the shortest RFC 7636 allows and 256 bits of entropy.
  const pending: Pending = { state: random(16), verifier: random(32), redirectUri: redirectUri(), issuer: provider.issuer };
  const challenge = base64url(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(pending.verifier))));
  sessionStorage.setItem(PENDING_KEY, JSON.stringify(pending));
  const url = new URL(provider.authorizationEndpoint);
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('client_id', provider.clientId);
  url.searchParams.set('redirect_uri', pending.redirectUri);
  url.searchParams.set('scope', provider.scope);
  url.searchParams.set('state', pending.state);
  url.searchParams.set('code_challenge', challenge);
  url.searchParams.set('code_challenge_method', 'S256');
  if (provider.resource) url.searchParams.set('resource', provider.resource);
  location.assign(url.href);
}

/**
 * The provider's answer in this page's address, if there is one: the grant to exchange, or the problem to show.
 * The address is cleaned first, so the code is neither kept in history nor used twice by a reload.
 */
export function returnedSignIn(): SignInGrant | ApiProblem | null {
  const params = new URLSearchParams(location.search);
  if (!params.has('code') && !params.has('error')) return null;
  history.replaceState(null, '', location.pathname);
  const stored = sessionStorage.getItem(PENDING_KEY);
  sessionStorage.removeItem(PENDING_KEY);
  const pending = stored ? (JSON.parse(stored) as Pending) : null;
  // Only the provider's error code is shown: its description is text anyone can put in a link.
  const error = params.get('error');
  if (error)
    return new ApiProblem(0, 'SIGN_IN.REFUSED', `the identity provider answered: ${/^[a-z_]{1,40}$/.test(error) ? error : 'an error'}`);
  // A code this tab did not ask for (a link someone sent, another tab's sign-in), or from another issuer (RFC 9207).
  const iss = params.get('iss');
  if (!pending || params.get('state') !== pending.state || (iss !== null && iss !== pending.issuer))
    return new ApiProblem(0, 'SIGN_IN.STATE_MISMATCH', 'this sign-in was not started in this tab; sign in again');
  return { code: params.get('code')!, codeVerifier: pending.verifier, redirectUri: pending.redirectUri };
}
