const MONTHS = ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december'];
const WEEKDAYS = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'];
const WEEKDAYS_ZH = ['日', '一', '二', '三', '四', '五', '六'];

/**
 * How a day is written, in English and Chinese, for the memory's valid time
 * (an episode's `occurredAt`): "8 May 2023, Monday" and "2023年5月8日 星期一
 * 周一", so a question naming the day, the month or the weekday in either
 * language finds what happened then. The text is cut by the same tokenizer
 * as a query (ICU splits "2023年" into "2023" and "年"), so both sides agree
 * however the segmenter treats dates. Days are taken in UTC: an event carries
 * no time zone of its speaker, and the index must not depend on the server's.
 * Undefined for a time that does not parse.
 */
export function dateText(iso: string): string | undefined {
  const at = new Date(iso);
  if (Number.isNaN(at.getTime())) return undefined;
  const year = at.getUTCFullYear();
  const month = at.getUTCMonth();
  const day = at.getUTCDate();
  const weekday = at.getUTCDay();
  return `${day} ${MONTHS[month]} ${year} ${WEEKDAYS[weekday]}\n${year}年${month + 1}月${day}日 星期${WEEKDAYS_ZH[weekday]} 周${WEEKDAYS_ZH[weekday]}`;
}
