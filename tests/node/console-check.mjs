// Drives the room console in Debian's Chromium with playwright-core, as a
// person on a phone would: the page loads and goes live, a message typed
// in the box is answered by a companion, the vote table for that message
// fills, the page reloaded mid-conversation still shows the message and
// its answer, the timeline shows the turn, what a robot did with its words
// shows under them, a device's camera frame comes on request (and a robot
// without a camera has no button), the silences shown are the real ones
// (under a second), no microphone line in a room without microphones,
// turn-taking not shown as an error, and the
// memory panel lists what a device remembers about this console's person,
// refuses another's, and forgets after a confirm (MEMORY_DEVICE: the device
// asked; MEMORY_ON=1: its memory is on, else its silence is what the panel
// must show; without MEMORY_DEVICE the panel is only looked for). Usage:
//   node console-check.mjs URL SCREENSHOT.png [SECRET ...]
// Any SECRET found in the page's HTML fails the check.
import { chromium } from 'playwright-core';

const [url, shot, ...secrets] = process.argv.slice(2);
const realtime = process.env.CONSOLE_MODE === 'realtime'; // a realtime room: phases, not votes
if (!url || !shot) {
  console.error('usage: node console-check.mjs URL SCREENSHOT.png [SECRET ...]');
  process.exit(2);
}
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'],
});
const step = (what) => console.log(JSON.stringify({ step: what, at: Date.now() }));
try {
  const page = await browser.newPage({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
  const problems = [];
  page.on('pageerror', (e) => problems.push(String(e)));
  await page.goto(url);
  await page.waitForSelector('#status.on', { timeout: 10000 });
  await page.waitForFunction(() => !document.getElementById('text').disabled, null, { timeout: 10000 });
  step('live');

  const text = `Hello robots, this is the browser speaking (${Date.now()})`;
  await page.fill('#text', text);
  await page.click('form#say button');
  const mine = page.locator('li.msg', { hasText: text });
  await mine.waitFor({ timeout: 10000 });
  const id = await mine.getAttribute('data-id');
  step('sent');

  let votes = 0, grant = '';
  if (realtime) {
    await page.waitForFunction(() => /open/.test(document.getElementById('phase').textContent) && /left/.test(document.getElementById('phase').textContent), null, { timeout: 20000 });
    step('phase');
  } else {
    await page.waitForSelector(`li.msg[data-id="${id}"] table.votes td`, { timeout: 20000 });
    votes = await page.locator(`li.msg[data-id="${id}"] table.votes tr`).count();
    grant = await page.locator(`li.msg[data-id="${id}"] .grant`).textContent();
    step('votes');
  }

  await page.waitForFunction((id) => {
    const lis = [...document.querySelectorAll('li.msg')];
    const i = lis.findIndex((l) => l.dataset.id === id);
    return i >= 0 && lis.slice(i + 1).some((l) => !l.classList.contains('user'));
  }, id, { timeout: 30000 });
  const answer = await page.locator(`li.msg[data-id="${id}"] ~ li.msg:not(.user)`).first().textContent();
  const answerID = await page.locator(`li.msg[data-id="${id}"] ~ li.msg:not(.user)`).first().getAttribute('data-id');
  step('answered');

  // Reloaded mid-conversation, the page shows the conversation so far
  // (the bridge's replay): the message sent and its answer, in order.
  await page.reload();
  await page.waitForSelector('#status.on', { timeout: 10000 });
  await page.waitForSelector(`li.msg[data-id="${answerID}"]`, { timeout: 10000 });
  const order = await page.evaluate(([a, b]) => {
    const ids = [...document.querySelectorAll('li.msg')].map((l) => l.dataset.id);
    return [ids.indexOf(a), ids.indexOf(b), document.querySelector(`li.msg[data-id="${a}"]`)?.dataset.replayed];
  }, [id, answerID]);
  if (order[0] < 0 || order[1] <= order[0] || order[2] !== '1') throw new Error('after a reload, the transcript: ' + JSON.stringify(order));
  step('reloaded');

  // What a robot did with its words (metadata.actions: the demo's robots
  // nod when spoken to) is shown under them.
  let actions = '';
  if (!realtime) {
    await page.waitForSelector('li.msg:not(.user) .actions', { timeout: 30000 });
    actions = await page.locator('li.msg:not(.user) .actions').first().textContent();
    if (!/^does: nod/.test(actions)) throw new Error('the actions shown: ' + actions);
    step('actions');
  }

  let bars = 0, frame = 0;
  if (realtime) {
    await page.waitForFunction(() => /ended/.test(document.getElementById('phase').textContent), null, { timeout: 40000 });
    step('ended');
  } else {
    await page.waitForSelector('#timeline .bar', { timeout: 20000 });
    bars = await page.locator('#timeline .bar').count();
    step('timeline');

    // The latest camera frame of a device, on request; a camera button
    // only on a robot that has a camera (kyoko has none).
    await page.waitForSelector('#devices li:has-text("kyoko")', { timeout: 10000 });
    const kyokoButtons = await page.locator('#devices li', { hasText: 'kyoko' }).locator('button').count();
    if (kyokoButtons) throw new Error('a camera button on kyoko, which has no camera');
    await page.locator('#devices li', { hasText: 'aya' }).locator('button').click();
    await page.waitForSelector('#camera img', { timeout: 15000 });
    frame = await page.locator('#camera img').evaluate((img) => img.complete && img.naturalWidth);
    if (!frame) throw new Error('the camera frame did not load');
    step('camera');
  }

  // The silences shown are the ones the page saw live since the reload:
  // the demo's robots answer each other in well under a second.
  let silences = '';
  if (!realtime) {
    await page.waitForFunction(() => /\d+ ms/.test(document.getElementById('silences').textContent), null, { timeout: 40000 });
    silences = await page.locator('#silences').textContent();
    const gaps = [...silences.matchAll(/(overlap )?(\d+) ms/g)].map((m) => (m[1] ? -1 : 1) * Number(m[2]));
    if (!gaps.length || gaps.some((g) => g < 0 || g >= 1000)) throw new Error('the silences shown: ' + silences);
    step('silences');
  }

  // A room whose robots do not hear shows no microphones; turn-taking in a
  // realtime room is not shown as an error.
  if (await page.locator('#gate').isVisible()) throw new Error('a microphone line in a room without microphones');
  for (const r of await page.locator('#phase .refused').allTextContents()) {
    if (/another robot had the floor|too soon|floor_busy|rate_limited/.test(r)) throw new Error('turn-taking shown as an error: ' + r);
  }

  // Memory: the panel is there for a user, its person is the console's
  // own; a List answers (what the device remembers, or nothing), another
  // person's is the device's refusal, and Forget everything asks first.
  await page.waitForSelector('#memory:not([hidden])', { timeout: 10000 });
  const person = await page.inputValue('#mem-person');
  let memory = '';
  const memDevice = process.env.MEMORY_DEVICE;
  const said = async (re) => {
    try {
      await page.waitForFunction((src) => new RegExp(src).test(document.getElementById('mem-out').textContent), re.source, { timeout: 20000 });
    } catch (e) {
      throw new Error(`the memory panel says ${JSON.stringify(await page.locator('#mem-out').textContent())}, want ${re}: ${e}`);
    }
    return page.locator('#mem-out').textContent();
  };
  if (memDevice) {
    await page.waitForSelector(`#mem-device option[value="${memDevice}"]`, { state: 'attached', timeout: 10000 });
    await page.selectOption('#mem-device', memDevice);
    await page.click('#mem-list');
  }
  if (memDevice && process.env.MEMORY_ON !== '1') { // a device without memory: its silence, said in the panel
    memory = await said(/no answer within/);
    if (!(await page.locator('#mem-out.refused').count())) throw new Error('no answer not shown as an error: ' + memory);
    step('memory off');
  }
  if (memDevice && process.env.MEMORY_ON === '1') {
    memory = await said(new RegExp(`remembers (nothing|\\d+ facts?) about ${person}`));
    step('memory list');
    // The voice the device knows the person by: this device identifies
    // none (it says so); a known voice (handed to the page as the bridge
    // would answer) is shown, and its Forget voice asks first, then the device.
    const voiceSaid = async (re) => {
      try {
        await page.waitForFunction((src) => new RegExp(src).test(document.getElementById('mem-voice-text').textContent), re.source, { timeout: 20000 });
      } catch (e) {
        throw new Error(`the voice line says ${JSON.stringify(await page.locator('#mem-voice-text').textContent())}, want ${re}: ${e}`);
      }
    };
    await voiceSaid(/keeps no voiceprints/);
    await page.evaluate(([device, person]) => memAnswer({ op: 'voices', device, person },
      { result: { device, facts: [], forgotten: 0, voices: [{ person, samples: 3, dims: 192, model: 'ecapa', updated: new Date().toISOString() }] } }), [memDevice, person]);
    await voiceSaid(new RegExp(`knows ${person}'s voice \\(3 samples`));
    if (!(await page.locator('#mem-forget-voice').isVisible())) throw new Error('no Forget voice for a known voice');
    let askedVoice = '';
    page.once('dialog', (d) => { askedVoice = d.message(); d.accept(); });
    await page.click('#mem-forget-voice');
    await voiceSaid(/keeps no voiceprints/);
    if (!askedVoice.includes(person)) throw new Error('forget voice did not ask first: ' + askedVoice);
    step('memory voice');
    await page.fill('#mem-person', 'someone-else');
    await page.click('#mem-list');
    const refused = await said(/may not see/);
    if (!(await page.locator('#mem-out.refused').count())) throw new Error('a refusal not shown as one: ' + refused);
    step('memory refused');
    await page.fill('#mem-person', person);
    await page.click('#mem-list');
    await said(new RegExp(`remembers (nothing|\\d+ facts?) about ${person}`));
    // A fact is a person's words, shown as text: markup in it stays text.
    // (The device's store may be empty: the page is handed a list as the
    // bridge would answer it.) Its Forget asks the device for that fact.
    const words = '<img src=x onerror="window.__xss=1"> likes <b>tea</b> & cake';
    await page.evaluate(([device, person, text]) => memAnswer({ op: 'list', device, person },
      { result: { device, facts: [{ id: 'f-check', person, text, created: new Date().toISOString() }], forgotten: 0 } }), [memDevice, person, words]);
    const shown = await page.locator('#mem-facts li[data-fact="f-check"] .text').textContent();
    if (shown !== words || await page.locator('#mem-facts img, #mem-facts b').count() || await page.evaluate(() => window.__xss)) {
      throw new Error('a fact was not shown as text: ' + shown);
    }
    await page.locator('#mem-facts li[data-fact="f-check"] button').click();
    await said(new RegExp(`forgot \\d+ facts?\\. .*remembers nothing about ${person}`));
    step('memory fact');
    let asked = '';
    page.once('dialog', (d) => { asked = d.message(); d.accept(); });
    await page.click('#mem-forget-all');
    memory += ' / ' + await said(new RegExp(`forgot \\d+ facts? about ${person}\\. .*remembers nothing about ${person}`));
    if (!asked.includes(person)) throw new Error('forget everything did not ask first: ' + asked);
    step('memory forget');
  }

  await page.screenshot({ path: shot, fullPage: true });
  const html = await page.content();
  for (const s of secrets) {
    if (s && html.includes(s)) throw new Error('a secret is in the page');
  }
  if (problems.length) throw new Error('page errors: ' + problems.join('; '));
  const phase = await page.locator('#phase').textContent();
  const turns = await page.locator('#phase .turn').count();
  console.log(JSON.stringify({ ok: true, votes: Math.max(0, votes - 1), grant, answer, actions, bars, frameWidth: frame, phase, person, memory, silences, turns }));
} finally {
  await browser.close();
}
