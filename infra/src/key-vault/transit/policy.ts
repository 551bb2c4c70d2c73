/**
 * The policy ELMA's token needs on OpenBao / Vault: its tenant keys only (`<prefix>-*` under the transit
 * mount), no `create` on encrypt so that a key ELMA did not make (or one deleted with its tenant) is never
 * silently made again by an encryption, and nothing else. Token look-up and renewal come with the
 * `default` policy. The README shows this text for `bao policy write elma-kms -`.
 */
export function transitPolicy(mount = 'transit', keyPrefix = 'elma'): string {
  const keys = `${mount}/keys/${keyPrefix}-*`;
  return [
    `# ELMA's tenant keys: create, read, rotate, allow deletion, delete (a tenant's off-boarding).`,
    `path "${keys}" {\n  capabilities = ["create", "read", "update", "delete"]\n}`,
    `# Wrap, unwrap and MAC with them; "update" only, so an encryption never creates a key.`,
    `path "${mount}/encrypt/${keyPrefix}-*" {\n  capabilities = ["update"]\n}`,
    `path "${mount}/decrypt/${keyPrefix}-*" {\n  capabilities = ["update"]\n}`,
    `path "${mount}/hmac/${keyPrefix}-*" {\n  capabilities = ["update"]\n}`,
    '',
  ].join('\n');
}
