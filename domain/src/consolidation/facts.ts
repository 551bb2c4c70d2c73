/**
 * Fact extraction from episodic text for simple, explicit patterns in English
 * and Chinese (docs/architecture.md#consolidation): preferences, commitments with dates, and role
 * statements, said by the speaker about themselves. Deliberately narrow: a
 * pattern that fires must be right, because what it extracts becomes a
 * semantic memory (with lower confidence than the event it came from).
 */

export type ExtractedAttribute = 'preference' | 'dislike' | 'commitment' | 'role';

export interface ExtractedFact {
  attribute: ExtractedAttribute;
  value: string;
  /** For commitments: the due date (ISO date, `YYYY-MM-DD`) when the text names one. */
  due?: string;
  /** Which pattern fired (recorded as the derived record's rule). */
  pattern: string;
}

interface Pattern {
  name: string;
  attribute: ExtractedAttribute;
  regex: RegExp;
}

const CLAUSE_END = String.raw`(?=[.!?;,。！？；，]|$| but | and then )`;

const PATTERNS: Pattern[] = [
  {
    name: 'en.dislike',
    attribute: 'dislike',
    regex: new RegExp(String.raw`\bI (?:do not|don't|dont) (?:like|want|enjoy) (.+?)${CLAUSE_END}`, 'giu'),
  },
  {
    name: 'en.preference',
    attribute: 'preference',
    regex: new RegExp(String.raw`\bI (?:prefer|like|love|enjoy|would rather|'d rather) (.+?)${CLAUSE_END}`, 'giu'),
  },
  { name: 'en.favourite', attribute: 'preference', regex: new RegExp(String.raw`\bmy favou?rite [\p{L} ]+? is (.+?)${CLAUSE_END}`, 'giu') },
  {
    name: 'en.commitment',
    attribute: 'commitment',
    regex: new RegExp(String.raw`\b(?:I|we) (?:will|'ll|shall|promise to|commit to) (.+?)${CLAUSE_END}`, 'giu'),
  },
  {
    name: 'en.role',
    attribute: 'role',
    regex: new RegExp(
      String.raw`\bI(?: am|'m) (?:the|a|an) ((?:[\p{L}-]+ ){0,3}(?:manager|lead|owner|director|engineer|approver|officer|head|architect|analyst|consultant|CFO|CEO|CTO|DPO)\b(?: (?:for|of|at) [\p{L}\p{N} -]+?)?)${CLAUSE_END}`,
      'giu',
    ),
  },
  { name: 'zh.dislike', attribute: 'dislike', regex: /我(?:不喜欢|不想要|讨厌)([^，。！？；,.!?;]+)/gu },
  { name: 'zh.preference', attribute: 'preference', regex: /我(?:更喜欢|喜欢|偏好|倾向于|比较喜欢)([^，。！？；,.!?;]+)/gu },
  { name: 'zh.commitment', attribute: 'commitment', regex: /我(?:们)?(?:会|将|承诺|保证)([^，。！？；,.!?;]+)/gu },
  {
    name: 'zh.role',
    attribute: 'role',
    regex: /我(?:是|担任)([^，。！？；,.!?;]{1,20}?(?:经理|负责人|主管|总监|工程师|审批人|总裁|主任|顾问))/gu,
  },
];

const MONTHS: Record<string, number> = {
  jan: 1,
  feb: 2,
  mar: 3,
  apr: 4,
  may: 5,
  jun: 6,
  jul: 7,
  aug: 8,
  sep: 9,
  oct: 10,
  nov: 11,
  dec: 12,
};
const WEEKDAYS = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'];

/** Facts stated in `text`; `occurredAt` (ISO) anchors relative dates ("by Friday", "明天"). */
export function extractFacts(text: string, occurredAt: string): ExtractedFact[] {
  const facts: ExtractedFact[] = [];
  const taken: [number, number][] = [];
  for (const pattern of PATTERNS) {
    for (const match of text.matchAll(pattern.regex)) {
      const start = match.index ?? 0;
      const end = start + match[0].length;
      // A span claimed by an earlier (more specific) pattern is not read again ("I don't like" is not "I like").
      if (taken.some(([s, e]) => start < e && s < end)) continue;
      const value = match[1].trim().replace(/\s+/gu, ' ');
      if (value.length < 2 || value.length > 200) continue;
      taken.push([start, end]);
      const fact: ExtractedFact = { attribute: pattern.attribute, value, pattern: pattern.name };
      if (pattern.attribute === 'commitment') {
        const due = dueDate(value, occurredAt);
        if (due) fact.due = due;
      }
      facts.push(fact);
    }
  }
  return facts;
}

/** A commitment's date: ISO, "10 December", "December 10", a weekday (the next one), tomorrow, or Chinese 明天/后天/X月Y日/周X. */
export function dueDate(text: string, occurredAt: string): string | undefined {
  const base = new Date(occurredAt);
  const iso = /\b(\d{4})-(\d{2})-(\d{2})\b/u.exec(text);
  if (iso) return `${iso[1]}-${iso[2]}-${iso[3]}`;
  const dayMonth = /\b(\d{1,2}) (jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b/iu.exec(text);
  const monthDay = /\b(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]* (\d{1,2})\b/iu.exec(text);
  const zhDate = /(\d{1,2})月(\d{1,2})[日号]/u.exec(text);
  const md = dayMonth
    ? { month: MONTHS[dayMonth[2].toLowerCase()], day: Number(dayMonth[1]) }
    : monthDay
      ? { month: MONTHS[monthDay[1].toLowerCase()], day: Number(monthDay[2]) }
      : zhDate
        ? { month: Number(zhDate[1]), day: Number(zhDate[2]) }
        : undefined;
  if (md) {
    // The next such date on or after the event.
    let year = base.getUTCFullYear();
    if (Date.UTC(year, md.month - 1, md.day) < Date.UTC(year, base.getUTCMonth(), base.getUTCDate())) year += 1;
    return isoDay(Date.UTC(year, md.month - 1, md.day));
  }
  const plusDays = (n: number) => isoDay(Date.UTC(base.getUTCFullYear(), base.getUTCMonth(), base.getUTCDate() + n));
  if (/\btomorrow\b|明天/iu.test(text)) return plusDays(1);
  if (/后天/u.test(text)) return plusDays(2);
  const weekday = new RegExp(String.raw`\b(?:by|on|next)? ?(${WEEKDAYS.join('|')})\b`, 'iu').exec(text);
  const zhWeekday = /(?:周|星期|礼拜)([一二三四五六日天])/u.exec(text);
  const target = weekday
    ? WEEKDAYS.indexOf(weekday[1].toLowerCase())
    : zhWeekday
      ? '日一二三四五六'.indexOf(zhWeekday[1] === '天' ? '日' : zhWeekday[1])
      : -1;
  if (target >= 0) {
    const ahead = (target - base.getUTCDay() + 7) % 7 || 7;
    return plusDays(ahead);
  }
  return undefined;
}

const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);
