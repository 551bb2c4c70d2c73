/** A chat turn of customer `cust-1` from the CRM, for support, in `session`: what the recall specs ingest. */
export function chatTurn(text: string, occurredAt: string, session: string, sensitivity: 'internal' | 'confidential' = 'internal') {
  return {
    subject: 'cust-1',
    occurredAt,
    activity: 'chat.turn',
    content: { text },
    source: { system: 'crm', channel: 'chat' },
    purposes: ['support'],
    sensitivity,
    session,
  };
}
