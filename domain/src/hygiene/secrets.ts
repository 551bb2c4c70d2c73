import { z } from 'zod';
import { DomainError } from '../shared/errors';
import { cardIssuerLengthValid, ibanValid, luhnValid, residentIdValid } from './checksums';

export const SecretKind = z.enum(['api_key', 'token', 'private_key', 'password', 'payment_card', 'cn_resident_id', 'iban']);
export type SecretKind = z.infer<typeof SecretKind>;

/**
 * Where a secret sits in the scanned text, as UTF-16 offsets (`text.slice(start, end)`).
 * A finding never carries the secret itself, so it can be logged, stored and put in errors.
 */
export interface SecretFinding {
  kind: SecretKind;
  start: number;
  end: number;
}

type Detect = (text: string) => SecretFinding[];

/**
 * A shape detector: `pattern` must be global and, when `group` is set, carry the
 * `d` flag so the group's offsets are known (the key of a `password=` pair is
 * not part of the secret and stays readable after redaction).
 */
function shape(kind: SecretKind, pattern: RegExp, options: { group?: number; accept?: (secret: string) => boolean } = {}): Detect {
  const group = options.group ?? 0;
  return (text) => {
    const found: SecretFinding[] = [];
    for (const match of text.matchAll(pattern)) {
      const [start, end] = group === 0 ? [match.index, match.index + match[0].length] : match.indices![group];
      if (options.accept && !options.accept(text.slice(start, end))) continue;
      found.push({ kind, start, end });
    }
    return found;
  };
}

const hasLetterAndDigit = (s: string) => /\d/.test(s) && /[A-Za-z]/.test(s);

/** Values that are placeholders or our own redaction markers, so re-scanning redacted text finds nothing. */
const PLACEHOLDER = /^(?:\[REDACTED:.*|\*+|x{4,}|\$\{.*\}|\{\{.*\}\}|<.*>|%s|null|none|undefined|empty|redacted)$/i;

/** A pair value: printable ASCII up to whitespace, a quote, `;` or `,` (CJK text runs on without spaces, so Han characters end it too). */
const VALUE = String.raw`["'\x60]?([!#-&(-+\--:<-_a-~]{4,})`;
const pairValue = (secret: string) => !PLACEHOLDER.test(secret);
const KEY_END = String.raw`["']?\s*[:=]\s*`;
/** A key starts a word, and is not the kind inside one of our own markers (`[REDACTED:password:…]`). */
const KEY_START = String.raw`(?<![A-Za-z0-9]|\[REDACTED:)`;

const API_KEY_SHAPES: Detect[] = [
  shape('api_key', /(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])/g),
  shape('api_key', new RegExp(String.raw`aws_secret_access_key${KEY_END}["']?([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])`, 'gid'), { group: 1 }),
  shape('api_key', /(?<![A-Za-z0-9])[sr]k_live_[A-Za-z0-9]{16,}/g),
  shape('api_key', /(?<![A-Za-z0-9_-])sk-[A-Za-z0-9_-]{20,}/g, { accept: (s) => hasLetterAndDigit(s.slice(3)) }),
  shape('api_key', /(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])/g),
];

const TOKEN_SHAPES: Detect[] = [
  shape('token', /(?<![A-Za-z0-9])gh[pousr]_[A-Za-z0-9]{36}(?![A-Za-z0-9])/g),
  shape('token', /(?<![A-Za-z0-9])github_pat_[A-Za-z0-9_]{22,}/g),
  shape('token', /(?<![A-Za-z0-9])glpat-[A-Za-z0-9_-]{20,}/g),
  shape('token', /(?<![A-Za-z0-9])xox[abposr]-[A-Za-z0-9-]{10,}/g),
  shape('token', /(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}(?![A-Za-z0-9_-])/g),
  shape('token', /Authorization\s*:\s*Bearer\s+([A-Za-z0-9._~+/-]{16,}=*)/dgi, { group: 1 }),
  // Outside a header "Bearer" is also an English word, so the token must look random.
  shape('token', /(?<![A-Za-z])Bearer\s+([A-Za-z0-9._~+/-]{20,}=*)/dg, { group: 1, accept: hasLetterAndDigit }),
];

/**
 * A truncated key (no END line) is still a leak: it then runs to the end of the
 * text, because where the key material stops cannot be known.
 */
const PRIVATE_KEY = shape(
  'private_key',
  /-----BEGIN ((?:RSA |EC |OPENSSH |DSA |ENCRYPTED |PGP )?PRIVATE KEY(?: BLOCK)?)-----(?:[\s\S]*?-----END \1-----|[\s\S]*)/g,
);

const PAIRS: Detect[] = [
  shape('password', new RegExp(String.raw`${KEY_START}(?:password|passwd|pwd|secret)${KEY_END}${VALUE}`, 'gid'), {
    group: 1,
    accept: pairValue,
  }),
  shape('password', new RegExp(String.raw`密码\s*(?:[:：=]|是|为)\s*${VALUE}`, 'gd'), { group: 1, accept: pairValue }),
  shape('api_key', new RegExp(String.raw`${KEY_START}api[_-]?key${KEY_END}${VALUE}`, 'gid'), { group: 1, accept: pairValue }),
  shape('token', new RegExp(String.raw`${KEY_START}(?:access|auth|refresh)[_-]?token${KEY_END}${VALUE}`, 'gid'), {
    group: 1,
    accept: pairValue,
  }),
];

/** Chinese resident id; the lookarounds keep it from matching inside a longer run of digits. */
const RESIDENT_ID = shape('cn_resident_id', /(?<!\d)[1-9]\d{16}[\dXx](?![\dXx])/g, { accept: residentIdValid });

/**
 * Card numbers are written as one run of digits or as groups split by single
 * spaces or dashes. Only windows of whole groups are tried, so a card is never
 * cut out of the middle of a longer number, and the longest valid window wins.
 */
const CARD_RUN = /(?<!\d)\d+(?:[ -]\d+)*/g;

function cardShape(groups: string[], separators: string[]): boolean {
  if (groups.length === 1) return true;
  if (new Set(separators).size > 1) return false;
  const sizes = groups.map((g) => g.length);
  const amex = sizes.join() === '4,6,5' || sizes.join() === '4,6,4';
  const fours = sizes.slice(0, -1).every((s) => s === 4) && sizes[sizes.length - 1] <= 4;
  return amex || fours;
}

function detectCards(text: string): SecretFinding[] {
  const found: SecretFinding[] = [];
  for (const run of text.matchAll(CARD_RUN)) {
    const groups: { digits: string; start: number }[] = [];
    const separators: string[] = [];
    for (const part of run[0].matchAll(/\d+/g)) {
      if (part.index > 0) separators.push(run[0][part.index - 1]);
      groups.push({ digits: part[0], start: run.index + part.index });
    }
    let i = 0;
    while (i < groups.length) {
      let best = -1;
      let digits = '';
      // Grouped numbers start with a group of four, so other starts can only be a single compact group.
      const lastJ = groups[i].digits.length === 4 ? groups.length - 1 : i;
      for (let j = i; j <= lastJ && digits.length + groups[j].digits.length <= 19; j++) {
        digits += groups[j].digits;
        if (digits.length < 13 || !cardIssuerLengthValid(digits) || !luhnValid(digits)) continue;
        if (
          cardShape(
            groups.slice(i, j + 1).map((g) => g.digits),
            separators.slice(i, j),
          )
        )
          best = j;
      }
      if (best < 0) {
        i++;
        continue;
      }
      const last = groups[best];
      found.push({ kind: 'payment_card', start: groups[i].start, end: last.start + last.digits.length });
      i = best + 1;
    }
  }
  return found;
}

/**
 * IBANs are written compact or in groups of four. A greedy match may swallow a
 * following group of four ("… 3000 2024"), so trailing groups are dropped until
 * the checksum holds. At most 8 groups (34 characters, the longest IBAN) keeps
 * that trimming bounded on long runs of capitals.
 */
const IBAN_CANDIDATE = /(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?:(?: [A-Z0-9]{4}){1,8}(?: [A-Z0-9]{1,3})?|[A-Z0-9]{11,30})(?![A-Za-z0-9])/g;

function detectIbans(text: string): SecretFinding[] {
  const found: SecretFinding[] = [];
  for (const match of text.matchAll(IBAN_CANDIDATE)) {
    let candidate = match[0];
    while (candidate.replace(/ /g, '').length >= 15) {
      if (ibanValid(candidate.replace(/ /g, ''))) {
        found.push({ kind: 'iban', start: match.index, end: match.index + candidate.length });
        break;
      }
      const lastSpace = candidate.lastIndexOf(' ');
      if (lastSpace < 0) break;
      candidate = candidate.slice(0, lastSpace);
    }
  }
  return found;
}

const DETECTORS: Detect[] = [PRIVATE_KEY, ...API_KEY_SHAPES, ...TOKEN_SHAPES, ...PAIRS, detectCards, RESIDENT_ID, detectIbans];

/**
 * Of overlapping findings the longest is kept; on a tie, the one whose detector
 * comes first (the more specific shape). Kept findings never overlap, so sorted
 * by start they are sorted by end too, and a binary search finds the neighbours
 * to test: a text full of `password=` pairs stays O(n log n).
 */
function keepLongest(findings: SecretFinding[]): SecretFinding[] {
  const bySize = [...findings].sort((a, b) => b.end - b.start - (a.end - a.start) || a.start - b.start);
  const kept: SecretFinding[] = [];
  for (const f of bySize) {
    let lo = 0;
    let hi = kept.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (kept[mid].start < f.start) lo = mid + 1;
      else hi = mid;
    }
    const before = kept[lo - 1];
    const after = kept[lo];
    if ((before && before.end > f.start) || (after && after.start < f.end)) continue;
    kept.splice(lo, 0, f);
  }
  return kept;
}

/** Secrets in `text`, in order of position, none overlapping. */
/**
 * Something every detector needs to be present: a prefix of a key shape, a
 * pair key, a private-key armour line, or a long or grouped run of digits.
 * Most text has none, and one pass of this costs far less than running every
 * detector. When a detector is added, its trigger must be added here (the
 * positive tests of each detector fail otherwise).
 */
const MAYBE_SECRET =
  /-----BEGIN|AKIA|ASIA|aws_secret|[sr]k_live_|sk-|AIza|gh[pousr]_|github_pat_|glpat-|xox[abposr]-|eyJ|bearer|passw|pwd|secret|api[_-]?key|token|密码|\d{13}|\d{4}[ -]\d{4}|[A-Z]{2}\d{2} ?[A-Z0-9]{4}/i;

export function detectSecrets(text: string): SecretFinding[] {
  if (!MAYBE_SECRET.test(text)) return [];
  return keepLongest(DETECTORS.flatMap((detect) => detect(text)));
}

/** Findings that do not fit the text they are applied to. The message names offsets only, never content. */
export class InvalidSecretFinding extends DomainError {
  constructor(start: number, end: number, length: number) {
    super('HYGIENE.INVALID_FINDING', `finding [${start}, ${end}) does not fit a text of length ${length}`, { start, end, length });
  }
}

/**
 * Replaces each finding by `[REDACTED:<kind>:<12 chars of fingerprint(secret)>]`.
 * `fingerprint` should be keyed (an HMAC), so the marker lets equal secrets be
 * recognised as equal without a dictionary attack on short ones such as passwords.
 */
export function redactSecrets(text: string, findings: readonly SecretFinding[], fingerprint: (secret: string) => string): string {
  let out = '';
  let cursor = 0;
  for (const f of [...findings].sort((a, b) => a.start - b.start)) {
    if (!(Number.isInteger(f.start) && Number.isInteger(f.end) && f.start >= 0 && f.start < f.end && f.end <= text.length)) {
      throw new InvalidSecretFinding(f.start, f.end, text.length);
    }
    // Overlaps only come from hand-made findings; the earlier one already covers the start.
    const start = Math.max(f.start, cursor);
    if (start >= f.end) continue;
    out += text.slice(cursor, start) + `[REDACTED:${f.kind}:${fingerprint(text.slice(f.start, f.end)).slice(0, 12)}]`;
    cursor = f.end;
  }
  return out + text.slice(cursor);
}
