import { classifySensitivity, detectSecrets, raiseSensitivity, redactSecrets } from '../hygiene';
import { trustForChannel } from '../memory/derive';
import type { MemoryContent, Sensitivity, SourceTrust } from '../memory/record';
import type { TenantPolicy } from '../policy/policy';
import { SecretDetected } from '../shared/errors';
import type { IngestEventInput } from './schema';

export interface CleanedEvent {
  input: IngestEventInput;
  sensitivity: Sensitivity;
  sourceTrust: SourceTrust;
}

/**
 * Ingest hygiene (§5.5) for one event, before anything is written: secrets
 * are rejected or redacted to a keyed fingerprint as the tenant's policy
 * says, sensitivity is raised to what the rules find (a caller may raise it,
 * never lower it), and the source's trust tier is resolved.
 *
 * With `reject`, the error names every kind and field path at once, never
 * the secret; with `redact`, the secret never reaches the log.
 */
export function cleanEvent(
  input: IngestEventInput,
  path: string,
  policy: TenantPolicy,
  fingerprint: (secret: string) => string,
  options: { scan?: boolean } = {},
): CleanedEvent {
  // `scan: false` exists only so the benchmark can price the scan; the write path always scans.
  const { content, sensitivity } =
    options.scan === false
      ? { content: input.content, sensitivity: input.sensitivity }
      : cleanContent(input.content, input.sensitivity, path, policy, fingerprint);
  return {
    input: { ...input, content },
    sensitivity,
    sourceTrust: policy.authoritativeSources.includes(input.source.system) ? 'authoritative' : trustForChannel(input.source.channel),
  };
}

/** Secrets and sensitivity for any content about to be written (events and explicit memories alike). */
export function cleanContent(
  content: MemoryContent,
  requested: Sensitivity,
  path: string,
  policy: TenantPolicy,
  fingerprint: (secret: string) => string,
): { content: MemoryContent; sensitivity: Sensitivity } {
  const fields: { key: 'text' | 'entity' | 'attribute' | 'value'; text: string }[] = [{ key: 'text', text: content.text }];
  const fact = content.fact;
  if (fact) fields.push({ key: 'entity', text: fact.entity }, { key: 'attribute', text: fact.attribute }, { key: 'value', text: fact.value });

  const found = fields.map((field) => ({ ...field, findings: detectSecrets(field.text) })).filter((f) => f.findings.length > 0);
  let cleaned = content;
  if (found.length > 0) {
    if (policy.secrets.mode === 'reject') {
      throw new SecretDetected(
        found.flatMap((f) =>
          [...new Set(f.findings.map((finding) => finding.kind))].map((kind) => ({
            kind,
            path: `${path}content.${f.key === 'text' ? 'text' : `fact.${f.key}`}`,
          })),
        ),
      );
    }
    const redacted = new Map(found.map((f) => [f.key, redactSecrets(f.text, f.findings, fingerprint)]));
    cleaned = {
      text: redacted.get('text') ?? content.text,
      ...(fact
        ? {
            fact: {
              ...fact,
              entity: redacted.get('entity') ?? fact.entity,
              attribute: redacted.get('attribute') ?? fact.attribute,
              value: redacted.get('value') ?? fact.value,
            },
          }
        : {}),
    };
  }
  // Classified on the original text: a redacted secret still tells how sensitive the record is.
  const { floor } = classifySensitivity(
    fields.map((f) => f.text).join('\n'),
    policy.sensitivityKeywords,
    found.flatMap((f) => f.findings.map((finding) => finding.kind)),
  );
  return { content: cleaned, sensitivity: raiseSensitivity(requested, floor) };
}

/** When a record of this retention class, written at `at`, expires (null: never). */
export function expiryOf(retention: IngestEventInput['retention'], at: string, policy: TenantPolicy): string | null {
  if (retention === 'legal_hold') return null;
  const days = policy.retentionDays[retention];
  return new Date(Date.parse(at) + days * 86_400_000).toISOString();
}
