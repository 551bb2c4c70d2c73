/** ELMA's version, as the root package.json gives it (a unit spec keeps the two equal); recorded in backups. */
export const ELMA_VERSION = '0.1.0';
