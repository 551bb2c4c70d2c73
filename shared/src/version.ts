/**
 * ELMA's version, as the root package.json gives it (a unit spec keeps the two equal): the OpenAPI
 * document's `info.version`, the MCP server's version, and what backups record. A breaking change to the
 * API moves it (CHANGELOG.md).
 */
export const ELMA_VERSION = '0.2.0';
