// planbridge relay transport. It runs only on a relay page (/r/ROOM) and
// gives app.js window.planbridgeRelay: call(path, body) and stream(h).
//
// The fragment holds this link's secret (#k=SECRET&t=TIER); it never
// leaves the page. Keys are HKDF-SHA256 derivations of it (WebCrypto):
// the secret of each weaker tier (owner → full → view), the stream key
// HKDF(view, "stream") every tier reads, and this tier's action and reply
// keys. Every request is sealed with AES-256-GCM under the action key
// (random 96-bit IV; page id, counter and time in the associated data);
// every frame from the host is opened with the stream or reply key, its
// seq as nonce and in the associated data. The relay sees only sealed
// bytes; the host decides what this link may do.
'use strict';
(function () {
  if (location.pathname.split('/')[1] !== 'r') return;
  const frag = new URLSearchParams(location.hash.slice(1));
  const room = location.pathname.split('/')[2] || '';
  const tier = frag.get('t') || '';
  const secret = frag.get('k') || '';
  const chain = ['owner', 'full', 'view'];
  const enc = new TextEncoder();
  const dec = new TextDecoder();
  const api = {};
  window.planbridgeRelay = api;
  if (!window.isSecureContext || !window.crypto || !crypto.subtle) {
    api.error = 'This relay page is served over plain HTTP from another machine: the browser gives it no cryptography and it will not use the link\'s secret here. Ask the host for an https:// relay link.';
    return;
  }
  if (!secret || chain.indexOf(tier) < 0) {
    api.error = 'This link has no key: open the full link the host gave you.';
    return;
  }

  function b64(u8) {
    let s = '';
    for (let i = 0; i < u8.length; i += 0x8000) s += String.fromCharCode.apply(null, u8.subarray(i, i + 0x8000));
    return btoa(s);
  }
  function unb64(s) {
    const bin = atob(s);
    const u8 = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) u8[i] = bin.charCodeAt(i);
    return u8;
  }
  function unb64url(s) {
    s = s.replace(/-/g, '+').replace(/_/g, '/');
    return unb64(s + '='.repeat((4 - s.length % 4) % 4));
  }
  const b64url = (u8) => b64(u8).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');

  async function hkdf(ikm, label) {
    const k = await crypto.subtle.importKey('raw', ikm, 'HKDF', false, ['deriveBits']);
    const bits = await crypto.subtle.deriveBits({ name: 'HKDF', hash: 'SHA-256', salt: new Uint8Array(0), info: enc.encode('planbridge/v1 ' + label) }, k, 256);
    return new Uint8Array(bits);
  }
  const aes = (raw, use) => crypto.subtle.importKey('raw', raw, 'AES-GCM', false, use);

  const ready = (async function () {
    const s = {};
    let cur = unb64url(secret);
    if (cur.length !== 32) throw new Error('bad key');
    s[tier] = cur;
    for (let i = chain.indexOf(tier) + 1; i < chain.length; i++) {
      cur = await hkdf(cur, chain[i]);
      s[chain[i]] = cur;
    }
    return {
      stream: await aes(await hkdf(s.view, 'stream'), ['decrypt']),
      action: await aes(await hkdf(s[tier], 'action'), ['encrypt']),
      reply: await aes(await hkdf(s[tier], 'reply'), ['decrypt']),
    };
  })();

  const pageId = b64url(crypto.getRandomValues(new Uint8Array(16)));
  let counter = 0;
  let reqId = 0;
  let offset = 0; // host clock minus ours, from the host's frames
  let lastDown = 0; // last frame seq seen; the stream resumes after it
  const pending = new Map();
  const fetchOpts = { cache: 'no-store', credentials: 'omit', referrerPolicy: 'no-referrer' };

  async function seal(op, id, body) {
    const keys = await ready;
    const n = ++counter;
    const ts = Date.now() + offset;
    const iv = crypto.getRandomValues(new Uint8Array(12));
    const aad = enc.encode('planbridge/v1 up\0' + room + '\0' + tier + '\0' + pageId + '\0' + n + '\0' + ts);
    const plain = enc.encode(JSON.stringify({ op: op, id: id, body: body === undefined ? {} : body }));
    const c = new Uint8Array(await crypto.subtle.encrypt({ name: 'AES-GCM', iv: iv, additionalData: aad }, keys.action, plain));
    return JSON.stringify({ p: pageId, n: n, ts: ts, iv: b64(iv), c: b64(c) });
  }

  // Frames are sealed and sent one at a time, so they reach the host in
  // counter order (it refuses a counter that is not above the last).
  let queue = Promise.resolve();
  function sealAndSend(op, id, body) {
    const p = queue.then(() => seal(op, id, body)).then(deliver);
    queue = p.catch(() => {});
    return p;
  }

  async function deliver(frame) {
    const r = await fetch('/r/' + encodeURIComponent(room) + '/send', Object.assign({ method: 'POST', body: frame, headers: { 'Content-Type': 'text/plain' } }, fetchOpts));
    if (r.ok) return null;
    let j = {};
    try { j = await r.json(); } catch (e) { /* empty */ }
    if (r.status === 410) return { status: 410, ok: false, j: { error: 'This share has ended.', ended: { reason: 'ended', message: 'This share has ended.' } } };
    // Never a 401/404: those end the page, and a relay that lost
    // the room (its host reconnecting) is not the end of the share.
    return { status: r.status === 429 ? 429 : 503, ok: false, j: { error: 'relay: ' + (j.error || ('HTTP ' + r.status)) } };
  }

  // call sends one request to the host and resolves with its answer as
  // {status, ok, j}, like a fetch of the direct page's endpoint.
  let over = null; // the ending, once the host said the share ended
  api.call = async function (path, body) {
    if (over) return { status: 410, ok: false, j: { error: over.message || 'This share has ended.', ended: over } };
    const id = ++reqId;
    const answer = new Promise((res) => {
      pending.set(id, res);
      setTimeout(() => {
        if (pending.delete(id)) res({ status: 504, ok: false, j: { error: 'No answer from the host through the relay; try again.' } });
      }, 20000);
    });
    try {
      // A relay that has not seen the host yet (it just restarted), or
      // that is rate-limiting this address, says so: try a few times
      // before giving up.
      let bad = null;
      for (let i = 0; i < 5; i++) {
        bad = await sealAndSend(path.replace(/^\//, ''), id, body);
        if (!bad || (bad.status !== 503 && bad.status !== 429)) break;
        await new Promise((res) => setTimeout(res, 500 * (i + 1)));
      }
      if (bad) { pending.delete(id); return bad; }
    } catch (e) {
      pending.delete(id);
      return { status: 503, ok: false, j: { error: 'The relay cannot be reached.' } };
    }
    return answer;
  };

  // sync asks the host for the events after the last one shown (hello)
  // and holds the live events meanwhile: when the host answers, every
  // replayed event is in, and the held ones go out in seq order with
  // the replay (app.js drops those it has). One sync runs at a time; one
  // asked for meanwhile runs after it.
  let syncing = false;
  let again = false;
  let held = [];
  async function sync(h) {
    if (syncing) { again = true; return; }
    syncing = true;
    let r;
    try { r = await api.call('/hello', { since: h.lastSeq() }); } catch (e) { r = { ok: false }; }
    const evs = held.sort((a, b) => a.seq - b.seq);
    held = [];
    syncing = false;
    for (const ev of evs) h.message(ev);
    if (h.isEnded()) return;
    if (!r.ok) setTimeout(() => sync(h), 1000);
    else if (again) { again = false; sync(h); }
  }

  function nonce(seq) {
    const n = new Uint8Array(12);
    new DataView(n.buffer).setBigUint64(4, BigInt(seq));
    return n;
  }

  async function onFrame(f, h) {
    if (typeof f.seq !== 'number' || f.seq <= lastDown) return; // replayed or reordered by the relay
    const gap = lastDown > 0 && f.seq > lastDown + 1;
    lastDown = f.seq;
    if (gap) sync(h);
    const keys = await ready;
    const key = f.k === 's' ? keys.stream : (f.k === tier ? keys.reply : null);
    if (!key) return; // another tier's answer
    let m;
    try {
      const aad = enc.encode('planbridge/v1 down\0' + room + '\0' + f.k + '\0' + f.seq);
      const p = await crypto.subtle.decrypt({ name: 'AES-GCM', iv: nonce(f.seq), additionalData: aad }, key, unb64(f.c));
      m = JSON.parse(dec.decode(p));
    } catch (e) {
      return; // not sealed by the host: dropped
    }
    if (typeof m.now === 'number') offset = m.now - Date.now();
    switch (m.t) {
      case 'event':
        if (syncing) held.push(m.ev); else h.message(m.ev);
        break;
      case 'open':
        h.open(m.open);
        break;
      case 'ended':
        over = m.ended || {};
        h.ended(m.ended);
        return 'stop';
      case 'reply':
        if (m.page === pageId && pending.has(m.id)) {
          const res = pending.get(m.id);
          pending.delete(m.id);
          res({ status: m.status, ok: m.status >= 200 && m.status < 300, j: m.body || {} });
        }
        break;
    }
  }

  // stream reads the relay's frames until the share ends, reconnecting
  // with backoff; h has message, open, ended, conn, isEnded and lastSeq.
  api.stream = async function (h) {
    await ready;
    let delay = 500;
    while (!h.isEnded()) {
      try {
        const r = await fetch('/r/' + encodeURIComponent(room) + '/events?since=' + lastDown, fetchOpts);
        if (r.status === 410) {
          over = { reason: 'ended', message: 'This share has ended.' };
          h.ended(over);
          return;
        }
        if (!r.ok || !r.body) throw new Error('HTTP ' + r.status);
        // Sync now, before the relay's ring replays: its events are
        // held, so the hello asks for everything after what is shown.
        sync(h);
        const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
        let buf = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += value;
          let i;
          while ((i = buf.indexOf('\n\n')) >= 0) {
            const text = buf.slice(0, i);
            buf = buf.slice(i + 2);
            let name = 'message';
            const data = [];
            for (const line of text.split('\n')) {
              if (line.startsWith('event: ')) name = line.slice(7);
              else if (line.startsWith('data: ')) data.push(line.slice(6));
            }
            if (name === 'live') {
              delay = 500;
              h.conn('live');
            } else if (name === 'message' && data.length) {
              let f;
              try { f = JSON.parse(data.join('\n')); } catch (e) { continue; }
              if (await onFrame(f, h) === 'stop') return;
            }
          }
        }
      } catch (e) { /* reconnect below */ }
      if (h.isEnded()) return;
      h.conn('reconnecting…');
      await new Promise((res) => setTimeout(res, delay));
      delay = Math.min(delay * 2, 10000);
    }
  };
  api.ready = ready;
  api.tier = tier;
})();
