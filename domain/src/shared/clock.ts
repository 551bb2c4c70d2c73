/** Time comes in from outside so that domain logic stays deterministic. */
export interface Clock {
  now(): Date;
}

/** New ids come in from outside for the same reason. */
export interface IdSource {
  next(): string;
}
