const MONTHS = ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december'];
const WEEKDAYS = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'];
const WEEKDAYS_ZH = ['日', '一', '二', '三', '四', '五', '六'];

/** The parts of a valid time's day in UTC, or undefined for a time that does not parse. */
function dayOf(iso: string): { year: number; month: number; day: number; weekday: number } | undefined {
  const at = new Date(iso);
  if (Number.isNaN(at.getTime())) return undefined;
  return { year: at.getUTCFullYear(), month: at.getUTCMonth(), day: at.getUTCDate(), weekday: at.getUTCDay() };
}

/**
 * How a day is written, in English and Chinese, for the memory's valid time
 * (an episode's `occurredAt`): "8 May 2023, Monday" and "2023年5月8日 星期一
 * 周一", so a question naming the day, the month or the weekday in either
 * language finds what happened then. Days are taken in UTC: an event carries
 * no time zone of its speaker, and the index must not depend on the server's.
 * Undefined for a time that does not parse.
 */
export function dateText(iso: string): string | undefined {
  const d = dayOf(iso);
  if (!d) return undefined;
  const zh = WEEKDAYS_ZH[d.weekday];
  return `${d.day} ${MONTHS[d.month]} ${d.year} ${WEEKDAYS[d.weekday]}\n${d.year}年${d.month + 1}月${d.day}日 星期${zh} 周${zh}`;
}

/**
 * `tokenize(dateText(iso))` without the tokenizer: the words exactly as ICU
 * cuts that text ("2023年" into "2023" and "年"; the unit spec checks every
 * day of several years against the tokenizer), because segmenting Chinese
 * costs more than everything else a record's terms need.
 */
export function dateWords(iso: string): string[] {
  const d = dayOf(iso);
  if (!d) return [];
  const zh = WEEKDAYS_ZH[d.weekday];
  const [year, month, day] = [String(d.year), String(d.month + 1), String(d.day)];
  return [day, MONTHS[d.month], year, WEEKDAYS[d.weekday], year, '年', month, '月', day, '日', `星期${zh}`, `周${zh}`];
}
