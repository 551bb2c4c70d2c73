import { mkdirSync } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import {
  DomainError,
  Operation,
  type Clock,
  type Embedder,
  type IngestEventInput,
  type PolicyDocument,
  type Principal,
  type RecallItem,
  type RecallResult,
} from '@elma/domain';
import { loadConfig } from '@elma/infra';
import { openElma, type Ablations, type Elma } from '@elma/runtime';
import { countTokens, silentLogger } from '@elma/shared';
import type { ContextItem, ItemMark, MemorySystem, Probe, RaisedFlag, Recalled, Step, SystemSpec } from '../types';
import { eraseSubject } from './elma-erasure';

/**
 * ELMA and its ablations (paper, section 7.6) as systems under test: the real runtime (`openElma`) on a SQLite
 * data folder of its own, driven in process. Each row is one `ElmaVariant`; what it switches off is either an
 * evaluation option of the runtime (`Ablations`: the audit log, conflict settlement, recall's policy filter,
 * routes and packing) or, where the ablation is about what the system is told, a change to its input made here.
 * docs/evaluation-method.md describes every row as implemented.
 */
export interface ElmaVariant {
  id: string;
  label: string;
  /** What the row is, exactly, for the report. */
  describe: string;
  /** Runtime switches (absent: the complete system). */
  ablations: Ablations;
  /** false (A1): policy, clearance, purposes, legal holds, audit and the erasure closure are off. */
  governance: boolean;
  /** false (A2): events carry no valid time (it is their time of recording) and `asOf` is not asked. */
  validTime: boolean;
  /** false (A4): consolidation never runs. */
  consolidation: boolean;
  /** false (A5): events reach ELMA without their source system or channel. */
  provenance: boolean;
}

const COMPLETE = { ablations: {}, governance: true, validTime: true, consolidation: true, provenance: true };

const GOVERNANCE_OFF = {
  ...COMPLETE,
  governance: false,
  ablations: { audit: false },
  describe:
    'governance plane off: every tenant policy is replaced by one rule allowing every operation to every caller of the tenant ' +
    '(the workload policy keeps its retention, secrets and source settings), recall callers get clearance "restricted" and ' +
    'the asked purpose, legal holds are not placed, the audit log stores nothing, and an erasure purges only the ' +
    "subject's episodic memories from the index (no closure over derived records, no key shredding, stream deletion, " +
    'tombstones, verification or certificate)',
};

export const ELMA_VARIANTS: readonly ElmaVariant[] = [
  {
    ...COMPLETE,
    id: 'ELMA',
    label: 'ELMA complete',
    describe:
      'the complete system: policy pushdown, audit, erasure workflow steps in process, bitemporal recall (asOf), conflict rules ' +
      'and disputes, consolidation at every probe checkpoint, source trust and taint, hybrid BM25 + dense recall, utility packing with citations',
  },
  { ...GOVERNANCE_OFF, id: 'A1', label: 'A1 governance off' },
  {
    ...COMPLETE,
    id: 'A2',
    label: 'A2 no valid time',
    validTime: false,
    describe:
      "bitemporal valid time off: each event's occurredAt is replaced by the time it is recorded and facts lose validFrom/validTo, " +
      'so validity is transaction time; probes are asked without asOf (as of now)',
  },
  {
    ...COMPLETE,
    id: 'A3',
    label: 'A3 last write wins',
    ablations: { conflicts: 'last-write-wins' },
    describe:
      'dispute state and conflict rules off: a fact that contradicts a recallable one supersedes it when written later ' +
      '(transaction time), whatever corrections, source trust, valid times or confidences say; nothing is ever disputed',
  },
  {
    ...COMPLETE,
    id: 'A4',
    label: 'A4 no consolidation',
    consolidation: false,
    describe: 'asynchronous consolidation off: no merges, session summaries or extracted facts are ever derived',
  },
  {
    ...COMPLETE,
    id: 'A5',
    label: 'A5 no provenance',
    provenance: false,
    describe:
      'provenance and taint off: every event reaches ELMA as from one anonymous source (source system "eval", no channel, ' +
      'no external id), so every source has the same trust tier ("user"), nothing is tainted and no channel is known; ' +
      'lineage (which event a record comes from) is kept, as citations and the erasure closure need it',
  },
  {
    ...COMPLETE,
    id: 'A6',
    label: 'A6 post-filtering',
    ablations: { recall: { policy: 'post-filter' } },
    describe:
      "policy pushdown replaced by post-filtering: the index is searched within the tenant without the caller's policy clauses, " +
      'clearance or legal-hold exclusions (status, validity, expiry and kinds still pushed down) for the same 30 candidates, ' +
      'and the policy then drops what the caller may not see',
  },
  {
    ...COMPLETE,
    id: 'A7',
    label: 'A7 dense only',
    ablations: { recall: { routes: 'dense' } },
    describe:
      "multi-route recall replaced by the dense route alone (the configured fusion's dense floor and neighbour smoothing kept; " +
      'no BM25 route; nothing is found without a semantic embedder)',
  },
  {
    ...COMPLETE,
    id: 'A8',
    label: 'A8 plain concatenation',
    ablations: { recall: { packing: 'concatenate' } },
    describe:
      'context packing replaced by plain concatenation: the best-scored hits, one text per line, until the next does not fit ' +
      'the budget; no utility, redundancy penalty, prompt groups, citation lines, disagreement notes or quoted blocks',
  },
];

/** A row of the tables with what it means; `describe` is printed by the report. */
export type DescribedSystemSpec = SystemSpec & { describe: string };

/**
 * The rows for ELMA: B8 (Table 1) is the same configuration as A1 and says so; then ELMA and A1…A8. Every
 * system of the run shares `embedder` (opened once, on first use).
 */
export function elmaSystems(embedder: () => Promise<Embedder>): DescribedSystemSpec[] {
  const spec = (variant: ElmaVariant): DescribedSystemSpec => ({
    id: variant.id,
    label: variant.label,
    describe: variant.describe,
    create: async (dir) => ElmaSystem.open(variant, dir, await embedder()),
  });
  const a1 = ELMA_VARIANTS.find((v) => v.id === 'A1')!;
  return [{ ...spec(a1), id: 'B8', label: 'B8 ELMA without governance', sameAs: 'A1' }, ...ELMA_VARIANTS.map(spec)];
}

/** The rule of the governance-off policy: every operation, every caller, any purpose. */
const OPEN_RULES: PolicyDocument['rules'] = [
  {
    id: 'governance-off',
    description: 'evaluation: no governance plane',
    operations: [...Operation.options],
    when: { crossPurpose: true },
  },
];

/** Longest wait for the projection or the vectors to catch up before a probe. */
const CATCH_UP_MS = 10 * 60_000;
/** Recalls tried to fit the whole context into the budget. */
const FIT_ATTEMPTS = 4;
const MIN_BUDGET = 16;
const MAX_BUDGET = 32_000;

/** The workload's clock: services stamp business time, the time of the step being applied. */
class WorkloadClock implements Clock {
  private at = 0;
  now(): Date {
    return new Date(this.at);
  }
  /** Steps come in time order: an earlier one is a workload's bug, which would otherwise be stamped with a later time. */
  advanceTo(iso: string, key: string): void {
    const at = Date.parse(iso);
    if (!(at >= this.at)) throw new Error(`step ${key} at ${iso} comes before the previous step (${new Date(this.at).toISOString()})`);
    this.at = at;
  }
}

/**
 * Errors by which ELMA refuses a step or a recall as it should (policy, role, purpose, secrets, erased
 * content): outcomes the metrics read, not failures of the run. Anything else (malformed workload input,
 * an engine failing) is thrown.
 */
const REFUSALS = new Set([
  'POLICY.DENIED',
  'AUTH.FORBIDDEN',
  'RECALL.PURPOSE_NOT_PERMITTED',
  'HYGIENE.SECRET_DETECTED',
  'ERASURE.CONTENT_ERASED',
  'MEMORY.UNKNOWN_SOURCE_EVENT',
]);
const refused = (error: unknown): error is DomainError => error instanceof DomainError && REFUSALS.has(error.code);

export class ElmaSystem implements MemorySystem {
  readonly name: string;
  /** eventId -> step key, from the ingest results. */
  private readonly keyOfEvent = new Map<string, string>();
  private readonly tenants = new Set<string>();
  /** Steps the system refused (policy, erased content, forbidden role), with the error code: not failures of the run. */
  readonly refusals: { key: string; code: string }[] = [];
  private consolidated = true;

  private constructor(
    private readonly variant: ElmaVariant,
    private readonly elma: Elma,
    private readonly clock: WorkloadClock,
    private readonly dir: string,
  ) {
    this.name = variant.id;
  }

  static async open(variant: ElmaVariant, dir: string, embedder: Embedder): Promise<ElmaSystem> {
    mkdirSync(dir, { recursive: true });
    const clock = new WorkloadClock();
    // The embedder is the shared one: the configuration's embedder settings are not used.
    const config = loadConfig({ ELMA_DATA_DIR: dir });
    const elma = await openElma(config, { clock, logger: silentLogger, embedder, ablations: variant.ablations });
    await elma.runner.start();
    return new ElmaSystem(variant, elma, clock, dir);
  }

  async apply(step: Step): Promise<void> {
    this.clock.advanceTo(step.at, step.key);
    const tenant = step.type === 'policy' ? step.tenant : step.actor.tenant;
    await this.knowTenant(tenant);
    try {
      switch (step.type) {
        case 'ingest':
          await this.ingest(step.key, step.actor, step.event);
          break;
        case 'correct':
          await this.correct(step.key, step.actor, step.event);
          break;
        case 'policy':
          await this.elma.policies.put(tenant, this.variant.governance ? step.policy : { ...step.policy, rules: OPEN_RULES }, 'eval');
          break;
        case 'legal-hold':
          // Without a governance plane there are no holds.
          if (this.variant.governance)
            await this.elma.holds.place(tenant, step.actor.sub, { scope: { subjects: [step.subject] }, reason: step.key });
          break;
        case 'erase':
          if (this.variant.governance) await eraseSubject(this.elma, this.clock, step.actor, step.subject, `eval-${step.key}`);
          else await this.deletePrimaryRecords(tenant, step.subject);
          break;
        default: {
          const _exhaustive: never = step;
          return _exhaustive;
        }
      }
    } catch (error) {
      if (!refused(error)) throw error;
      this.refusals.push({ key: step.key, code: error.code });
    }
  }

  async recall(probe: Probe, budgetTokens: number): Promise<Recalled> {
    await this.catchUp();
    const actor = this.reader(probe.actor, probe.purpose);
    const asOf = this.variant.validTime ? probe.asOf : undefined;
    const askedAt = asOf ?? this.clock.now().toISOString();
    const requestId = `eval-${probe.id}`;
    // ELMA's budget bounds the packed texts; its numbers, citation lines and notes come on top. Every system is
    // held to the same budget for the whole context, so the text budget is narrowed until the context fits
    // (the time is that of the recall that fits, the one a caller tuned to this budget would make).
    let textBudget = budgetTokens;
    let result: RecallResult | undefined;
    let ms = 0;
    for (let attempt = 0; attempt < FIT_ATTEMPTS; attempt++) {
      const started = performance.now();
      result = await this.recallOnce(actor, probe, textBudget, asOf, requestId);
      ms = performance.now() - started;
      const used = result ? countTokens(result.context) : 0;
      if (used <= budgetTokens || textBudget <= MIN_BUDGET) break;
      textBudget = Math.max(MIN_BUDGET, Math.floor((textBudget * budgetTokens) / used) - 1);
    }
    const context = result?.context ?? '';
    // In the order of the context, as the other systems give theirs (`items` come best first).
    const byId = new Map((result?.items ?? []).map((item) => [item.id, item]));
    return {
      context,
      items: (result?.promptOrder ?? []).map((id) => this.contextItem(byId.get(id)!, askedAt)),
      tokens: countTokens(context),
      ms,
      audited: await this.audited(actor, requestId),
    };
  }

  /** One recall as the probe's actor; a recall the policy refuses (purpose not permitted, default deny) is undefined. */
  private async recallOnce(
    actor: Principal,
    probe: Probe,
    budgetTokens: number,
    asOf: string | undefined,
    requestId: string,
  ): Promise<RecallResult | undefined> {
    try {
      return await this.elma.recall.recall(
        actor,
        {
          query: probe.query,
          purpose: probe.purpose,
          budgetTokens: Math.min(MAX_BUDGET, Math.max(MIN_BUDGET, Math.floor(budgetTokens))),
          consistency: 'strong',
          ...(asOf ? { asOf } : {}),
        },
        requestId,
      );
    } catch (error) {
      if (!refused(error)) throw error;
      return undefined;
    }
  }

  async flags(): Promise<RaisedFlag[]> {
    const flags: RaisedFlag[] = [];
    for (const tenant of this.tenants) {
      for (const flag of await this.elma.reviews.all(tenant)) {
        const fromRecords = await this.sourceEventsOf(tenant, flag.recordIds);
        flags.push({ kind: flag.kind, keys: this.keysOf([...flag.eventIds, ...fromRecords]) });
      }
    }
    return flags;
  }

  async instructionFlagged(): Promise<string[]> {
    const events: string[] = [];
    for (const tenant of this.tenants) {
      for await (const record of this.elma.index.records(tenant)) {
        if (record.instructionLike === true) events.push(...record.provenance.sourceEventIds);
      }
    }
    return this.keysOf(events);
  }

  async storageBytes(): Promise<number> {
    return folderBytes(this.dir);
  }

  dataDir(): string {
    return this.dir;
  }

  /** Empty: everything ELMA holds is on disk, under `dataDir()`, which the byte scan reads. */
  async snapshot(): Promise<Buffer> {
    return Buffer.alloc(0);
  }

  async close(): Promise<void> {
    await this.elma.close();
  }

  private async knowTenant(tenant: string): Promise<void> {
    if (this.tenants.has(tenant)) return;
    this.tenants.add(tenant);
    if (!this.variant.governance) {
      const { version: _version, ...current } = await this.elma.policies.get(tenant);
      await this.elma.policies.put(tenant, { ...current, rules: OPEN_RULES }, 'eval');
    }
  }

  private async ingest(key: string, actor: Principal, event: IngestEventInput): Promise<string> {
    const result = await this.elma.ingest.ingest(actor, { events: [{ ...this.told(event), idempotencyKey: key }] }, `eval-${key}`);
    const id = result.events[0].id;
    this.keyOfEvent.set(id, key);
    this.consolidated = false;
    return id;
  }

  /**
   * An explicit correction as an authorised role makes it: the event that says it, then a semantic memory
   * citing it with `correction: true` (`POST /v1/memories`), which wins its conflicts by the first rule.
   */
  private async correct(key: string, actor: Principal, event: IngestEventInput): Promise<void> {
    const id = await this.ingest(key, actor, event);
    const told = this.told(event);
    await this.elma.memories.write(
      actor,
      {
        kind: 'semantic',
        content: told.content,
        sourceEventIds: [id],
        subject: told.subject,
        sensitivity: told.sensitivity,
        ...(told.purposes ? { purposes: told.purposes } : {}),
        validFrom: told.content.fact?.validFrom ?? told.occurredAt,
        ...(told.content.fact?.validTo ? { validTo: told.content.fact.validTo } : {}),
        correction: true,
        idempotencyKey: key,
      },
      `eval-${key}-correction`,
    );
  }

  /** The event as this row's ELMA is told it: without valid time (A2), without its source (A5). */
  private told(event: IngestEventInput): IngestEventInput {
    let told = event;
    const fact = told.content.fact;
    if (!this.variant.validTime) {
      told = {
        ...told,
        occurredAt: this.clock.now().toISOString(),
        content: fact ? { ...told.content, fact: { entity: fact.entity, attribute: fact.attribute, value: fact.value } } : told.content,
      };
    }
    if (!this.variant.provenance) told = { ...told, source: { system: 'eval' } };
    return told;
  }

  /** Without governance: who asks is not checked beyond the tenant (clearance and purposes off; no holds are placed). */
  private reader(actor: Principal, purpose: string): Principal {
    if (this.variant.governance) return actor;
    return { ...actor, clearance: 'restricted', purposes: [...new Set([...actor.purposes, purpose])] };
  }

  /** A1's erasure: the subject's primary records (the episodic memory of each event) purged, nothing derived followed. */
  private async deletePrimaryRecords(tenant: string, subject: string): Promise<void> {
    await this.catchUp();
    const ids: string[] = [];
    for await (const entry of this.elma.index.lineage(tenant))
      if (entry.kind === 'episodic' && entry.subject === subject) ids.push(entry.id);
    if (ids.length > 0) await this.elma.index.purge(tenant, ids);
  }

  /**
   * Before a probe: the projection has applied every write, consolidation has run as the worker would at a
   * checkpoint (ELMA and every row but A4), and every record has its vector, so the dense route sees all.
   */
  private async catchUp(): Promise<void> {
    const settle = async () => this.elma.runner.waitFor(await this.elma.log.headPosition(), CATCH_UP_MS);
    await settle();
    if (this.variant.consolidation && !this.consolidated) {
      for (const tenant of this.tenants)
        await this.elma.consolidation.consolidateMany(tenant, await this.elma.consolidation.subjectRefs(tenant));
      this.consolidated = true;
      await settle();
    }
    for (const tenant of this.tenants) await this.elma.embeddings.waitForEmbedded(tenant, CATCH_UP_MS);
  }

  private contextItem(item: RecallItem, askedAt: string): ContextItem {
    // Plain concatenation presents bare text: no citation, no mark.
    if (this.variant.ablations.recall?.packing === 'concatenate') return { text: item.text, mark: 'current', cites: [] };
    return { text: item.text, mark: markOf(item, askedAt), cites: this.keysOf(item.citation.sourceEventIds) };
  }

  private keysOf(eventIds: readonly string[]): string[] {
    return [...new Set(eventIds.flatMap((id) => this.keyOfEvent.get(id) ?? []))];
  }

  private async sourceEventsOf(tenant: string, recordIds: readonly string[]): Promise<string[]> {
    const found = await Promise.all(recordIds.map((id) => this.elma.index.get(tenant, id)));
    return found.flatMap((memory) => memory?.record.provenance.sourceEventIds ?? []);
  }

  /** Whether the audit trail holds this recall's entry, naming its caller (allowed or denied). */
  private async audited(actor: Principal, requestId: string): Promise<boolean> {
    for await (const entry of this.elma.audit.export(actor.tenant, { actor: actor.sub, operation: 'read' }))
      if (entry.requestId === requestId) return true;
    return false;
  }
}

/**
 * How the packed item is presented: inside a quoted block when flagged instruction-like, as one side of a
 * disagreement when disputed, as history when its validity ended by the asked time.
 */
export function markOf(item: RecallItem, askedAt: string): ItemMark {
  const { citation } = item;
  if (citation.instructionLike) return 'quoted';
  if (citation.disputed) return 'disputed';
  if (citation.validTo !== null && Date.parse(citation.validTo) <= Date.parse(askedAt)) return 'history';
  return 'current';
}

/** Bytes of every file under `dir`; a file removed while it is counted (a WAL checkpointed away) counts nothing. */
async function folderBytes(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    total += await stat(join(entry.parentPath, entry.name)).then(
      (info) => info.size,
      (error: NodeJS.ErrnoException) => {
        if (error.code === 'ENOENT') return 0;
        throw error;
      },
    );
  }
  return total;
}
