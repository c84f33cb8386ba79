// The room console: one WebSocket to the bridge (/ws), everything drawn
// from its frames. No secret is kept here: the token, if any, comes from
// this page's own address (#token=...).
'use strict';

const $ = (id) => document.getElementById(id);
const el = (tag, cls, text) => {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
};

const hash = new URLSearchParams(location.hash.slice(1));
const token = hash.get('token') || '';
let me = null;          // {role, name, room} from the bridge's hello
const messages = new Map(); // id -> {li, at}
const devices = new Map();  // companion -> presence
const spans = new Map();    // companion + messageId -> {who, start, end, done, seen}
// Each connection is an epoch: what the page saw live in it. Between a
// connection's hello and its bridge.replay come the room as it was (the
// latest statuses) and the recent Messages: history, not seen live. A
// silence is measured only between utterances seen start and end live in
// one epoch, never across a reload or a reconnect.
let epoch = 0;
let history = true;
let phase = null;
const heard = [];           // the robots' heard reports, newest first
const speakingNow = new Map(); // companion -> until (ms), while its status says speaking
const refusals = [];        // {text, calm}: the floor's answers to realtime posts it did not take
const asked = new Map();    // camera.get request id -> device
const memAsked = new Map(); // memory request id -> {op, device, person, fact}
let send = () => false;

function newID() {
  const b = new Uint8Array(16);
  crypto.getRandomValues(b);
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}

function connect() {
  const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
  const ws = new WebSocket(`${proto}//${location.host}/ws${token ? '?token=' + encodeURIComponent(token) : ''}`);
  ws.onopen = () => { $('status').textContent = 'live'; $('status').className = 'status on'; };
  ws.onclose = () => {
    if (memAsked.size) { memAsked.clear(); memBusy(false); memSay('refused', 'the connection closed before the device answered'); }
    $('status').textContent = 'disconnected, retrying…';
    $('status').className = 'status off';
    setTimeout(connect, 2000);
  };
  ws.onmessage = (ev) => {
    let f;
    try { f = JSON.parse(ev.data); } catch { return; }
    handle(f);
  };
  send = (f) => {
    if (ws.readyState !== WebSocket.OPEN) return false;
    ws.send(JSON.stringify(f));
    return true;
  };
  $('say').onsubmit = (ev) => {
    ev.preventDefault();
    const text = $('text').value.trim();
    if (!text || !me || me.role !== 'user' || ws.readyState !== WebSocket.OPEN) return;
    ws.send(JSON.stringify({ jsonrpc: '2.0', method: 'message.send', params: { id: newID(), from: me.name, to: [], message: text } }));
    $('text').value = '';
  };
}

function handle(f) {
  switch (f.method) {
    case 'bridge.hello':
      me = f.params;
      epoch++;
      history = true;
      $('room').textContent = me.room;
      $('text').disabled = me.role !== 'user';
      $('text').placeholder = me.role === 'user' ? `Say something to the robots as ${me.name}…` : 'This console may only watch.';
      $('memory').hidden = me.role !== 'user';
      if (me.role === 'user' && !$('mem-person').value) $('mem-person').value = me.name;
      break;
    case 'message.send': addMessage(f.params, false); break;
    case 'bridge.replay': // the room's recent Messages, said before this connection
      for (const m of (f.params && f.params.messages) || []) if (m && m.method === 'message.send' && m.params) addMessage(m.params, true);
      history = false;
      break;
    case 'turn.grant': addGrant(f.params); break;
    case 'presence.update': devices.set(f.params.id, f.params); drawDevices(); drawGate(); break;
    case 'speaking.update': addSpeaking(f.params); break;
    case 'phase.event': phase = f.params; drawPhase(); break;
    case 'heard.report': addHeard(f.params); break;
    case 'heard.caption': showCaption(f.params); break;
    case 'post.ack':
      if (!f.params.ack.accepted) { refusals.unshift(refusal(f.params.to, f.params.ack.reason)); refusals.length = Math.min(refusals.length, 5); drawPhase(); }
      break;
    default:
      if (f.id && asked.has(f.id)) { showFrame(asked.get(f.id), f); asked.delete(f.id); break; }
      if (f.id && memAsked.has(f.id)) { const q = memAsked.get(f.id); memAsked.delete(f.id); memAnswer(q, f); break; }
      if (f.error) console.warn('bridge:', f.error.message);
  }
}

// addMessage shows a Message; replayed: said before this connection
// (bridge.replay), so its time is not known and nothing live depends on it.
function addMessage(p, replayed) {
  if (messages.has(p.id)) return; // at least once: a copy
  const md = p.metadata || {};
  const speaker = md.speaker || p.from;
  const li = el('li', 'msg' + (devices.has(speaker) ? '' : ' user'));
  li.dataset.id = p.id;
  if (replayed) li.dataset.replayed = '1';
  li.append(el('span', 'who', speaker), document.createTextNode(': '), el('span', 'text', p.message));
  const meta = [];
  if (p.to && p.to.length) meta.push('to ' + p.to.join(', '));
  if (md.source === 'voice') {
    hideCaption();
    const all = md.heardByAll || [];
    meta.push(`spoken, heard by ${md.heardBy}${all.length > 1 ? ` (of ${all.join(', ')})` : ''}`);
    for (const h of heard) if (h.from === md.heardBy && h.text === p.message) h.taken = true;
    drawHeard();
  }
  if (md.idx !== undefined) meta.push(`#${md.idx}, ${md.remain_count} left`);
  if (Array.isArray(md.actions) && md.actions.length) {
    const acts = md.actions.filter(a => typeof a === 'string').slice(0, 8);
    li.append(el('div', 'actions', 'does: ' + acts.join(', ')));
  }
  meta.push(replayed ? 'earlier' : new Date().toLocaleTimeString());
  li.append(el('div', 'meta', meta.join(' · ')));
  $('transcript').append(li);
  messages.set(p.id, { li, at: performance.now(), replayed });
  li.scrollIntoView({ block: 'nearest' });
  if (!replayed && md.idx !== undefined && phase && phase.remain_count) { phase.remain_count[speaker] = md.remain_count; drawPhase(); }
}

function addGrant(g) {
  const m = messages.get(g.messageId);
  if (!m || m.replayed || m.li.querySelector('table.votes')) return;
  const t = el('table', 'votes');
  const head = el('tr');
  for (const h of ['companion', 'state', 'importance', 'selected', 'closing']) head.append(el('th', '', h));
  t.append(head);
  for (const v of g.votes || []) {
    const r = el('tr', v.from === g.speaker ? 'selected' : '');
    for (const x of [v.from, v.state, v.importance, v.selected ? 'yes' : '', v.closing]) r.append(el('td', '', String(x)));
    t.append(r);
  }
  for (const who of g.missing || []) {
    const r = el('tr', 'missing');
    r.append(el('td', '', who), el('td', '', 'no vote'));
    t.append(r);
  }
  const ms = Math.round(performance.now() - m.at);
  const grant = el('div', 'grant', g.speaker
    ? `→ ${g.speaker} speaks (${g.reason}, ${g.decidedBy}, decided ${ms} ms after the message)`
    : `→ the room rests (${g.reason}, ${g.decidedBy})`);
  m.li.append(t, grant);
}

// showCaption shows what a person is saying as they say it (the room's
// floor forwards the newest words so far); their Message replaces it, and
// words nobody updates for five seconds go.
let captionTimer = 0;
function showCaption(h) {
  if (!h || typeof h.text !== 'string' || !h.text) return;
  const c = $('caption');
  c.textContent = `${h.from} is saying: ${h.text}…`;
  c.hidden = false;
  clearTimeout(captionTimer);
  captionTimer = setTimeout(hideCaption, 5000);
}

function hideCaption() {
  clearTimeout(captionTimer);
  $('caption').hidden = true;
  $('caption').textContent = '';
}

// addHeard keeps a robot's report of what its microphone heard; the
// room's Message says which report the floor took.
function addHeard(h) {
  if (h.state) return; // a person speaking, their words so far, a drop: not a transcript
  if (heard.some((x) => x.from === h.from && x.id === h.id)) return;
  heard.unshift({ from: h.from, id: h.id, text: h.text, confidence: h.confidence, level: h.level, at: Date.parse(h.end) });
  heard.length = Math.min(heard.length, 12);
  drawHeard();
}

function drawHeard() {
  $('hearing').hidden = false;
  const ol = $('heard');
  ol.replaceChildren();
  for (const h of heard) {
    const conf = h.confidence >= 0 ? `${Math.round(h.confidence * 100)} %` : 'no confidence';
    const li = el('li', h.taken ? 'taken' : 'same', `${h.from} heard “${h.text}” (${conf}, ${h.level.toFixed(0)} dBFS)${h.taken ? ' — taken' : ''}`);
    ol.append(li);
  }
}

// The microphones are gated while any robot speaks (and a short tail).
// A room where no robot hears (no presence says hears) has no microphone
// to speak of: the hearing panel stays hidden.
function drawGate() {
  const hears = [...devices.values()].some((p) => !p.cleared && (p.presence || {}).online && (p.presence || {}).hears);
  $('hearing').hidden = !hears && !heard.length;
  $('gate').hidden = !hears;
  const now = Date.now();
  const who = [...speakingNow].filter(([, until]) => until > now).map(([id]) => id);
  $('gate').textContent = who.length ? `microphones gated: ${who.join(', ')} speaking` : 'microphones open';
}

function addSpeaking(s) {
  const sp = s.speaking || {};
  if (sp.speaking && sp.startedAt) speakingNow.set(s.id, Date.parse(sp.startedAt) + (sp.durationMs || 0) + 1500);
  else speakingNow.delete(s.id);
  drawGate();
  if (!sp.messageId) return;
  const key = s.id + ' ' + sp.messageId;
  const start = Date.parse(sp.startedAt);
  if (Number.isNaN(start)) return;
  const span = spans.get(key) || { who: s.id, start, end: start + sp.durationMs, done: false, seen: 0 };
  span.end = span.start + sp.durationMs;
  span.done = !sp.speaking;
  if (sp.speaking && !history) span.seen = epoch; // its start seen live
  spans.set(key, span);
  if (spans.size > 200) spans.delete(spans.keys().next().value);
  drawTimeline();
}

function drawTimeline() {
  const all = [...spans.values()].sort((a, b) => a.start - b.start);
  if (!all.length) return;
  const now = Date.now();
  const from = Math.min(all[0].start, now - 60000), to = Math.max(now, ...all.map((s) => s.end));
  const lanes = new Map();
  for (const s of all) { if (!lanes.has(s.who)) lanes.set(s.who, []); lanes.get(s.who).push(s); }
  const tl = $('timeline');
  tl.replaceChildren();
  for (const [who, list] of lanes) {
    const lane = el('div', 'lane');
    lane.append(el('span', 'name', who));
    const track = el('div', 'track');
    for (const s of list) {
      const b = el('div', 'bar');
      b.style.left = (100 * (s.start - from) / (to - from)) + '%';
      b.style.width = Math.max(0.5, 100 * (s.end - s.start) / (to - from)) + '%';
      b.title = `${who}: ${((s.end - s.start) / 1000).toFixed(1)} s`;
      track.append(b);
    }
    lane.append(track);
    tl.append(lane);
  }
  // Only utterances seen to start and end live, in one connection: the
  // latest status of each robot, which a page gets when it opens, is not
  // the one before the next (others spoke in between).
  const done = all.filter((s) => s.done && s.seen);
  const gaps = [];
  for (let i = 1; i < done.length; i++) {
    if (done[i].who !== done[i - 1].who && done[i].seen === done[i - 1].seen) gaps.push(Math.round(done[i].start - done[i - 1].end));
  }
  // A negative gap is two voices at once (or durations a body only
  // estimated, without playing in real time): say so rather than print a
  // negative silence.
  $('silences').textContent = gaps.length
    ? 'silences between robots: ' + gaps.slice(-8).map((g) => (g >= 0 ? g + ' ms' : `overlap ${-g} ms`)).join(', ')
    : '';
}

function drawDevices() {
  const ul = $('devices');
  ul.replaceChildren();
  for (const [id, p] of [...devices].sort()) {
    const pr = p.presence || {};
    const online = pr.online && !p.cleared;
    const li = el('li');
    li.append(el('span', 'dot' + (online ? ' on' : '')), el('strong', '', id));
    li.append(document.createTextNode(` on ${pr.device || '?'} · ${online ? 'online' : 'offline'}${pr.thinkMs ? ` · thinks ~${pr.thinkMs} ms` : ''} `));
    if (me && me.camera && online && pr.device && pr.sees) { // its presence says it has a camera
      const b = el('button', 'small', 'camera');
      b.type = 'button';
      b.onclick = () => { const id = newID(); asked.set(id, pr.device); send({ jsonrpc: '2.0', method: 'camera.get', id, params: { device: pr.device } }); };
      li.append(b);
    }
    ul.append(li);
  }
  drawMemoryDevices();
}

// Memory: what a device's companion remembers about a person, listed and
// forgotten through the bridge under this console's own name (the device
// decides: one's own facts, or anyone's for an operator). A fact is a
// person's words: it is only ever set as text.
function drawMemoryDevices() {
  const sel = $('mem-device');
  const was = sel.value;
  const ids = [...new Set([...devices.values()].map((p) => (p.presence || {}).device).filter(Boolean))].sort();
  if (ids.join(' ') === [...sel.options].map((o) => o.value).join(' ')) return;
  sel.replaceChildren(...ids.map((id) => { const o = el('option', '', id); o.value = id; return o; }));
  if (ids.includes(was)) sel.value = was;
}

function memSay(cls, text) {
  const out = $('mem-out');
  out.className = cls;
  out.textContent = text;
}

function memBusy(busy) {
  for (const b of document.querySelectorAll('#memory button')) b.disabled = busy;
}

// memAsk sends one memory request; note is said before its answer.
function memAsk(op, device, person, fact, note) {
  if (!device) { memSay('refused', 'no device to ask: none is present yet'); return; }
  const id = newID();
  const params = { device, op };
  if (person) params.person = person;
  if (fact) params.fact = fact;
  if (!send({ jsonrpc: '2.0', method: 'memory', id, params })) { memSay('refused', 'not connected to the bridge'); return; }
  memAsked.set(id, { op, device, person, fact, note });
  memBusy(true);
  memSay('muted', op === 'list' ? `asking ${device}…` : `asking ${device} to forget…`);
}

// The voice the device knows a person by (who is speaking): listed after
// their facts, and forgotten on its own.
function voiceAsk(op, device, person) {
  const id = newID();
  if (!send({ jsonrpc: '2.0', method: 'memory', id, params: { device, op, person } })) return;
  memAsked.set(id, { op, device, person });
}

function voiceAnswer(q, f) {
  const box = $('mem-voice');
  const b = $('mem-forget-voice');
  box.hidden = false;
  b.hidden = true;
  if (f.error) { $('mem-voice-text').textContent = `Voice: ${f.error.message}`; return; }
  const r = f.result || {};
  if (q.op === 'forget-voice') { voiceAsk('voices', q.device, q.person); return; }
  const v = (Array.isArray(r.voices) ? r.voices : []).find((x) => x.person === q.person);
  if (!v) { $('mem-voice-text').textContent = `${q.device} does not know ${q.person}'s voice.`; return; }
  const when = Date.parse(v.updated);
  $('mem-voice-text').textContent = `${q.device} knows ${q.person}'s voice (${Number(v.samples) || 0} samples${Number.isNaN(when) ? '' : ', ' + new Date(when).toLocaleString()}).`;
  b.hidden = false;
  b.dataset.device = q.device;
  b.dataset.person = q.person;
}

$('mem-forget-voice').onclick = () => {
  const { device, person } = $('mem-forget-voice').dataset;
  if (!device || !person) return;
  if (!confirm(`Forget ${person}'s voice on ${device}? The robot will not know them by voice until they enrol again.`)) return;
  voiceAsk('forget-voice', device, person);
};

function memAnswer(q, f) {
  if (q.op === 'voices' || q.op === 'forget-voice') { voiceAnswer(q, f); return; }
  memBusy(false);
  if (f.error) { memSay('refused', f.error.message); return; }
  const r = f.result || {};
  if (q.op === 'forget') {
    const n = r.forgotten || 0;
    memAsk('list', q.device, q.person, '', `${q.device} forgot ${n} fact${n === 1 ? '' : 's'}${q.fact ? '' : ` about ${q.person}`}. `);
    return;
  }
  const facts = Array.isArray(r.facts) ? r.facts : [];
  const ul = $('mem-facts');
  ul.replaceChildren();
  for (const x of facts) {
    const li = el('li');
    li.dataset.fact = String(x.id);
    const when = Date.parse(x.created);
    const meta = [q.person ? '' : String(x.person), Number.isNaN(when) ? '' : new Date(when).toLocaleString()].filter(Boolean).join(' · ');
    const b = el('button', 'small', 'Forget');
    b.type = 'button';
    b.onclick = () => memAsk('forget', q.device, String(x.person), String(x.id));
    li.append(el('span', 'text', String(x.text)), el('span', 'meta', meta), b);
    ul.append(li);
  }
  const whose = q.person ? `about ${q.person}` : 'about anyone';
  memSay('muted', (q.note || '') + (facts.length ? `${q.device} remembers ${facts.length} fact${facts.length === 1 ? '' : 's'} ${whose}` : `${q.device} remembers nothing ${whose}`));
  $('mem-voice').hidden = true;
  if (q.person) voiceAsk('voices', q.device, q.person);
  const all = $('mem-forget-all');
  all.hidden = !q.person;
  all.dataset.device = q.device;
  all.dataset.person = q.person || '';
}

$('mem-form').onsubmit = (ev) => {
  ev.preventDefault();
  $('mem-facts').replaceChildren();
  $('mem-forget-all').hidden = true;
  memAsk('list', $('mem-device').value, $('mem-person').value.trim());
};

$('mem-forget-all').onclick = () => {
  const { device, person } = $('mem-forget-all').dataset;
  if (!device || !person) return;
  if (!confirm(`Forget everything ${device} remembers about ${person}? This cannot be undone.`)) return;
  memAsk('forget', device, person);
};

function showFrame(device, f) {
  const box = $('camera');
  box.replaceChildren();
  if (f.error) { box.append(el('div', 'refused', f.error.message)); return; }
  const fr = f.result.frame || {};
  const img = el('img');
  img.alt = `camera of ${device}`;
  img.src = `data:${fr.mime || 'image/jpeg'};base64,${fr.image}`;
  box.append(img, el('div', 'muted', `${device}${fr.capturedAt ? ' at ' + new Date(fr.capturedAt).toLocaleTimeString() : ''}`));
}

function drawPhase() {
  const d = $('phase');
  d.replaceChildren();
  if (!phase) { d.textContent = 'none yet'; return; }
  const head = phase.event === 'start' ? `phase ${phase.phase} open (${phase.kind}${phase.channel ? ', whisper ' + phase.channel : ''})` : `phase ${phase.phase} ended: ${phase.reason}`;
  d.append(el('div', '', head));
  if (phase.remain_count) {
    d.append(el('div', '', Object.entries(phase.remain_count).map(([k, v]) => `${k} ${v} left`).join(' · ')));
  }
  for (const r of refusals) d.append(el('div', r.calm ? 'turn' : 'refused', r.text));
}

// refusal says in words why the floor did not take a robot's post. Most
// are turn-taking at work (another robot had the floor, too soon after
// its last words, its turns used up, the phase over): calm, not errors.
function refusal(who, reason) {
  const calm = {
    floor_busy: 'waited: another robot had the floor',
    rate_limited: 'waited: too soon after its last words',
    quota_exhausted: 'has used all its turns in this phase',
    phase_closed: 'was too late: the phase had ended',
  }[reason];
  if (calm) return { text: `${who} ${calm}`, calm: true };
  const why = { not_member: 'it is not in this phase', empty: 'it said nothing' }[reason] || reason;
  return { text: `${who}'s words were refused: ${why}`, calm: false };
}

connect();
