import { TenantOffboarded, type IdentityProvider, type Principal, type SignInGrant } from '@elma/domain';
import { SignInNotConfigured, type OidcSignIn, type SignedIn } from '@elma/infra';
import type { BearerVerifier, ClosedTenants } from '../http/tokens';

/**
 * Sign-in for the console: what it may offer (the identity provider, when ELMA_OIDC_* configures one), and the
 * code exchange. The provider's access token is checked here as every request will check it (signature by
 * ELMA_JWKS_URL, issuer, audience, lifetime, claims, revocation, an off-boarded tenant), so a token ELMA would
 * refuse is refused now, with the reason, instead of after the console has kept it.
 */
export class SignInDesk {
  constructor(
    private readonly provider: OidcSignIn | undefined,
    private readonly verifier: BearerVerifier,
    private readonly closures: ClosedTenants,
  ) {}

  async options(): Promise<{ identityProvider: IdentityProvider | null }> {
    return { identityProvider: this.provider ? await this.provider.provider() : null };
  }

  async signIn(grant: SignInGrant): Promise<SignedIn & { principal: Principal }> {
    if (!this.provider) throw new SignInNotConfigured();
    const signedIn = await this.provider.exchange(grant);
    const principal = await this.verifier.verify(signedIn.accessToken);
    if ((await this.closures.closure(principal.tenant)) !== undefined) throw new TenantOffboarded();
    return { ...signedIn, principal };
  }
}
