export * from './instructions';
export * from './secrets';
export * from './sensitivity';
export { cardIssuerLengthValid, ibanValid, luhnValid, residentIdCheckChar, residentIdValid } from './checksums';
