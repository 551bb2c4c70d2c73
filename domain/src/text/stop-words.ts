/**
 * Words that carry no topic in a question: removed from QUERIES only (never
 * from the index, so a document's every word stays findable and changing
 * this list needs no reindex). English: the classic NLTK list, less the
 * month-and-name homographs ("may", "will", "march", "june" are not here: "what
 * happened in May" must still match a memory's date words, and a person called
 * Will stays findable), plus the question words every question starts with.
 * Chinese: pronouns, structural and modal particles, question words, the
 * copula and the commonest prepositions, as ICU's segmenter cuts them.
 */
const ENGLISH = `
a about above after again against all am an and any are aren't as at be because been before being below between both
but by can can't cannot could couldn't did didn't do does doesn't doing don't down during each few for from further had
hadn't has hasn't have haven't having he he'd he'll he's her here here's hers herself him himself his how how's i i'd
i'll i'm i've if in into is isn't it it's its itself let's me more most mustn't my myself no nor not of off on once only
or other ought our ours ourselves out over own same shan't she she'd she'll she's should shouldn't so some such than that
that's the their theirs them themselves then there there's these they they'd they'll they're they've this those through
to too under until up very was wasn't we we'd we'll we're we've were weren't what what's when when's where where's which
while who who's whom why why's with won't would wouldn't you you'd you'll you're you've your yours yourself yourselves
s t d ll m re ve
`;

const CHINESE = `
的 了 是 在 我 你 您 他 她 它 我们 你们 他们 她们 它们 咱们 这 那 这个 那个 这些 那些 这里 那里 和 与 及 或 或者 也 都 就 还 又
吗 呢 吧 啊 呀 哦 嗯 么 嘛 什么 怎么 怎样 怎么样 如何 哪 哪里 哪儿 哪个 哪些 谁 为什么 为何 何时 什么时候 多少 几 有 没有 不
一个 个 把 被 给 对 从 向 让 着 过 地 得 之 而 但 但是 如果 因为 所以 很 曾 曾经 已经
`;

const STOP_WORDS: ReadonlySet<string> = new Set(`${ENGLISH} ${CHINESE}`.split(/\s+/).filter(Boolean));

/** True for a lower-cased token that is a query stop word (curly apostrophes read as straight ones). */
export function isStopWord(token: string): boolean {
  return STOP_WORDS.has(token.replaceAll('’', "'"));
}
