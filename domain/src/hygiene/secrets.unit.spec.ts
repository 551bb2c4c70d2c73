import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { detectSecrets, InvalidSecretFinding, redactSecrets, type SecretFinding, type SecretKind } from './secrets';

const fingerprint = (secret: string) => createHmac('sha256', 'test-key').update(secret).digest('hex');

/** The text each finding covers, so a test reads as "this span was found as that kind". */
const spans = (text: string) => detectSecrets(text).map((f) => ({ kind: f.kind, secret: text.slice(f.start, f.end) }));

/** Token-shaped test values are assembled at run time so the repository itself does not trip secret scanners. */
const fake = {
  awsKeyId: 'AKIA' + 'IOSFODNN7EXAMPLE',
  awsSecret: 'wJalrXUtnFEMI/K7MDENG/' + 'bPxRfiCYEXAMPLEKEY',
  github: 'ghp_' + 'a1B2c3D4e5F6g7H8i9J0'.repeat(2).slice(0, 36),
  githubPat: 'github_pat_' + '11ABCDEFG0' + 'abcdefghijklmnopqrstuvwxyz0123456789',
  gitlab: 'glpat-' + 'xYz12345AbCdEfGhIjKl',
  slack: 'xoxb-' + '123456789012-abcdefABCDEF',
  stripe: 'sk_live_' + '4eC39HqLyjWDarjtT1zdp7dc',
  openai: 'sk-proj-' + 'Ab12Cd34Ef56Gh78Ij90Kl12Mn34',
  google: 'AIza' + 'SyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY',
  jwt: 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9' + '.eyJzdWIiOiIxMjM0NTY3ODkwIn0' + '.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U',
};

describe('API keys and tokens', () => {
  it.each<[string, SecretKind, string]>([
    ['AWS access key id', 'api_key', fake.awsKeyId],
    ['GitHub personal token', 'token', fake.github],
    ['GitHub fine-grained token', 'token', fake.githubPat],
    ['GitLab token', 'token', fake.gitlab],
    ['Slack bot token', 'token', fake.slack],
    ['Stripe live key', 'api_key', fake.stripe],
    ['OpenAI project key', 'api_key', fake.openai],
    ['Google API key', 'api_key', fake.google],
    ['JWT', 'token', fake.jwt],
  ])('finds a %s in running text', (_, kind, secret) => {
    const text = `deploy note: use ${secret} for the nightly job`;
    expect(spans(text)).toEqual([{ kind, secret }]);
  });

  it('finds the AWS secret of an aws_secret_access_key pair, leaving the key name readable', () => {
    expect(spans(`aws_secret_access_key = ${fake.awsSecret}\n`)).toEqual([{ kind: 'api_key', secret: fake.awsSecret }]);
  });

  it('finds the token of an Authorization header, and the whole JWT when the bearer token is one', () => {
    expect(spans('curl -H "Authorization: Bearer abcdefghijklmnop1234"')).toEqual([{ kind: 'token', secret: 'abcdefghijklmnop1234' }]);
    expect(spans(`Authorization: Bearer ${fake.jwt}`)).toEqual([{ kind: 'token', secret: fake.jwt }]);
  });

  it('does not take a short or word-like tail after a known prefix for a key', () => {
    expect(spans('we use sk-learn and sk-some-long-hyphenated-project-name')).toEqual([]);
    expect(spans('Bearer bonds and bearer responsibilities were discussed')).toEqual([]);
  });
});

describe('private keys', () => {
  it('covers the whole block from BEGIN to END', () => {
    const block = ['-----BEGIN OPENSSH PRIVATE KEY-----', 'b3BlbnNzaC1rZXktdjEAAAAA', '-----END OPENSSH PRIVATE KEY-----'].join('\n');
    expect(spans(`key:\n${block}\nthanks`)).toEqual([{ kind: 'private_key', secret: block }]);
  });

  it('treats a block without END as running to the end of the text', () => {
    const text = 'oops -----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC';
    expect(spans(text)).toEqual([{ kind: 'private_key', secret: text.slice(5) }]);
  });
});

describe('passwords in key/value pairs', () => {
  it.each<[string, SecretKind, string]>([
    ['password=hunter22; user=bob', 'password', 'hunter22'],
    ['passwd: "S3cure!pass"', 'password', 'S3cure!pass'],
    ['{"db_password": "p@ssw0rd"}', 'password', 'p@ssw0rd'],
    ['pwd=abcd1234', 'password', 'abcd1234'],
    ['client_secret=9f8e7d6c5b4a', 'password', '9f8e7d6c5b4a'],
    ['api_key=live-123456', 'api_key', 'live-123456'],
    ['access_token: abcdef123456', 'token', 'abcdef123456'],
    ['新系统的密码：Abc@1234。', 'password', 'Abc@1234'],
    ['密码:qwer1234，请妥善保管', 'password', 'qwer1234'],
    ['他的密码是abc123，别外传', 'password', 'abc123'],
  ])('finds the value of %j', (text, kind, secret) => {
    expect(spans(text)).toEqual([{ kind, secret }]);
  });

  it('ignores values shorter than four characters and placeholders', () => {
    expect(spans('password=abc')).toEqual([]);
    expect(spans('password=******** and pwd=${DB_PASSWORD} and secret=<your-secret>')).toEqual([]);
  });

  it('does not read the rest of a Chinese sentence as a password', () => {
    expect(spans('请确认密码是否已经重置')).toEqual([]);
  });
});

describe('payment cards', () => {
  it.each([
    ['Visa', '4111 1111 1111 1111'],
    ['Visa, dashed', '4111-1111-1111-1111'],
    ['Mastercard', '5555555555554444'],
    ['Mastercard 2-series', '2223003122003222'],
    ['Amex', '378282246310005'],
    ['Amex, grouped 4-6-5', '3782 822463 10005'],
    ['Discover', '6011111111111117'],
    ['JCB', '3530111333300000'],
    ['UnionPay', '6200000000000005'],
  ])('finds a %s number', (_, card) => {
    expect(spans(`paid with ${card}, thanks`)).toEqual([{ kind: 'payment_card', secret: card }]);
  });

  it('finds the card but not the expiry date written after it', () => {
    expect(spans('4111 1111 1111 1111 12 26')).toEqual([{ kind: 'payment_card', secret: '4111 1111 1111 1111' }]);
  });

  it.each([
    ['a Luhn-invalid number', '4111 1111 1111 1112'],
    ['an unknown issuer prefix', '1234 5678 9012 3452'],
    ['a card inside a longer digit run', '94111111111111111111'],
    ['mixed separators', '4111 1111-1111 1111'],
    ['uneven groups', '41 111111 1111 1111'],
    ['an EAN-13 barcode', '4006381333931'],
    ['a phone number', '+86 138 0013 8000'],
    ['a Chinese mobile number', '13800138000'],
    ['an order number', 'order 4711'],
    ['a date', '2024-01-15'],
  ])('does not flag %s', (_, text) => {
    expect(spans(text).filter((s) => s.kind === 'payment_card')).toEqual([]);
  });
});

describe('Chinese resident ids', () => {
  /** The check character per GB 11643, written out here independently of the code under test. */
  const checkChar = (first17: string) => {
    const weights = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2];
    const sum = [...first17].reduce((acc, d, i) => acc + Number(d) * weights[i], 0);
    return '10X98765432'[sum % 11];
  };

  it('finds the standard example, whose check character is X', () => {
    expect(checkChar('11010519491231002')).toBe('X');
    expect(spans('身份证号11010519491231002X，请核对')).toEqual([{ kind: 'cn_resident_id', secret: '11010519491231002X' }]);
    expect(spans('id 11010519491231002x')).toEqual([{ kind: 'cn_resident_id', secret: '11010519491231002x' }]);
  });

  it('finds an id with a digit check character', () => {
    const id = '44030419900307123' + checkChar('44030419900307123');
    expect(spans(`证件：${id}`)).toEqual([{ kind: 'cn_resident_id', secret: id }]);
  });

  it.each([
    ['a wrong check character', '110105194912310021'],
    ['an impossible birth date', '11010519491331002' + checkChar('11010519491331002')],
    ['a birth year before 1900', '11010518991231002' + checkChar('11010518991231002')],
    ['an id inside a longer digit run', '911010519491231002X'],
  ])('does not flag %s', (_, text) => {
    expect(spans(text)).toEqual([]);
  });
});

describe('IBANs', () => {
  it.each([
    'DE89 3704 0044 0532 0130 00',
    'GB82 WEST 1234 5698 7654 32',
    'DE89370400440532013000',
    'FR1420041010050500013M02606',
    'NL91ABNA0417164300',
    'CH9300762011623852957',
    'BE68539007547034',
    'AT611904300234573201',
  ])('finds %s', (iban) => {
    expect(spans(`Bitte überweisen an ${iban} bis Freitag`)).toEqual([{ kind: 'iban', secret: iban }]);
  });

  it('stops at the IBAN when a group of four digits follows it', () => {
    expect(spans('BE68 5390 0754 7034 2024 more')).toEqual([{ kind: 'iban', secret: 'BE68 5390 0754 7034' }]);
  });

  it.each([
    ['a wrong check', 'DE88 3704 0044 0532 0130 00'],
    ['a wrong length for its country', 'DE8937040044053201300'],
    ['a product code', 'AB12 CDEF GHIJ KLMN'],
  ])('does not flag %s', (_, text) => {
    expect(spans(text)).toEqual([]);
  });
});

describe('ordinary business text', () => {
  const sentences = [
    'The quarterly review is scheduled for 2024-03-15 at 14:30 in room 4.',
    'Order 4711 shipped on 15.01.2024 and arrives Friday.',
    'Please call our hotline at +49 30 1234567 or +1 (415) 555-2671 between 9 and 5.',
    'Revenue grew 12.5% to EUR 1,234,567.89 compared with last year.',
    'Ticket #20240115-0042 was escalated to tier 2.',
    'Our password policy requires 12 characters and rotation every 90 days.',
    'The secret to good onboarding is a clear first week.',
    'Invoice INV-2024-000123 totals 12 500,00 € and is due in 30 days.',
    'Version 3.14.2 fixes the login timeout reported in JIRA-4711.',
    'The tracking number is 1Z999AA10123456784.',
    'We will migrate 18000000 records to the new cluster by Q3 2025.',
    'Meeting ID 845 2231 9087, passcode shared in the calendar invite.',
    'Use the API key from the vault, never paste it into tickets.',
    'The customer asked whether their Authorization header format changed.',
    'Shipment weights: 1200 kg, 3400 kg and 5600 kg across 3 pallets.',
    'ISO 27001 certification audit is booked for week 42.',
    'Contract number DE-2023-1187 runs until 31 December 2026.',
    'The SKU list includes 4006381333931 and 5012345678900.',
    'The shared drive path is /finance/2024/Q1/reports.',
    'Tokens for the workshop are handed out at the reception desk.',
    'Send the signed NDA to legal@example.com before Monday.',
    '客户希望在下周三之前收到报价单，订单号为 20240115001。',
    '本季度销售额同比增长百分之十二，达到 1,250 万元。',
    '请确认密码是否已经重置，然后通知用户重新登录。',
    '会议定于2024年3月15日下午两点在三号会议室召开。',
    '项目经理张伟负责交付，预计工期为 45 个工作日。',
    '合同编号 HT-2023-0458 将于明年到期，需要提前续签。',
    '仓库里共有 3600 件库存，其中 1200 件待发货。',
    '客服热线 400-820-8820 周一至周五 9:00-18:00 提供服务。',
    '密钥管理由安全团队统一负责，不要在群里发送。',
    '发票金额为人民币 88,000.00 元，税率 6%。',
    '请联系王经理，手机 13800138000，确认交货时间。',
  ];

  it('contains no secrets', () => {
    expect(sentences.flatMap(spans)).toEqual([]);
  });
});

describe('overlapping findings', () => {
  it('keeps only the longest of overlapping findings', () => {
    // An api_key= pair whose value is itself a Stripe key: both detectors fire on the same span.
    const text = `api_key=${fake.stripe}`;
    expect(detectSecrets(text)).toEqual([{ kind: 'api_key', start: 8, end: text.length }]);
  });

  it('reports offsets into the original text, in order', () => {
    const text = `a ${fake.awsKeyId} b 4111111111111111 c`;
    expect(detectSecrets(text)).toEqual([
      { kind: 'api_key', start: 2, end: 22 },
      { kind: 'payment_card', start: 25, end: 41 },
    ]);
  });
});

describe('redaction', () => {
  const text = `card 4111 1111 1111 1111, 密码：Abc@1234。 key ${fake.awsKeyId} iban DE89 3704 0044 0532 0130 00`;

  it('replaces each secret by its kind and a keyed fingerprint, and keeps the rest', () => {
    const redacted = redactSecrets(text, detectSecrets(text), fingerprint);
    expect(redacted).toBe(
      `card [REDACTED:payment_card:${fingerprint('4111 1111 1111 1111').slice(0, 12)}], ` +
        `密码：[REDACTED:password:${fingerprint('Abc@1234').slice(0, 12)}]。 ` +
        `key [REDACTED:api_key:${fingerprint(fake.awsKeyId).slice(0, 12)}] ` +
        `iban [REDACTED:iban:${fingerprint('DE89 3704 0044 0532 0130 00').slice(0, 12)}]`,
    );
  });

  it('never leaves a secret in the output, and finds nothing when scanned again', () => {
    const redacted = redactSecrets(text, detectSecrets(text), fingerprint);
    for (const secret of ['4111 1111 1111 1111', 'Abc@1234', fake.awsKeyId, 'DE89 3704 0044 0532 0130 00']) {
      expect(redacted).not.toContain(secret);
    }
    expect(detectSecrets(redacted)).toEqual([]);
  });

  it('rejects a finding outside the text without echoing any of it', () => {
    const bad: SecretFinding = { kind: 'password', start: 5, end: 99 };
    expect(() => redactSecrets('password=hunter22', [bad], fingerprint)).toThrow(InvalidSecretFinding);
    try {
      redactSecrets('password=hunter22', [bad], fingerprint);
    } catch (error) {
      expect(String((error as Error).message)).not.toContain('hunter22');
    }
  });
});
