import { SENSITIVITY_RANK, type Sensitivity } from '../memory/record';
import { detectSecrets, type SecretKind } from './secrets';

export type PersonalKind = 'email' | 'phone';

/** Something in a text that says who it is about or what it unlocks; offsets as in `SecretFinding`. */
export interface PersonalMarker {
  kind: PersonalKind | SecretKind;
  start: number;
  end: number;
}

const EMAIL =
  /(?<![A-Za-z0-9._%+-])[A-Za-z0-9][A-Za-z0-9._%+-]*@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*\.[A-Za-z]{2,}(?![A-Za-z0-9-])/g;

/** E.164 as people write it: "+86 138 0013 8000", "+1 (415) 555-2671", "+4930123456". */
const INTERNATIONAL_PHONE = /(?<![\w+])\+[1-9][\d ()-]{6,22}\d(?!\d)/g;
const E164_DIGITS = { min: 8, max: 15 };

/** Mainland mobile numbers, compact or 3-4-4. */
const CN_MOBILE = /(?<!\d)1[3-9]\d(?:\d{8}|([ -])\d{4}\1\d{4})(?!\d)/g;

function markers(text: string, pattern: RegExp, kind: PersonalKind, accept: (s: string) => boolean = () => true): PersonalMarker[] {
  return [...text.matchAll(pattern)].filter((m) => accept(m[0])).map((m) => ({ kind, start: m.index, end: m.index + m[0].length }));
}

function plausibleInternational(s: string): boolean {
  const digits = s.replace(/\D/g, '').length;
  return digits >= E164_DIGITS.min && digits <= E164_DIGITS.max && !/[ ()-]{3}/.test(s);
}

/** Emails, phone numbers and secrets in `text`, in order of position. Overlaps are kept: each says something. */
export function detectPersonalMarkers(text: string): PersonalMarker[] {
  return [...contactMarkers(text), ...detectSecrets(text)].sort((a, b) => a.start - b.start || a.end - b.end);
}

/** Cheap guards first: an address needs an @, a phone number a run of digits. */
function contactMarkers(text: string): PersonalMarker[] {
  const digits = /\d{3}/.test(text);
  return [
    ...(text.includes('@') ? markers(text, EMAIL, 'email') : []),
    ...(digits ? markers(text, INTERNATIONAL_PHONE, 'phone', plausibleInternational) : []),
    ...(digits ? markers(text, CN_MOBILE, 'phone') : []),
  ];
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const WORDLIKE = /[\p{Script=Latin}\p{N}_]/u;

/**
 * A keyword matches case-insensitively after NFKC folding (full-width letters
 * count). Latin keywords match whole words only ("secret" does not fire on
 * "secretary"); Chinese is written without spaces, so there a substring is a match.
 */
function keywordPattern(keyword: string): RegExp {
  const k = keyword.normalize('NFKC').trim();
  const before = WORDLIKE.test(k[0]) ? String.raw`(?<![\p{L}\p{N}_])` : '';
  const after = WORDLIKE.test(k[k.length - 1]) ? String.raw`(?![\p{L}\p{N}_])` : '';
  return new RegExp(before + escapeRegExp(k) + after, 'iu');
}

function matchedKeywords(text: string, keywords: readonly string[]): string[] {
  return keywords.filter((k) => k.trim() !== '' && keywordPattern(k).test(text));
}

export interface SensitivityKeywords {
  confidential: readonly string[];
  restricted: readonly string[];
}

export interface SensitivityFloor {
  /** The lowest sensitivity the text may be stored at; 'public' means no rule raised it. */
  floor: Sensitivity;
  /** Why, as `secret:<kind>`, `personal:<kind>` or `keyword:<level>:<keyword>`; never the matched text. */
  reasons: string[];
}

/**
 * Rules only: secrets make a text restricted, personal data confidential,
 * and configured keywords whatever level they are listed under. The caller's
 * own choice still applies through `raiseSensitivity`.
 */
/**
 * `knownSecrets`: the kinds a caller already found with `detectSecrets` on
 * the same text, so the scan is not run twice on the write path.
 */
export function classifySensitivity(text: string, keywords: SensitivityKeywords, knownSecrets?: readonly SecretKind[]): SensitivityFloor {
  const found: PersonalMarker[] = knownSecrets
    ? [...contactMarkers(text), ...knownSecrets.map((kind) => ({ kind, start: 0, end: 0 }))]
    : detectPersonalMarkers(text);
  const normalised = text.normalize('NFKC');
  const secretKinds = [...new Set(found.filter((m) => m.kind !== 'email' && m.kind !== 'phone').map((m) => m.kind))];
  const personalKinds = [...new Set(found.filter((m) => m.kind === 'email' || m.kind === 'phone').map((m) => m.kind))];
  const restricted = [
    ...secretKinds.map((k) => `secret:${k}`),
    ...matchedKeywords(normalised, keywords.restricted).map((k) => `keyword:restricted:${k}`),
  ];
  const confidential = [
    ...personalKinds.map((k) => `personal:${k}`),
    ...matchedKeywords(normalised, keywords.confidential).map((k) => `keyword:confidential:${k}`),
  ];
  const floor: Sensitivity = restricted.length > 0 ? 'restricted' : confidential.length > 0 ? 'confidential' : 'public';
  return { floor, reasons: [...restricted, ...confidential] };
}

/** The higher of the two: rules may raise the requested sensitivity, never lower it. */
export function raiseSensitivity(requested: Sensitivity, floor: Sensitivity): Sensitivity {
  return SENSITIVITY_RANK[floor] > SENSITIVITY_RANK[requested] ? floor : requested;
}
