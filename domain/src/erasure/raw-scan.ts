/**
 * The byte scan erasure verification runs over the raw files of every store
 * (event log, index, key vault, their WAL files, the Temporal database): a
 * port, so the use case does not read files itself. The adapter lives in
 * infra (raw-scan/).
 */
/** A byte sequence that must not remain on disk; `id` is the record it belongs to. */
export interface Needle {
  id: string;
  bytes: Uint8Array;
}

export interface ScanFinding {
  needleId: string;
  path: string;
  /** Byte offset of the first occurrence of the needle in the file. */
  offset: number;
}

export interface ScanReport {
  /** Files scanned to the end; files that vanished or could not be opened are not counted. */
  files: number;
  /** Total bytes scanned. */
  bytes: number;
  /** The paths scanned, as given; a listed path missing here was skipped. */
  paths: string[];
  findings: ScanFinding[];
  /** Ids of needles too short to search for without drowning in false positives. */
  tooShort: string[];
}

export interface RawStoreScan {
  /** Every regular file under `roots`, sorted, without duplicates; `exclude` prunes files and whole folders. */
  listFiles(roots: string[], options?: { exclude?: (path: string) => boolean }): Promise<string[]>;
  /** Scans the files for the needles. */
  scanFiles(paths: string[], needles: Needle[]): Promise<ScanReport>;
}
