import { LedgerHead, type LedgerHeadSigner, type LedgerMark, type SignedLedgerHead } from '@elma/domain';
import { verifyDocumentSignature, type CertificateSigner } from './signing';

/**
 * Signs the erasure ledger's heads with the certificate signing key, and checks them against every key that
 * signer has published (a head signed before a key rotation still verifies) and the operator's key export, if
 * any (`trusted`: a key rotated after a backup that was then restored is known there, not in the restored vault).
 * Someone who can write the ledger's file but not use that key cannot remove, add or change an entry without the
 * head giving it away.
 */
export function ledgerHeadSigner(signer: CertificateSigner, trusted: () => unknown = () => signer.jwks()): LedgerHeadSigner {
  return {
    sign(mark: LedgerMark): SignedLedgerHead {
      const head = LedgerHead.parse({ type: 'elma.erasure-ledger-head', ...mark, keyId: signer.keyId });
      return { head, signature: signer.signDocument(head) };
    },
    refusal(signed: SignedLedgerHead): string | undefined {
      const checked = verifyDocumentSignature(signed.head, signed.signature, trusted());
      return checked.ok ? undefined : checked.reason;
    },
  };
}
