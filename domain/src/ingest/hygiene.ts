import { classifySensitivity, detectInstructions, detectSecrets, raiseSensitivity, redactSecrets } from '../hygiene';
import { trustForChannel } from '../memory/derive';
import type { MemoryContent, Sensitivity, SourceTrust } from '../memory/record';
import type { TenantPolicy } from '../policy/policy';
import { SecretDetected } from '../shared/errors';
import type { IngestEventInput } from './schema';

export interface CleanedEvent {
  input: IngestEventInput;
  sensitivity: Sensitivity;
  sourceTrust: SourceTrust;
  /** Instruction-like text from an external or model source (`instructionLikeContent`). */
  instructionLike: boolean;
}

/**
 * Ingest hygiene (paper, section 5.6 'Security and poisoning defence') for one event, before anything is written: secrets
 * are rejected or redacted to a keyed fingerprint as the tenant's policy
 * says, sensitivity is raised to what the rules find (a caller may raise it,
 * never lower it), the source's trust tier is resolved, and content from
 * external and model sources is checked for instruction-like text.
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
  const sourceTrust = policy.authoritativeSources.includes(input.source.system) ? 'authoritative' : trustForChannel(input.source.channel);
  return {
    input: { ...input, content },
    sensitivity,
    sourceTrust,
    instructionLike: options.scan !== false && instructionLikeContent(input.content, sourceTrust),
  };
}

/**
 * Whether content of this trust tier is to be packed as quoted data: any
 * stored string of it reads as instructions to an AI (`detectInstructions`)
 * and the source is `external` (web, e-mail, tool results) or `model`. Text
 * from users, certified and authoritative sources is theirs to phrase as they
 * like (a policy note may well say "ignore the previous instructions"): they
 * are accountable for what they write, and flagging them would only add false
 * positives. Checked on the text as sent, before any secret is redacted.
 */
export function instructionLikeContent(content: MemoryContent, trust: SourceTrust): boolean {
  if (trust !== 'external' && trust !== 'model') return false;
  return storedStrings(content).some((field) => detectInstructions(field.text).instructionLike);
}

/** Secrets and sensitivity for any content about to be written (events and explicit memories alike). */
export function cleanContent(
  content: MemoryContent,
  requested: Sensitivity,
  path: string,
  policy: TenantPolicy,
  fingerprint: (secret: string) => string,
): { content: MemoryContent; sensitivity: Sensitivity } {
  const fields = storedStrings(content);
  const found = fields.map((field) => ({ ...field, findings: detectSecrets(field.text) })).filter((f) => f.findings.length > 0);
  let cleaned = content;
  if (found.length > 0) {
    if (policy.secrets.mode === 'reject') {
      throw new SecretDetected(
        found.flatMap((f) =>
          [...new Set(f.findings.map((finding) => finding.kind))].map((kind) => ({ kind, path: `${path}content.${f.path}` })),
        ),
      );
    }
    const redacted = new Map(found.map((f) => [f.path, redactSecrets(f.text, f.findings, fingerprint)]));
    cleaned = withRedactions(content, (at, text) => redacted.get(at) ?? text);
  }
  // Classified on the original text: a redacted secret still tells how sensitive the record is.
  const { floor } = classifySensitivity(
    fields.map((f) => f.text).join('\n'),
    policy.sensitivityKeywords,
    found.flatMap((f) => f.findings.map((finding) => finding.kind)),
  );
  return { content: cleaned, sensitivity: raiseSensitivity(requested, floor) };
}

/** Every string the content stores, by its path under `content.`: secrets hide in steps and ids as well as in text. */
function storedStrings(content: MemoryContent): { path: string; text: string }[] {
  const { fact, procedure, relation } = content;
  const fields: { path: string; text: string }[] = [{ path: 'text', text: content.text }];
  if (fact)
    fields.push(
      { path: 'fact.entity', text: fact.entity },
      { path: 'fact.attribute', text: fact.attribute },
      { path: 'fact.value', text: fact.value },
    );
  if (procedure) {
    fields.push({ path: 'procedure.name', text: procedure.name });
    procedure.steps.forEach((step, i) => fields.push({ path: `procedure.steps.${i}`, text: step }));
    procedure.conditions?.forEach((condition, i) => fields.push({ path: `procedure.conditions.${i}`, text: condition }));
  }
  if (relation) {
    fields.push(
      { path: 'relation.from.id', text: relation.from.id },
      { path: 'relation.relation', text: relation.relation },
      { path: 'relation.to.id', text: relation.to.id },
    );
  }
  return fields;
}

/** The content with each stored string passed through `clean`, by the path `storedStrings` gives it. */
function withRedactions(content: MemoryContent, clean: (at: string, text: string) => string): MemoryContent {
  const { fact, procedure, relation } = content;
  return {
    ...content,
    text: clean('text', content.text),
    ...(fact
      ? {
          fact: {
            ...fact,
            entity: clean('fact.entity', fact.entity),
            attribute: clean('fact.attribute', fact.attribute),
            value: clean('fact.value', fact.value),
          },
        }
      : {}),
    ...(procedure
      ? {
          procedure: {
            ...procedure,
            name: clean('procedure.name', procedure.name),
            steps: procedure.steps.map((step, i) => clean(`procedure.steps.${i}`, step)),
            ...(procedure.conditions ? { conditions: procedure.conditions.map((c, i) => clean(`procedure.conditions.${i}`, c)) } : {}),
          },
        }
      : {}),
    ...(relation
      ? {
          relation: {
            from: { ...relation.from, id: clean('relation.from.id', relation.from.id) },
            relation: clean('relation.relation', relation.relation),
            to: { ...relation.to, id: clean('relation.to.id', relation.to.id) },
          },
        }
      : {}),
  };
}

/** When a record of this retention class, written at `at`, expires (null: never). */
export function expiryOf(retention: IngestEventInput['retention'], at: string, policy: TenantPolicy): string | null {
  if (retention === 'legal_hold') return null;
  const days = policy.retentionDays[retention];
  return new Date(Date.parse(at) + days * 86_400_000).toISOString();
}
