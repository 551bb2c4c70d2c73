/// <reference lib="dom" />
import type { CertificateCheckResult, ErasureProgress, IdentityProvider, Principal, SignInGrant, SignedCertificate } from '@elma/domain';
import { ApiProblem, call, callJson, session } from './api';
import { h, show } from './dom';
import { initialLang, lang, setLang, t, texts, when } from './i18n';
import { returnedSignIn, startSignIn } from './oidc';

/**
 * The compliance console: sign in with a bearer token, list erasures, request one, approve one (four eyes),
 * follow its steps live, download its certificate, verify a certificate file. Every view is built from the
 * REST API's answers; every refusal is shown as the problem the API sent.
 */

type View = { name: 'list' } | { name: 'request' } | { name: 'verify' } | { name: 'erasure'; id: string };

interface ErasurePage {
  items: ErasureProgress[];
  nextCursor: string | null;
}

const root = document.getElementById('app')!;
let me: Principal | null = null;
let view: View = { name: 'list' };
/** Bumped on every navigation: a poll of a view that is no longer shown stops. */
let generation = 0;
let signInProblem: ApiProblem | null = null;
/** The identity provider the API offers (GET /v1/sign-in): undefined until asked, null for token sign-in only. */
let provider: IdentityProvider | null | undefined;
let providerProblem: ApiProblem | null = null;

const POLL_MS = 1000;
const LIVE: ReadonlySet<string> = new Set(['running', 'awaiting_approval']);

function problemBox(problem: ApiProblem): HTMLElement {
  const known = texts().problems[problem.code];
  return h(
    'div',
    { class: 'problem', role: 'alert', 'data-testid': 'problem' },
    h('strong', {}, known ?? t('problemTitle')),
    h('div', { 'data-testid': 'problem-detail' }, problem.detail),
    problem.errors.length > 0 &&
      h(
        'ul',
        {},
        problem.errors.map((e) => h('li', {}, `${Array.isArray(e.path) ? e.path.join('.') : String(e.path ?? '')}: ${e.message ?? ''}`)),
      ),
    h(
      'div',
      { class: 'meta mono', 'data-testid': 'problem-code' },
      [problem.code, problem.status ? `HTTP ${problem.status}` : '', problem.requestId ? `${t('requestIdLabel')} ${problem.requestId}` : '']
        .filter(Boolean)
        .join(' · '),
    ),
  );
}

function asProblem(error: unknown): ApiProblem {
  return error instanceof ApiProblem ? error : new ApiProblem(0, 'CONSOLE.ERROR', error instanceof Error ? error.message : String(error));
}

/** A 401 during use (expired, revoked): back to sign-in, saying why. */
function handle(error: unknown, into?: HTMLElement): void {
  const problem = asProblem(error);
  if (problem.status === 401) {
    signOut(problem);
    return;
  }
  if (into) show(into, problemBox(problem));
}

function navigate(next: View): void {
  view = next;
  generation++;
  render();
}

function signOut(problem: ApiProblem | null = null): void {
  session.signOut();
  me = null;
  signInProblem = problem;
  generation++;
  render();
}

function header(): HTMLElement {
  return h(
    'header',
    {},
    h('h1', {}, t('title')),
    me &&
      h(
        'span',
        { class: 'who', 'data-testid': 'who' },
        t('signedInAs', { sub: me.sub, tenant: me.tenant, roles: me.roles.length ? me.roles.join(', ') : t('noRoles') }),
      ),
    h(
      'button',
      {
        type: 'button',
        'data-testid': 'language',
        onclick: () => {
          setLang(lang() === 'en' ? 'zh' : 'en');
          render();
        },
      },
      t('language'),
    ),
    me && h('button', { type: 'button', 'data-testid': 'sign-out', onclick: () => signOut() }, t('signOut')),
  );
}

function nav(): HTMLElement {
  const tab = (name: 'list' | 'request' | 'verify', label: string) =>
    h(
      'button',
      {
        type: 'button',
        'data-testid': `tab-${name}`,
        'aria-current': view.name === name || (name === 'list' && view.name === 'erasure') ? 'page' : undefined,
        onclick: () => navigate({ name }),
      },
      label,
    );
  return h('nav', {}, tab('list', t('tabList')), tab('request', t('tabRequest')), tab('verify', t('tabVerify')));
}

function render(): void {
  const main = h('main', {});
  show(root, header(), me ? nav() : null, main, h('footer', {}, t('footer')));
  if (!me) return renderSignIn(main);
  switch (view.name) {
    case 'list':
      return renderList(main);
    case 'request':
      return renderRequest(main);
    case 'verify':
      return renderVerify(main);
    case 'erasure':
      return renderErasure(main, view.id);
  }
}

function renderSignIn(main: HTMLElement): void {
  // Masked like a password: a token on screen is a token in every screenshot and over every shoulder.
  const token = h('input', {
    id: 'token',
    type: 'password',
    'data-testid': 'token',
    autocomplete: 'off',
    spellcheck: 'false',
  }) as HTMLInputElement;
  const status = h('div', {}, signInProblem && problemBox(signInProblem));
  if (provider === undefined) {
    void loadProvider().then(() => {
      if (!me) render();
    });
  }
  const submit = async (event: Event) => {
    event.preventDefault();
    const value = token.value.trim();
    if (!value) return;
    try {
      me = await callJson<Principal>('/v1/session', { token: value });
      session.signIn(value);
      signInProblem = null;
      navigate({ name: 'list' });
    } catch (error) {
      show(status, problemBox(asProblem(error)));
    }
  };
  main.append(
    h(
      'form',
      { class: 'card', 'data-testid': 'sign-in', onsubmit: submit },
      h('h2', {}, t('signInTitle')),
      provider && identityProviderSignIn(provider, status),
      providerProblem && h('div', { 'data-testid': 'idp-problem' }, problemBox(providerProblem)),
      h(
        'p',
        { class: 'hint' },
        t('signInHint'),
        // `elma token` mints only for the shared secret, not when an identity provider signs the tokens.
        !provider && [' ', t('mintHint'), ' ', h('code', {}, 'npx elma token --tenant acme --sub comp-1 --roles compliance')],
      ),
      h('label', { for: 'token' }, t('token')),
      token,
      status,
      h('div', { class: 'actions' }, h('button', { type: 'submit', 'data-testid': 'sign-in-submit' }, t('signIn'))),
    ),
  );
}

/** Asks the API once which identity provider it offers; a provider that cannot be reached leaves token sign-in. */
async function loadProvider(): Promise<void> {
  try {
    provider = (await callJson<{ identityProvider: IdentityProvider | null }>('/v1/sign-in', { token: '' })).identityProvider;
    providerProblem = null;
  } catch (error) {
    provider = null;
    providerProblem = asProblem(error);
  }
}

function identityProviderSignIn(idp: IdentityProvider, status: HTMLElement): HTMLElement {
  const go = () => void startSignIn(idp).catch((error: unknown) => show(status, problemBox(asProblem(error))));
  return h(
    'div',
    { class: 'idp' },
    h(
      'button',
      { type: 'button', 'data-testid': 'sign-in-idp', onclick: go },
      t('signInWith', { name: idp.name ?? t('identityProvider') }),
    ),
    h('p', { class: 'hint' }, t('orToken')),
  );
}

function statusBadge(status: string): HTMLElement {
  const tone = status === 'completed' ? 'ok' : status === 'awaiting_approval' ? 'wait' : status === 'running' ? 'run' : 'bad';
  return h('span', { class: `badge ${tone}`, 'data-testid': 'status' }, texts().statuses[status] ?? status);
}

function renderList(main: HTMLElement): void {
  const mine = generation;
  const statusFilter = h(
    'select',
    { id: 'status-filter', 'data-testid': 'status-filter' },
    h('option', { value: '' }, t('anyStatus')),
    Object.entries(texts().statuses).map(([value, label]) => h('option', { value }, label)),
  ) as HTMLSelectElement;
  const body = h('div', { 'data-testid': 'erasure-list' });
  const more = h('div', { class: 'actions' });
  const rows: ErasureProgress[] = [];

  const load = async (cursor: string | null) => {
    const query = new URLSearchParams({ limit: '20' });
    if (statusFilter.value) query.set('status', statusFilter.value);
    if (cursor) query.set('cursor', cursor);
    try {
      const page = await callJson<ErasurePage>(`/v1/erasures?${query}`);
      if (mine !== generation) return;
      if (!cursor) rows.length = 0;
      rows.push(...page.items);
      show(body, rows.length ? table(rows) : h('p', { class: 'hint' }, t('noErasures')));
      show(
        more,
        page.nextCursor &&
          h('button', { type: 'button', class: 'secondary', 'data-testid': 'more', onclick: () => load(page.nextCursor) }, t('more')),
      );
    } catch (error) {
      const problem = asProblem(error);
      // An ELMA without the listing answers GET /v1/erasures with 404 or 405 (the path takes POST only).
      if (problem.code === 'ROUTE.NOT_FOUND' || problem.code === 'ROUTE.METHOD_NOT_ALLOWED')
        show(body, h('div', { class: 'notice', 'data-testid': 'list-unavailable' }, t('listUnavailable')));
      else handle(error, body);
    }
  };

  const table = (items: ErasureProgress[]) =>
    h(
      'table',
      {},
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          [t('requestId'), t('status'), t('reason'), t('closure'), t('currentStep'), t('certificate')].map((c) => h('th', {}, c)),
        ),
      ),
      h(
        'tbody',
        {},
        items.map((e) =>
          h(
            'tr',
            { class: 'link', 'data-testid': 'erasure-row', onclick: () => navigate({ name: 'erasure', id: e.requestId }) },
            h('td', { class: 'mono' }, e.requestId),
            h('td', {}, statusBadge(e.status)),
            h('td', {}, texts().reasons[e.reason] ?? e.reason),
            h('td', {}, e.closureSize ?? t('nobody')),
            h('td', {}, e.currentStep ? (texts().steps[e.currentStep] ?? e.currentStep) : t('nobody')),
            h('td', {}, e.certificateAvailable ? t('available') : t('nobody')),
          ),
        ),
      ),
    );

  const byId = h('input', { id: 'open-id', 'data-testid': 'open-id', placeholder: 'era_…', autocomplete: 'off' }) as HTMLInputElement;
  statusFilter.addEventListener('change', () => void load(null));
  main.append(
    h(
      'section',
      { class: 'card' },
      h('h2', {}, t('listTitle')),
      h(
        'div',
        { class: 'actions' },
        h('label', { for: 'status-filter' }, t('status')),
        statusFilter,
        h('button', { type: 'button', class: 'secondary', 'data-testid': 'refresh', onclick: () => load(null) }, t('refresh')),
      ),
      body,
      more,
    ),
    h(
      'form',
      {
        class: 'card',
        'data-testid': 'open-form',
        onsubmit: (event: Event) => {
          event.preventDefault();
          if (byId.value.trim()) navigate({ name: 'erasure', id: byId.value.trim() });
        },
      },
      h('label', { for: 'open-id' }, t('openById')),
      byId,
      h('div', { class: 'actions' }, h('button', { type: 'submit', 'data-testid': 'open-submit' }, t('open'))),
    ),
  );
  void load(null);
}

function renderRequest(main: HTMLElement): void {
  const scopeType = h(
    'select',
    { id: 'scope-type', 'data-testid': 'scope-type' },
    h('option', { value: 'subject' }, t('scopeSubject')),
    h('option', { value: 'records' }, t('scopeRecords')),
    h('option', { value: 'time_range' }, t('scopeTimeRange')),
  ) as HTMLSelectElement;
  const subject = h('input', { id: 'subject', 'data-testid': 'subject', autocomplete: 'off' }) as HTMLInputElement;
  const recordIds = h('textarea', { id: 'record-ids', 'data-testid': 'record-ids' }) as HTMLTextAreaElement;
  const from = h('input', { id: 'from', type: 'datetime-local', step: '1', 'data-testid': 'from' }) as HTMLInputElement;
  const to = h('input', { id: 'to', type: 'datetime-local', step: '1', 'data-testid': 'to' }) as HTMLInputElement;
  const reason = h(
    'select',
    { id: 'reason', 'data-testid': 'reason' },
    Object.entries(texts().reasons).map(([value, label]) => h('option', { value }, label)),
  ) as HTMLSelectElement;
  const fields = h('div', {});
  const status = h('div', {});
  const subjectLabel = h('label', { for: 'subject' });

  const showFields = () => {
    const type = scopeType.value;
    subjectLabel.textContent = type === 'time_range' ? t('subjectOptional') : t('subject');
    show(
      fields,
      type !== 'records' && [subjectLabel, subject],
      type === 'records' && [h('label', { for: 'record-ids' }, t('recordIds')), recordIds],
      type === 'time_range' &&
        h(
          'div',
          { class: 'row' },
          h('div', {}, h('label', { for: 'from' }, t('from')), from),
          h('div', {}, h('label', { for: 'to' }, t('to')), to),
        ),
    );
  };
  scopeType.addEventListener('change', showFields);
  showFields();

  // datetime-local has no zone: the officer's local time, sent as an instant.
  const instant = (value: string) => (value ? new Date(value).toISOString() : value);
  const scope = (): unknown => {
    switch (scopeType.value) {
      case 'records':
        return {
          type: 'records',
          recordIds: recordIds.value
            .split(/[\s,]+/)
            .map((id) => id.trim())
            .filter(Boolean),
        };
      case 'time_range':
        return {
          type: 'time_range',
          from: instant(from.value),
          to: instant(to.value),
          ...(subject.value.trim() ? { subject: subject.value.trim() } : {}),
        };
      default:
        return { type: 'subject', subject: subject.value.trim() };
    }
  };

  main.append(
    h(
      'form',
      {
        class: 'card',
        'data-testid': 'request-form',
        onsubmit: async (event: Event) => {
          event.preventDefault();
          try {
            const progress = await callJson<ErasureProgress>('/v1/erasures', {
              method: 'POST',
              json: { scope: scope(), reason: reason.value },
            });
            navigate({ name: 'erasure', id: progress.requestId });
          } catch (error) {
            handle(error, status);
          }
        },
      },
      h('h2', {}, t('requestTitle')),
      h('p', { class: 'hint' }, t('requestHint')),
      h('label', { for: 'scope-type' }, t('scope')),
      scopeType,
      fields,
      h('label', { for: 'reason' }, t('reason')),
      reason,
      status,
      h('div', { class: 'actions' }, h('button', { type: 'submit', 'data-testid': 'request-submit' }, t('submit'))),
    ),
  );
}

function duration(from: string, to: string): string {
  const ms = Date.parse(to) - Date.parse(from);
  if (!Number.isFinite(ms)) return t('nobody');
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/** Staff by display name and id, as the certificate PDF names them; the id alone when no name was recorded. */
function person(name: string | undefined, id: string): string {
  return name ? `${name} (${id})` : id;
}

/**
 * The requester as the certificate names them: a data subject who asked for their own erasure by the pseudonym
 * their streams had (the certificate signs no name or id for them), staff by name and id.
 */
function certifiedRequester(c: SignedCertificate['certificate']): string {
  const { requestedBy, requestedByName, scope } = c.request;
  const pseudonym = 'subjectPseudonym' in scope ? scope.subjectPseudonym : undefined;
  return requestedBy === pseudonym ? t('dataSubjectByPseudonym', { pseudonym }) : person(requestedByName, requestedBy);
}

function renderErasure(main: HTMLElement, id: string): void {
  const mine = generation;
  const progressCard = h('section', { class: 'card', 'data-testid': 'progress' }, h('h2', {}, t('progressTitle', { id })));
  const certificateCard = h('section', { class: 'card', 'data-testid': 'certificate', hidden: true });
  let approval: HTMLElement | null = null;
  let certificate: SignedCertificate | null = null;

  const approve = async () => {
    try {
      await call(`/v1/erasures/${encodeURIComponent(id)}/approve`, { method: 'POST' });
      approval = h('div', { class: 'notice', 'data-testid': 'approved' }, t('approved'));
    } catch (error) {
      const problem = asProblem(error);
      if (problem.status === 401) return handle(problem);
      approval = problemBox(problem);
    }
    await poll(false);
  };

  const drawProgress = (p: ErasureProgress) => {
    const done = new Map(p.steps.map((s) => [s.step, s]));
    const steps = Object.keys(texts().steps);
    show(
      progressCard,
      h('h2', {}, t('progressTitle', { id: p.requestId })),
      h(
        'dl',
        {},
        h('dt', {}, t('status')),
        h('dd', {}, statusBadge(p.status), LIVE.has(p.status) ? h('span', { class: 'hint' }, ` · ${t('live')}`) : null),
        h('dt', {}, t('requestedReason')),
        h('dd', {}, texts().reasons[p.reason] ?? p.reason),
        h('dt', {}, t('closureSize')),
        h('dd', { 'data-testid': 'closure-size' }, p.closureSize ?? t('nobody')),
        p.status === 'awaiting_approval' &&
          p.approvalDeadline && [h('dt', {}, t('approvalDeadline')), h('dd', {}, when(p.approvalDeadline))],
        p.approvedBy && [h('dt', {}, t('approvedBy')), h('dd', { 'data-testid': 'approved-by' }, person(p.approvedByName, p.approvedBy))],
        p.blockedByLegalHold.length > 0 && [h('dt', {}, t('legalHold')), h('dd', { class: 'mono' }, p.blockedByLegalHold.join(', '))],
        p.failure && [h('dt', {}, t('failure', { code: p.failure.code })), h('dd', {}, p.failure.message)],
      ),
      p.status === 'awaiting_approval' &&
        h(
          'div',
          { class: 'notice' },
          t('awaiting'),
          h(
            'div',
            { class: 'actions' },
            h('button', { type: 'button', 'data-testid': 'approve', onclick: () => void approve() }, t('approve')),
          ),
        ),
      approval,
      h('div', { class: 'progressbar' }, h('div', { class: `w${Math.min(12, Math.round((done.size / steps.length) * 12))}` })),
      h(
        'table',
        { 'data-testid': 'steps' },
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            [t('step'), t('started'), t('finished'), t('duration'), t('attempts')].map((c) => h('th', {}, c)),
          ),
        ),
        h(
          'tbody',
          {},
          steps.map((step) => {
            const record = done.get(step as ErasureProgress['steps'][number]['step']);
            const label = texts().steps[step];
            if (record)
              return h(
                'tr',
                { class: 'step-done', 'data-testid': 'step', 'data-step': step, 'data-state': 'done' },
                h('td', {}, label),
                h('td', {}, when(record.startedAt)),
                h('td', {}, when(record.finishedAt)),
                h('td', {}, duration(record.startedAt, record.finishedAt)),
                h('td', { 'data-testid': 'attempts' }, record.attempts),
              );
            const current = p.currentStep === step && LIVE.has(p.status);
            return h(
              'tr',
              {
                class: current ? 'step-current' : 'step-pending',
                'data-testid': 'step',
                'data-step': step,
                'data-state': current ? 'current' : 'pending',
              },
              h('td', {}, label),
              h(
                'td',
                { colspan: '4' },
                current ? (p.status === 'awaiting_approval' ? (texts().statuses.awaiting_approval ?? '') : t('running')) : t('pending'),
              ),
            );
          }),
        ),
      ),
    );
  };

  const drawCertificate = (signed: SignedCertificate) => {
    const c = signed.certificate;
    const v = c.verification;
    const probe = (name: string, r: { checked: number; failed: number }) =>
      h('li', {}, t('probe', { name, checked: r.checked, result: r.failed === 0 ? t('passed') : `${r.failed} ${t('failed')}` }));
    certificateCard.hidden = false;
    show(
      certificateCard,
      h('h2', {}, t('certificateTitle')),
      h(
        'dl',
        {},
        h('dt', {}, t('requestId')),
        h('dd', { class: 'mono' }, c.requestId),
        c.organisation && [h('dt', {}, t('organisation')), h('dd', { 'data-testid': 'cert-organisation' }, c.organisation)],
        h('dt', {}, t('tenant')),
        h('dd', {}, c.tenant),
        h('dt', {}, t('requestedBy')),
        h('dd', { 'data-testid': 'cert-requested-by' }, certifiedRequester(c)),
        h('dt', {}, t('requestedAt')),
        h('dd', {}, when(c.request.requestedAt)),
        h('dt', {}, t('approvedBy')),
        h(
          'dd',
          { 'data-testid': 'cert-approved-by' },
          c.request.approvedBy === null ? t('nobody') : person(c.request.approvedByName, c.request.approvedBy),
        ),
        h('dt', {}, t('closureSize')),
        h('dd', { 'data-testid': 'cert-records' }, c.closure.size),
        h('dt', {}, t('byKind')),
        h(
          'dd',
          {},
          Object.entries(c.closure.byKind)
            .map(([kind, n]) => `${kind} ${n}`)
            .join(', ') || t('nobody'),
        ),
        h('dt', {}, t('verification')),
        h(
          'dd',
          {},
          h('span', { class: `badge ${v.passed ? 'ok' : 'bad'}` }, v.passed ? t('passed') : t('failed')),
          h(
            'ul',
            {},
            probe('get-by-id', v.getById),
            probe('BM25', v.bm25),
            probe('kNN', v.knn),
            probe('decrypt', v.decrypt),
            probe('byte scan', v.byteScan),
          ),
        ),
        h('dt', {}, t('auditAnchor')),
        h('dd', { class: 'mono' }, `#${c.auditAnchor.seq} ${c.auditAnchor.hash}`),
        h('dt', {}, t('signedBy')),
        h('dd', { class: 'mono' }, signed.signature.kid),
        h('dt', {}, t('issuedAt')),
        h('dd', {}, when(c.issuedAt)),
      ),
      h(
        'div',
        { class: 'actions' },
        h(
          'button',
          {
            type: 'button',
            'data-testid': 'download-json',
            onclick: () => void download(`/v1/erasures/${encodeURIComponent(id)}/certificate`, `erasure-${id}.json`, certificateCard),
          },
          t('downloadJson'),
        ),
        h(
          'button',
          {
            type: 'button',
            'data-testid': 'download-pdf',
            onclick: () => void download(`/v1/erasures/${encodeURIComponent(id)}/certificate.pdf`, `erasure-${id}.pdf`, certificateCard),
          },
          t('downloadPdf'),
        ),
      ),
    );
  };

  const poll = async (again: boolean): Promise<void> => {
    if (mine !== generation) return;
    try {
      const progress = await callJson<ErasureProgress>(`/v1/erasures/${encodeURIComponent(id)}`);
      if (mine !== generation) return;
      drawProgress(progress);
      if (progress.certificateAvailable && !certificate) {
        certificate = await callJson<SignedCertificate>(`/v1/erasures/${encodeURIComponent(id)}/certificate`);
        if (mine !== generation) return;
        drawCertificate(certificate);
      }
      const settled = !LIVE.has(progress.status) && (progress.status !== 'completed' || progress.certificateAvailable);
      if (again && !settled) setTimeout(() => void poll(true), POLL_MS);
    } catch (error) {
      if (mine !== generation) return;
      handle(error, progressCard);
    }
  };

  main.append(
    h(
      'div',
      { class: 'actions' },
      h('button', { type: 'button', class: 'secondary', onclick: () => navigate({ name: 'list' }) }, t('back')),
    ),
    progressCard,
    certificateCard,
  );
  void poll(true);
}

/** Fetches a file with the token in the header and saves it: the link the browser follows is a blob, never the API URL. */
async function download(path: string, name: string, errors: HTMLElement): Promise<void> {
  try {
    const blob = await (await call(path)).blob();
    const url = URL.createObjectURL(blob);
    const link = h('a', { href: url, download: name, hidden: true });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60_000);
  } catch (error) {
    const box = h('div', {});
    errors.append(box);
    handle(error, box);
  }
}

function renderVerify(main: HTMLElement): void {
  const file = h('input', {
    id: 'certificate-file',
    type: 'file',
    accept: '.json,.pdf,application/json,application/pdf',
    'data-testid': 'certificate-file',
  }) as HTMLInputElement;
  const result = h('div', { 'data-testid': 'verify-result' });
  const verify = async (event: Event) => {
    event.preventDefault();
    const chosen = file.files?.[0];
    if (!chosen) return show(result, h('p', { class: 'hint' }, t('chooseFile')));
    try {
      const check = await callJson<CertificateCheckResult>('/v1/certificates/verify', {
        method: 'POST',
        bytes: await chosen.arrayBuffer(),
      });
      show(result, verdict(check, chosen.name));
    } catch (error) {
      handle(error, result);
    }
  };
  main.append(
    h(
      'form',
      { class: 'card', 'data-testid': 'verify-form', onsubmit: verify },
      h('h2', {}, t('verifyTitle')),
      h('p', { class: 'hint' }, t('verifyHint')),
      h('label', { for: 'certificate-file' }, t('file')),
      file,
      h('div', { class: 'actions' }, h('button', { type: 'submit', 'data-testid': 'verify-submit' }, t('verify'))),
      result,
    ),
  );
}

function verdict(check: CertificateCheckResult, fileName: string): HTMLElement {
  const c = check.certifies;
  return h(
    'div',
    { class: `verdict ${check.valid ? 'ok' : 'bad'}`, 'data-testid': check.valid ? 'verdict-valid' : 'verdict-invalid' },
    h('div', { class: 'big' }, check.valid ? `✓ ${t('valid')}` : `✗ ${t('invalid')}`),
    h('div', { class: 'hint mono' }, fileName),
    h(
      'dl',
      {},
      check.reason && [h('dt', {}, t('why')), h('dd', { 'data-testid': 'verdict-reason' }, check.reason)],
      check.signedBy && [h('dt', {}, t('signedBy')), h('dd', { class: 'mono' }, check.signedBy)],
      c && [
        h('dt', {}, t('kind')),
        h('dd', {}, texts().kinds[c.kind] ?? c.kind),
        h('dt', {}, t('requestId')),
        h('dd', { class: 'mono', 'data-testid': 'verdict-request' }, c.requestId),
        h('dt', {}, t('tenant')),
        h('dd', {}, c.tenant),
        h('dt', {}, t('records')),
        h('dd', {}, c.records),
        h('dt', {}, t('requestedBy')),
        h('dd', { 'data-testid': 'verdict-requested-by' }, person(c.requestedByName, c.requestedBy)),
        h('dt', {}, t('approvedBy')),
        h('dd', { 'data-testid': 'verdict-approved-by' }, c.approvedBy === null ? t('nobody') : person(c.approvedByName, c.approvedBy)),
        h('dt', {}, t('issuedAt')),
        h('dd', {}, when(c.issuedAt)),
      ],
    ),
  );
}

async function start(): Promise<void> {
  setLang(initialLang());
  const returned = returnedSignIn();
  if (returned instanceof ApiProblem) signInProblem = returned;
  else if (returned) await finishSignIn(returned);
  const token = session.token();
  if (!me && token) {
    try {
      me = await callJson<Principal>('/v1/session', { token });
    } catch (error) {
      session.signOut();
      signInProblem = asProblem(error);
    }
  }
  render();
}

/** Back from the identity provider: the API exchanges the code and checks the token before the tab keeps it. */
async function finishSignIn(grant: SignInGrant): Promise<void> {
  show(root, header(), h('main', {}, h('p', { class: 'hint', 'data-testid': 'signing-in' }, t('signingIn'))));
  try {
    const signedIn = await callJson<{ accessToken: string; principal: Principal }>('/v1/sign-in/token', {
      method: 'POST',
      json: grant,
      token: '',
    });
    session.signIn(signedIn.accessToken);
    me = signedIn.principal;
    signInProblem = null;
  } catch (error) {
    signInProblem = asProblem(error);
  }
}

void start();
