import type { IngestEventInput, PolicyDocument, Principal } from '@elma/domain';

/**
 * The contract between the paper's workloads (W1–W5, paper §7.2), the
 * systems they run against (ELMA, its ablations A1–A8, baselines B1–B8,
 * paper §7.3) and the metrics (§7.4), which are all measured on what the
 * memory layer returns: the packed context and its citations. No model is
 * needed except for task success, which stays "needs model" without one.
 */

export type Lang = 'en' | 'zh';
export type WorkloadName = 'W1' | 'W2' | 'W3' | 'W4' | 'W5';

/** Who acts: a principal as ELMA's tokens carry it (tenant, sub, roles, purposes, clearance, project). */
export type Actor = Principal;

/**
 * One thing that happens in a workload's script, in order. `key` names the
 * step; gold answers refer to steps by key. Every step happens at `at`
 * (business time; the workload's clock, not the wall clock).
 */
export type Step =
  | {
      type: 'ingest';
      key: string;
      at: string;
      actor: Actor;
      /** The event as a client would POST it (`idempotencyKey` is set to `key` by the system adapter). */
      event: IngestEventInput;
      /**
       * What the event is, for the report (never used by a system): `benign`, or the attack it carries.
       * W1/W2's benign external content gives the false-positive rates of the W5 defences.
       */
      label?: 'benign' | 'poison' | 'injection';
    }
  | {
      /** An explicit correction by an authorised role (reviewer, admin or dpo): a fact that must win its conflict. */
      type: 'correct';
      key: string;
      at: string;
      actor: Actor;
      event: IngestEventInput;
    }
  /** The tenant's policy document from now on (as `PUT /v1/policy` takes it: ELMA's read rules, ABAC on project/role/purpose). */
  | { type: 'policy'; key: string; at: string; tenant: string; policy: PolicyDocument }
  | { type: 'legal-hold'; key: string; at: string; actor: Actor; subject: string }
  /** Erase everything of `subject` in the actor's tenant (right to erasure). */
  | { type: 'erase'; key: string; at: string; actor: Actor; subject: string };

/** What a probe checks; a metric reads only the fields of its category. */
export interface Gold {
  /** Step keys whose content must be in the packed context (long-term fact recall). */
  mustInclude?: string[];
  /** The value that holds at the probe's time (temporal correctness, conflict handling). */
  currentValue?: string;
  /** Values that held once and no longer do at the probe's time: presenting one as current is stale. */
  staleValues?: string[];
  /** For a true conflict (no rule can decide): the values that must be disclosed as disagreeing. */
  disputedValues?: string[];
  /** Strings that must never appear in the context for this actor (canaries, erased content, other tenants' data). */
  mustNeverAppear?: string[];
  /** A planted false value: packed as current (unmarked) means the poisoning succeeded. */
  poisonValue?: string;
  /** Instruction-like text from an external, tool or model channel: packed outside a marked quoted block means exposure. */
  injectionText?: string;
}

export type ProbeCategory =
  'recall' | 'temporal' | 'conflict' | 'isolation' | 'erasure' | 'poisoning' | 'injection' | 'preference' | 'commitment';

/** A question asked at a checkpoint: after step `after` (index into `steps`) has happened. */
export interface Probe {
  id: string;
  category: ProbeCategory;
  lang: Lang;
  after: number;
  actor: Actor;
  query: string;
  purpose: string;
  /** The business time the question is asked "as of" (defaults to the time of step `after`). */
  asOf?: string;
  gold: Gold;
  /** The question's expected answer in words, for the task-success hook (a model judges it; "needs model" without one). */
  answer?: string;
}

export interface Workload {
  name: WorkloadName;
  title: string;
  seed: number;
  steps: Step[];
  probes: Probe[];
  /** What the generator made, for the report: events, sessions, subjects, tenants, days spanned, probes per category, languages. */
  size: Record<string, number>;
}

/** Generates a workload from a seed: the same seed gives the same workload, byte for byte. */
export type WorkloadGenerator = (seed: number, options?: { scale?: number }) => Workload;

/** How one packed item is presented in the context. */
export type ItemMark =
  /** Presented as holding now. */
  | 'current'
  /** Presented as history (superseded, no longer valid) or as one side of a disclosed disagreement. */
  | 'history'
  | 'disputed'
  /** Inside a marked, quoted block of untrusted content: shown as data, never as an instruction. */
  | 'quoted';

export interface ContextItem {
  text: string;
  mark: ItemMark;
  /** The step keys this item says it comes from (its citation); empty when the system cites nothing. */
  cites: string[];
}

/** What a system returns for one probe. */
export interface Recalled {
  /** The context exactly as a model would receive it. */
  context: string;
  items: ContextItem[];
  /** Tokens of `context` (gpt-tokenizer, the same count for every system). */
  tokens: number;
  /** Wall time of the recall, milliseconds. */
  ms: number;
  /** Whether the system recorded an audit entry naming the caller, the policy decision and the returned ids. */
  audited: boolean;
}

/** A review flag a system raised (ELMA's W5 defences); baselines raise none. */
export interface RaisedFlag {
  kind: string;
  /** The step keys the flag is about. */
  keys: string[];
}

/** One system under test; one instance per workload run (fresh storage in `dir`). */
export interface MemorySystem {
  readonly name: string;
  apply(step: Step): Promise<void>;
  recall(probe: Probe, budgetTokens: number): Promise<Recalled>;
  /** Review flags raised so far (empty for systems without the defence). */
  flags(): Promise<RaisedFlag[]>;
  /** Step keys of ingested events flagged instruction-like at ingest (empty for systems without the defence). */
  instructionFlagged(): Promise<string[]>;
  /** Bytes the system's storage holds now (files under its folder, or its in-memory store serialised). */
  storageBytes(): Promise<number>;
  /**
   * The folder whose bytes an erasure byte scan reads, when the system stores on disk;
   * undefined for in-memory systems (the scan then reads `snapshot()`).
   */
  dataDir(): string | undefined;
  /** Everything the system holds, serialised, for the byte scan of an in-memory system. */
  snapshot(): Promise<Buffer>;
  close(): Promise<void>;
}

/** A configuration of a system: the same embedder and budget for all. */
export interface SystemSpec {
  /** Row label in the tables: `B1`, `B2`, `B3`, `B5`, `B8`, `ELMA`, `A1`…`A8`. */
  id: string;
  label: string;
  /** When the row cannot run here: why (the row stays in the table marked "not run"). */
  notRun?: string;
  /** When this row is the same configuration as another row: that row's id (reported once). */
  sameAs?: string;
  create(dir: string): Promise<MemorySystem>;
}
