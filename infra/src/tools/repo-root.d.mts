/** The repository (or installed image) root: the nearest folder above the module whose package.json is the root `elma` one. */
export declare function findRepoRoot(): string;
