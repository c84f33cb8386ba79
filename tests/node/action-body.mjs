// A body written in another language that declares its own action: it
// connects to a Chorus bridge as a device (CHORUS_BRIDGE_URL, with the
// device token), declares `wave` (which hand: left or right) with delivery
// "query", and answers each action query it is sent with aikyo's
// QueryResult shape. It prints one JSON line per event: open, declared
// (or refused), each query it received, close.
import WebSocket from 'ws';

const ws = new WebSocket(process.env.CHORUS_BRIDGE_URL ?? 'ws://localhost:8080');

const wave = {
  name: 'wave',
  description: 'Wave one hand at the person you talk to.',
  schema: {
    type: 'object',
    properties: { hand: { enum: ['left', 'right'] } },
    additionalProperties: false,
  },
};

const print = (line) => console.log(JSON.stringify(line));

ws.on('open', () => {
  print({ event: 'open' });
  ws.send(JSON.stringify({
    jsonrpc: '2.0',
    id: 'declare-1',
    method: 'actions.declare',
    params: { actions: [wave], delivery: 'query' },
  }));
});
ws.on('close', (code) => { print({ event: 'close', code }); process.exit(0); });
ws.on('error', (err) => { console.error(String(err)); process.exit(1); });

ws.on('message', (data) => {
  const frame = JSON.parse(data.toString());

  if (frame.id === 'declare-1') {
    if (frame.result) {
      print({ event: 'declared', declared: frame.result.declared });
    } else {
      print({ event: 'refused', error: frame.error });
    }
    return;
  }

  if (frame.method !== 'query.send') {
    return; // the room's traffic
  }
  const q = frame;
  print({ event: 'query', id: q.id, type: q.params.type, from: q.params.from, body: q.params.body ?? null });
  let answer;
  if (q.params.type === 'action' && q.params.body?.name === 'wave') {
    const hand = q.params.body.args?.hand ?? 'right';
    answer = {
      jsonrpc: '2.0',
      id: q.id,
      result: {
        success: true,
        body: { name: 'wave', done: true, durationMs: 5, detail: `waved ${hand}` },
      },
    };
  } else if (q.params.type === 'speak') {
    // aikyo's bodies answer a speak with {} once they have said it (this
    // one prints it instead)
    answer = { jsonrpc: '2.0', id: q.id, result: { success: true, body: {} } };
  } else {
    const what = q.params.type === 'action' ? `action ${q.params.body?.name}` : `query type ${q.params.type}`;
    answer = { jsonrpc: '2.0', id: q.id, error: `this body has no ${what}` };
  }
  ws.send(JSON.stringify(answer));
});
