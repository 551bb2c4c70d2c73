/**
 * Check-digit arithmetic for the structured identifiers the secret scanner
 * recognises. A shape match alone flags too many order numbers and dates;
 * the check digit is what makes a 16-digit run a card number.
 */

/** Luhn (mod 10) over a string of digits. */
export function luhnValid(digits: string): boolean {
  let sum = 0;
  let double = false;
  for (let i = digits.length - 1; i >= 0; i--) {
    let d = digits.charCodeAt(i) - 48;
    if (double) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
    double = !double;
  }
  return sum % 10 === 0;
}

const ID_WEIGHTS = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2];
const ID_CHECK_CHARS = '10X98765432';

/** The ISO 7064 MOD 11-2 check character of the first 17 digits of a Chinese resident id. */
export function residentIdCheckChar(first17: string): string {
  let sum = 0;
  for (let i = 0; i < 17; i++) sum += (first17.charCodeAt(i) - 48) * ID_WEIGHTS[i];
  return ID_CHECK_CHARS[sum % 11];
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/** 18 characters: 17 digits and a check character, with a plausible birth date at positions 7–14. */
export function residentIdValid(id: string): boolean {
  if (!/^\d{17}[\dXx]$/.test(id)) return false;
  const year = Number(id.slice(6, 10));
  const month = Number(id.slice(10, 12));
  const day = Number(id.slice(12, 14));
  if (year < 1900 || year > 2099 || month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return false;
  return residentIdCheckChar(id.slice(0, 17)) === id[17].toUpperCase();
}

/** Lengths of IBANs for countries we know; other countries only get the generic 15–34 bound. */
const IBAN_LENGTHS: Record<string, number> = { DE: 22, GB: 22, FR: 27, NL: 18, ES: 24, IT: 27, CH: 21, BE: 16, AT: 20 };

/** ISO 13616: length and mod-97 == 1, computed digit by digit so no BigInt is needed. */
export function ibanValid(compact: string): boolean {
  if (!/^[A-Z]{2}\d{2}[A-Z0-9]{11,30}$/.test(compact)) return false;
  const expected = IBAN_LENGTHS[compact.slice(0, 2)];
  if (expected !== undefined && compact.length !== expected) return false;
  const rearranged = compact.slice(4) + compact.slice(0, 4);
  let remainder = 0;
  for (const char of rearranged) {
    const code = char.charCodeAt(0);
    // Letters stand for two digits (A = 10 … Z = 35), so they shift the remainder by 100.
    remainder = code >= 65 ? (remainder * 100 + (code - 55)) % 97 : (remainder * 10 + (code - 48)) % 97;
  }
  return remainder === 1;
}

/** Card lengths by issuer prefix (IIN); a number outside every known range is not treated as a card. */
export function cardIssuerLengthValid(digits: string): boolean {
  const n = digits.length;
  const p2 = Number(digits.slice(0, 2));
  const p3 = Number(digits.slice(0, 3));
  const p4 = Number(digits.slice(0, 4));
  // Visa's legacy 13-digit numbers are no longer issued, and accepting them flags German EAN-13 barcodes.
  if (digits[0] === '4') return n === 16 || n === 19; // Visa
  if ((p2 >= 51 && p2 <= 55) || (p4 >= 2221 && p4 <= 2720)) return n === 16; // Mastercard
  if (p2 === 34 || p2 === 37) return n === 15; // Amex
  if (p4 === 6011 || p2 === 65 || (p3 >= 644 && p3 <= 649)) return n >= 16 && n <= 19; // Discover
  if (p2 === 35) return n >= 16 && n <= 19; // JCB
  if (p2 === 62) return n >= 16 && n <= 19; // UnionPay
  return false;
}
