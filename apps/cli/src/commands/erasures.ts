import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { LedgerRecovery, type CheckedCertificate } from '@elma/application';
import { isTenantOffboardingEntry, SignedCertificate, SignedOffboardingCertificate } from '@elma/domain';
import { loadConfig, verifySignedCertificate, verifySignedOffboardingCertificate } from '@elma/infra';
import { openElma } from '@elma/runtime';
import { claimEmbeddedEngines } from '../ownership';

/**
 * The erasure ledger, on the configured engines (not over the API). `reapply`
 * applies the ledger again, e.g. after an EventStoreDB or Elasticsearch
 * snapshot was restored outside ELMA; `--after N` starts after ledger entry N
 * (default: every entry; each is idempotent). `ledger`: the ledger's head and
 * whether a re-application is pending; `offboardings` counts the tenant
 * off-boardings among the entries. Counts only, no ids.
 *
 * `reapply --certificates DIR` first checks the ledger against the signed erasure and off-boarding certificates
 * in DIR (JSON files as the API serves them) and adds the entries it lacks; `--rebind` also accepts a ledger the
 * data does not recognise (every copy lost: the data is bound to this ledger, rebuilt from the certificates).
 */
export async function erasureLedgerCommand(action: 'reapply' | 'ledger', rest: string[], name = 'elma erasure'): Promise<number> {
  let values;
  try {
    values = parseArgs({
      args: rest,
      options: {
        after: { type: 'string' },
        certificates: { type: 'string' },
        rebind: { type: 'boolean', default: false },
        'accept-ledger-loss': { type: 'boolean', default: false },
      },
    }).values;
  } catch (error) {
    process.stderr.write(`${name}: ${(error as Error).message}\n`);
    return 2;
  }
  const after = values.after === undefined ? 0 : Number(values.after);
  if (!Number.isInteger(after) || after < 0) {
    process.stderr.write(`${name}: --after takes a ledger entry number (0 or more)\n`);
    return 2;
  }
  if (values.rebind && !values.certificates) {
    process.stderr.write(`${name}: --rebind needs --certificates DIR: the certificates are what the rebuilt ledger holds\n`);
    return 2;
  }
  if (values.certificates && action !== 'reapply') {
    process.stderr.write(`${name}: --certificates goes with reapply\n`);
    return 2;
  }
  if (values.certificates && !existsSync(values.certificates)) {
    process.stderr.write(`${name}: --certificates ${values.certificates}: no such folder\n`);
    return 2;
  }
  // Refuses a folder no ELMA has started: opening would create an empty ELMA there.
  const config = loadConfig(process.env, { secrets: 'existing' });
  const ownership = claimEmbeddedEngines(config, `${name} ${action}`, {});
  try {
    // Opening applies what a restore left pending (see openElma); `reapply` then goes over the ledger again.
    const elma = await openElma(config, { ledgerWitness: values.rebind ? 'rebind' : 'check' });
    try {
      if (action === 'ledger') {
        const offboardings = (await elma.erasure.ledger.entries(0)).filter(({ entry }) => isTenantOffboardingEntry(entry)).length;
        process.stdout.write(
          `${JSON.stringify({ ledger: config.erasureLedger, entries: await elma.erasure.ledger.head(), offboardings, pendingAfter: (await elma.erasure.ledger.pendingReapply()) ?? null })}\n`,
        );
        return 0;
      }
      // A rebind records through the ledger as opened: the data's witness moves only once the certificates cover it.
      const ledger = values.rebind ? elma.ledgerWitness.ledger : elma.erasure.ledger;
      const seen = values.rebind ? await elma.ledgerWitness.witness.latest() : undefined;
      const recovery = values.certificates
        ? await new LedgerRecovery({ ledger }).recover(readCertificates(values.certificates, elma.trustedKeys()))
        : undefined;
      const held = await ledger.head();
      if (seen && held < seen.head.seq && !values['accept-ledger-loss']) {
        process.stderr.write(
          `${name}: the data witnessed ${seen.head.seq} erasure ledger entries and the certificates give ${held}: ` +
            `${seen.head.seq - held} erasure(s) or off-boarding(s) would come back. Find the missing certificates, or add ` +
            '--accept-ledger-loss to bind the data to this ledger anyway. Nothing was bound.\n',
        );
        return 1;
      }
      const report = await elma.erasure.reapply.reapplyAll(after);
      await elma.index.flush();
      if (values.rebind) await elma.ledgerWitness.witness.advance(ledger);
      process.stdout.write(`${JSON.stringify(recovery ? { ...report, certificates: recovery } : report)}\n`);
      // A certificate that does not verify, or states another entry than the ledger's, needs a human.
      return recovery && (recovery.refused.length > 0 || recovery.differing.length > 0) ? 1 : 0;
    } finally {
      await elma.close();
    }
  } finally {
    ownership?.release();
  }
}

/** The JSON files of a folder, each checked as an erasure or off-boarding certificate signed by this ELMA's keys. */
function readCertificates(dir: string, jwks: unknown): CheckedCertificate[] {
  return readdirSync(dir)
    .filter((name) => name.endsWith('.json'))
    .sort()
    .map((file): CheckedCertificate => {
      let document: unknown;
      try {
        document = JSON.parse(readFileSync(join(dir, file), 'utf8'));
      } catch {
        return { file, ok: false, reason: 'not JSON' };
      }
      const type = (document as { certificate?: { type?: unknown } })?.certificate?.type;
      if (type === 'elma.tenant-offboarding') {
        const checked = verifySignedOffboardingCertificate(document, jwks);
        return checked.ok
          ? { file, ok: true, offboarding: SignedOffboardingCertificate.parse(document) }
          : { file, ok: false, reason: checked.reason };
      }
      const checked = verifySignedCertificate(document, jwks);
      return checked.ok ? { file, ok: true, erasure: SignedCertificate.parse(document) } : { file, ok: false, reason: checked.reason };
    });
}

/** `elma erasures reapply|status`: the older names of `elma erasure reapply|ledger`, kept for scripts. */
export async function erasuresCommand(argv: string[]): Promise<number> {
  const [action, ...rest] = argv;
  if (action !== 'reapply' && action !== 'status') {
    process.stderr.write(
      'usage: elma erasures reapply [--after N] [--certificates DIR [--rebind [--accept-ledger-loss]]] | elma erasures status   (now: elma erasure reapply | ledger)\n',
    );
    return 2;
  }
  return erasureLedgerCommand(action === 'status' ? 'ledger' : 'reapply', rest, 'elma erasures');
}
