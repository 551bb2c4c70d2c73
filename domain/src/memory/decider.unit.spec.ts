import { describe, expect, it } from 'vitest';
import { makeIngested as ingested } from '../testing';
import { decide, evolve, initialMemoryState, MemoryAlreadyRecorded } from './decider';
import { deriveMemories, episodicIdFor, semanticIdFor } from './derive';

describe('deriving memories from an ingested event', () => {
  it('gives one episodic memory that cites the event', () => {
    const [command, ...rest] = deriveMemories(ingested());
    expect(rest).toEqual([]);
    expect(command.record).toMatchObject({
      id: episodicIdFor(ingested().eventId),
      kind: 'episodic',
      status: 'active',
      provenance: { sourceEventIds: [ingested().eventId], rule: 'ingest.extract' },
      validFrom: '2026-11-20T10:00:00.000Z',
    });
  });

  it('adds a semantic memory when the event carries a fact, valid from the fact’s own time', () => {
    const fact = { entity: 'ACME', attribute: 'headquarters', value: 'Berlin', validFrom: '2026-01-01T00:00:00.000Z' };
    const commands = deriveMemories(ingested({ content: { text: 'moved', fact } }));
    expect(commands.map((c) => c.record.id)).toEqual([episodicIdFor(ingested().eventId), semanticIdFor(ingested().eventId)]);
    expect(commands[1].record).toMatchObject({ kind: 'semantic', content: { fact }, validFrom: fact.validFrom, validTo: null });
  });

  it('marks content from external channels as tainted with lower confidence', () => {
    const fact = { entity: 'ACME', attribute: 'ceo', value: 'Jane' };
    const [episodic, semantic] = deriveMemories(ingested({ source: { system: 'web', channel: 'web' }, content: { text: 'x', fact } }));
    expect(episodic.record).toMatchObject({ sourceTrust: 'external', tainted: true });
    expect(semantic.record.confidence).toBeLessThan(0.9);
  });
});

describe('the memory decider', () => {
  const record = deriveMemories(ingested())[0].record;

  it('records a new memory', () => {
    expect(decide({ type: 'RecordMemory', record }, initialMemoryState())).toEqual([{ type: 'MemoryRecorded', record }]);
  });

  it('treats recording the same memory again as a no-op, even at another time', () => {
    const state = evolve(initialMemoryState(), { type: 'MemoryRecorded', record });
    expect(decide({ type: 'RecordMemory', record: { ...record, recordedAt: '2026-12-01T00:00:00.000Z' } }, state)).toEqual([]);
  });

  it('refuses different content under an existing id', () => {
    const state = evolve(initialMemoryState(), { type: 'MemoryRecorded', record });
    expect(() => decide({ type: 'RecordMemory', record: { ...record, content: { text: 'other' } } }, state)).toThrow(MemoryAlreadyRecorded);
  });
});
