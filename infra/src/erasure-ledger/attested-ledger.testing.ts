import { CertificateSigner } from '../certificate/signing';
import { ledgerHeadSigner } from '../certificate/ledger-head';
import { SqliteErasureLedger } from './sqlite-erasure-ledger';

/** A ledger opened and attested with a test signing key, as ELMA does once its keys are open (record needs it). */
export async function attestedLedger(path: string): Promise<SqliteErasureLedger> {
  const ledger = SqliteErasureLedger.open(path);
  await ledger.attest(ledgerHeadSigner(new CertificateSigner({ masterKey: new Uint8Array(32).fill(7) })));
  return ledger;
}
