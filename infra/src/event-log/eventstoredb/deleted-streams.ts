/** Which streams met in one read are tombstoned; a tombstone is permanent, so a positive answer is kept. */
export class DeletedStreams {
  private readonly known = new Map<string, boolean>();
  constructor(private readonly log: { isDeleted(stream: string): Promise<boolean> }) {}

  async has(stream: string): Promise<boolean> {
    let deleted = this.known.get(stream);
    if (deleted === undefined) {
      deleted = await this.log.isDeleted(stream);
      this.known.set(stream, deleted);
    }
    return deleted;
  }

  /** Forgets the streams that were alive, so a later delete is noticed; keeps the deleted ones. */
  refresh(): void {
    for (const [stream, deleted] of this.known) if (!deleted) this.known.delete(stream);
  }
}
