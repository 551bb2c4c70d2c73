import { createHmac, timingSafeEqual } from 'node:crypto';
import { InvalidCursor } from '@elma/domain';

/** Bytes of the MAC a cursor carries (144 bits: no forgery by trying, and a cursor stays short). */
const MAC_BYTES = 18;

/**
 * Opaque listing cursors: the position where a page ended, with a keyed MAC
 * over it and over the listing it belongs to (`scope`: tenant, caller and
 * filters). A cursor altered, forged, or used by another caller, tenant or
 * set of filters fails the MAC and is refused (`InvalidCursor`), so a cursor
 * can neither move a caller into another's listing nor be used to probe what
 * the caller may not see. The position is only encoded, not encrypted: it
 * names the last item of a page the caller was given.
 */
export class PageCursors {
  constructor(private readonly key: Uint8Array) {}

  seal(scope: readonly string[], position: unknown): string {
    const payload = Buffer.from(JSON.stringify(position)).toString('base64url');
    return `${payload}.${this.mac(scope, payload).toString('base64url')}`;
  }

  /** The position of a cursor sealed for exactly this scope, as `parse` reads it (undefined: not a position). */
  open<T>(scope: readonly string[], cursor: string, parse: (value: unknown) => T | undefined): T {
    const [payload, mac, ...rest] = cursor.split('.');
    if (rest.length > 0 || !payload || !mac) throw new InvalidCursor();
    const given = Buffer.from(mac, 'base64url');
    const expected = this.mac(scope, payload);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw new InvalidCursor();
    let value: unknown;
    try {
      value = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    } catch {
      throw new InvalidCursor();
    }
    const position = parse(value);
    if (position === undefined) throw new InvalidCursor();
    return position;
  }

  private mac(scope: readonly string[], payload: string): Buffer {
    return createHmac('sha256', this.key)
      .update(JSON.stringify(['elma.page-cursor.v1', ...scope, payload]))
      .digest()
      .subarray(0, MAC_BYTES);
  }
}
