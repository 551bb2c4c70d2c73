import { readFileSync } from 'node:fs';
import { z } from 'zod';

/**
 * The bilingual recall test set (open.json, sealed.json beside this file): tenants of about 50 memories an agent
 * wrote in English and Chinese, and questions that each name the memories answering them. A question's direction is
 * its language → the language of the memory it asks about: en→zh and zh→en cross languages, en→en and zh→zh are the
 * same-language controls. The sealed part is not read while recall is tuned (see its `notice`).
 */
export const LANGS = ['en', 'zh'] as const;
export const DIRECTIONS = ['en→zh', 'zh→en', 'en→en', 'zh→zh'] as const;
export type Direction = (typeof DIRECTIONS)[number];
export const SPLITS = ['open', 'sealed'] as const;
export type Split = (typeof SPLITS)[number];

/** Whether a question asks in the other language than its memory's. */
export const crossesLanguages = (direction: Direction): boolean => direction === 'en→zh' || direction === 'zh→en';

const Lang = z.enum(LANGS);
const Memory = z.strictObject({
  id: z.string().min(1),
  subject: z.string().min(1),
  lang: Lang,
  occurredAt: z.iso.datetime(),
  text: z.string().min(1),
});
const Question = z.strictObject({
  id: z.string().min(1),
  lang: Lang,
  direction: z.enum(DIRECTIONS),
  query: z.string().min(1),
  expected: z.array(z.string().min(1)).min(1),
});
const Tenant = z.strictObject({
  id: z.string().regex(/^[a-z0-9-]+$/),
  about: z.string().min(1),
  memories: z.array(Memory).min(1),
  questions: z.array(Question).min(1),
});
export const TestSet = z.strictObject({
  about: z.string(),
  split: z.enum(SPLITS),
  notice: z.string().optional(),
  splitRule: z.string(),
  tenants: z.array(Tenant).min(1),
});
export type Memory = z.infer<typeof Memory>;
export type Question = z.infer<typeof Question>;
export type Tenant = z.infer<typeof Tenant>;
export type TestSet = z.infer<typeof TestSet>;

export const dataFile = (split: Split): string => new URL(`./${split}.json`, import.meta.url).pathname;

/** One part of the test set, checked against the schema. */
export function loadSplit(split: Split): TestSet {
  const set = TestSet.parse(JSON.parse(readFileSync(dataFile(split), 'utf8')));
  if (set.split !== split) throw new Error(`${dataFile(split)} says it is the ${set.split} part`);
  return set;
}
