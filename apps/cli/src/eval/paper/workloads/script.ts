import type { IngestEventInput, PolicyDocument, RetentionClass, Sensitivity } from '@elma/domain';
import { prng } from '../../../bench/corpus';
import type { Actor, Lang, Probe, Step, Workload, WorkloadName } from '../types';

/**
 * What the five generators share: a seeded random source, the workload's
 * clock, and a script that collects steps and probes in any order and puts
 * them in time order at the end. Everything here is pure: the same seed and
 * the same calls give the same workload, byte for byte (no wall clock, no
 * Math.random, dates computed from a fixed start).
 */

/** A seeded random source (mulberry32, the one the bench corpus and the bootstrap use). */
export interface Random {
  /** In [0, 1). */
  next(): number;
  /** An integer in [low, high], both inclusive. */
  int(low: number, high: number): number;
  pick<T>(items: readonly T[]): T;
  chance(p: number): boolean;
  /** A shuffled copy. */
  shuffle<T>(items: readonly T[]): T[];
  /** `count` distinct items (all of them, shuffled, when there are fewer). */
  sample<T>(items: readonly T[], count: number): T[];
}

export function random(seed: number): Random {
  const next = prng(seed);
  const int = (low: number, high: number) => low + Math.floor(next() * (high - low + 1));
  const shuffle = <T>(items: readonly T[]): T[] => {
    const out = [...items];
    for (let i = out.length - 1; i > 0; i--) {
      const j = int(0, i);
      [out[i], out[j]] = [out[j], out[i]];
    }
    return out;
  };
  return {
    next,
    int,
    pick: (items) => items[int(0, items.length - 1)],
    chance: (p) => next() < p,
    shuffle,
    sample: (items, count) => shuffle(items).slice(0, count),
  };
}

/** `full` scaled down (never below `min`): scale 1 is the full workload, 0.2 CI's quick mode. */
export function scaled(full: number, scale: number, min: number): number {
  return Math.max(min, Math.round(full * scale));
}

/** Reads the `scale` option: a positive number, at most 1 (1 when absent). */
export function scaleOf(options?: { scale?: number }): number {
  const scale = options?.scale ?? 1;
  if (!(scale > 0 && scale <= 1)) throw new RangeError('scale must lie in (0, 1]');
  return scale;
}

/** The language of the `i`-th unit (project, policy, tenant, person, scenario): alternating, so half are each. */
export const langOf = (i: number): Lang => (i % 2 === 0 ? 'en' : 'zh');

const DAY_MS = 86_400_000;

/** The workload's clock: day `d` after its start, at `hour:minute` UTC. */
export class Clock {
  private readonly start: number;
  constructor(startIsoDate: string) {
    this.start = Date.parse(`${startIsoDate}T00:00:00.000Z`);
  }
  at(day: number, hour = 9, minute = 0): string {
    return new Date(this.start + day * DAY_MS + hour * 3_600_000 + minute * 60_000).toISOString();
  }
  /** The calendar date of day `d`, `YYYY-MM-DD`. */
  date(day: number): string {
    return this.at(day).slice(0, 10);
  }
}

/** The fields of an event a generator chooses; the rest have the workloads' defaults. */
export interface EventSpec {
  subject: string;
  at: string;
  activity: string;
  text: string;
  fact?: { entity: string; attribute: string; value: string; validFrom?: string };
  system: string;
  /** `system` certified, `web`/`email`/`tool` external, `model` model, anything else user (trustForChannel). */
  channel: string;
  sensitivity?: Sensitivity;
  purposes: string[];
  retention?: RetentionClass;
  project?: string;
  session?: string;
}

export function event(spec: EventSpec): IngestEventInput {
  return {
    subject: spec.subject,
    occurredAt: spec.at,
    activity: spec.activity,
    content: spec.fact ? { text: spec.text, fact: spec.fact } : { text: spec.text },
    source: { system: spec.system, channel: spec.channel },
    sensitivity: spec.sensitivity ?? 'internal',
    purposes: spec.purposes,
    retention: spec.retention ?? 'standard',
    ...(spec.project ? { project: spec.project } : {}),
    ...(spec.session ? { session: spec.session } : {}),
  };
}

export function actor(fields: Partial<Actor> & Pick<Actor, 'tenant' | 'sub'>): Actor {
  return { roles: ['agent'], purposes: [], clearance: 'internal', ...fields };
}

/** A probe before it is placed: it is asked after the step named `afterKey` (the latest step it may know of). */
export type ProbeSpec = Omit<Probe, 'after'> & { afterKey: string };

/**
 * Collects a workload's steps and probes. Units (projects, tenants, people)
 * are written one after another; `build` sorts the steps by time (stable, so
 * steps at the same instant keep their order) and places every probe right
 * after its checkpoint step.
 */
export class Script {
  private readonly steps: Step[] = [];
  private readonly probes: ProbeSpec[] = [];
  private readonly keys = new Set<string>();
  /** The language of each ingested step, for `size` (steps carry none). */
  private readonly langs = new Map<string, Lang>();

  ingest(key: string, actor: Actor, spec: EventSpec, lang: Lang, label?: 'benign' | 'poison' | 'injection'): string {
    this.add({ type: 'ingest', key, at: spec.at, actor, event: event(spec), ...(label ? { label } : {}) });
    this.langs.set(key, lang);
    return key;
  }

  correct(key: string, actor: Actor, spec: EventSpec, lang: Lang): string {
    this.add({ type: 'correct', key, at: spec.at, actor, event: event(spec) });
    this.langs.set(key, lang);
    return key;
  }

  policy(key: string, at: string, tenant: string, policy: PolicyDocument): string {
    return this.add({ type: 'policy', key, at, tenant, policy });
  }

  legalHold(key: string, at: string, actor: Actor, subject: string): string {
    return this.add({ type: 'legal-hold', key, at, actor, subject });
  }

  erase(key: string, at: string, actor: Actor, subject: string): string {
    return this.add({ type: 'erase', key, at, actor, subject });
  }

  probe(spec: ProbeSpec): void {
    if (!this.keys.has(spec.afterKey)) throw new Error(`probe ${spec.id} is asked after an unknown step ${spec.afterKey}`);
    this.probes.push(spec);
  }

  build(name: WorkloadName, title: string, seed: number, extraSize: Record<string, number>): Workload {
    const steps = this.steps
      .map((step, order) => ({ step, order }))
      .sort((a, b) => a.step.at.localeCompare(b.step.at) || a.order - b.order)
      .map(({ step }) => step);
    const index = new Map(steps.map((step, i) => [step.key, i]));
    for (const p of this.probes) {
      for (const key of p.gold.mustInclude ?? []) {
        // A gold record the probe could not know of yet would make the question unanswerable.
        if (!(index.get(key)! <= index.get(p.afterKey)!)) throw new Error(`probe ${p.id} needs ${key}, which comes after it`);
      }
    }
    const probes: Probe[] = this.probes
      .map(({ afterKey, ...spec }) => ({ ...spec, after: index.get(afterKey)! }))
      .sort((a, b) => a.after - b.after || a.id.localeCompare(b.id))
      .map((p) => ({
        id: p.id,
        category: p.category,
        lang: p.lang,
        after: p.after,
        actor: p.actor,
        query: p.query,
        purpose: p.purpose,
        ...(p.asOf ? { asOf: p.asOf } : {}),
        gold: p.gold,
        ...(p.answer ? { answer: p.answer } : {}),
      }));
    return { name, title, seed, steps, probes, size: { ...measure(steps, probes, this.langs), ...extraSize } };
  }

  private add(step: Step): string {
    if (this.keys.has(step.key)) throw new Error(`duplicate step key ${step.key}`);
    this.keys.add(step.key);
    this.steps.push(step);
    return step.key;
  }
}

/** The sizes every workload reports; generators add their own (projects, policies, canaries…). */
function measure(steps: readonly Step[], probes: readonly Probe[], langs: ReadonlyMap<string, Lang>): Record<string, number> {
  const events = steps.filter((s) => s.type === 'ingest' || s.type === 'correct');
  const count = <T>(items: readonly T[], keyOf: (item: T) => string | undefined) => new Set(items.map(keyOf).filter(Boolean)).size;
  const times = steps.map((s) => Date.parse(s.at));
  const size: Record<string, number> = {
    steps: steps.length,
    events: events.length,
    eventsEn: events.filter((s) => langs.get(s.key) === 'en').length,
    eventsZh: events.filter((s) => langs.get(s.key) === 'zh').length,
    sessions: count(events, (s) => s.event.session),
    subjects: count(events, (s) => `${s.actor.tenant}/${s.event.subject}`),
    tenants: count(steps, (s) => ('tenant' in s ? s.tenant : s.actor.tenant)),
    days: times.length ? Math.ceil((Math.max(...times) - Math.min(...times)) / DAY_MS) : 0,
    benign: steps.filter((s) => s.type === 'ingest' && s.label === 'benign').length,
    poison: steps.filter((s) => s.type === 'ingest' && s.label === 'poison').length,
    injection: steps.filter((s) => s.type === 'ingest' && s.label === 'injection').length,
    probes: probes.length,
    probesEn: probes.filter((p) => p.lang === 'en').length,
    probesZh: probes.filter((p) => p.lang === 'zh').length,
  };
  for (const p of probes) size[`probes.${p.category}`] = (size[`probes.${p.category}`] ?? 0) + 1;
  return size;
}
