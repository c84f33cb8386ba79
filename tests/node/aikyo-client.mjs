// The client example of aikyo's Query document (its Japanese design of queries,
// "クライアント側の実装例"), unchanged in its logic: it answers a companion's
// vision and speak queries. What the example leaves as 仮想関数 (captureCamera,
// synthesizeSpeech) is filled in, and the URL comes from the environment
// (CHORUS_BRIDGE_URL, with the device token), because a Chorus bridge asks
// for a token; each query it handles is printed as one JSON line, with the
// time it arrived (ms since the epoch).
import WebSocket from 'ws';
import { readFileSync } from 'node:fs';

const ws = new WebSocket(process.env.CHORUS_BRIDGE_URL ?? 'ws://localhost:8080');

// 仮想関数: a camera that always sees the same picture (CHORUS_FRAME, or
// frame.jpg beside this file).
function captureCamera() {
  return readFileSync(process.env.CHORUS_FRAME || new URL('./frame.jpg', import.meta.url)).toString('base64');
}

// 仮想関数: speech synthesis that only remembers what it said.
const spoken = [];
function synthesizeSpeech(message) {
  spoken.push(message);
  return { message };
}

ws.on('open', () => console.log(JSON.stringify({ event: 'open' })));
ws.on('close', (code) => { console.log(JSON.stringify({ event: 'close', code })); process.exit(0); });
ws.on('error', (err) => { console.error(String(err)); process.exit(1); });

ws.on('message', (data) => {
  const message = JSON.parse(data.toString());

  if (message.method === 'query.send') {
    const at = Date.now();
    const query = message;
    let result;
    // typeに応じて処理を実行
    if (query.params.type === 'vision') {
      // カメラキャプチャ
      const image = captureCamera(); // 仮想関数
      result = {
        jsonrpc: '2.0',
        id: query.id,
        result: {
          success: true,
          body: { image: image }
        }
      };
    } else if (query.params.type === 'speak') {
      // 音声合成
      const tts = synthesizeSpeech(query.params.body.message);
      result = {
        jsonrpc: '2.0',
        id: query.id,
        result: {
          success: true,
          body: {}
        }
      };
    } else {
      result = {
        jsonrpc: '2.0',
        id: query.id,
        error: `未対応のクエリタイプ: ${query.params.type}`
      };
    }
    ws.send(JSON.stringify(result));
    console.log(JSON.stringify({ event: 'query', type: query.params.type, from: query.params.from, message: query.params.body?.message, at }));
  }
});
