// planbridge share page. The link's secret is in the URL fragment (#k=…),
// which browsers never send; every request carries it in the
// X-Planbridge-Key header instead. The event stream is read with fetch()
// because EventSource cannot send headers. Nothing here is trusted by the
// server: it enforces tiers and attempt ids itself. On a relay page,
// relay.js (loaded first) carries every request and the stream sealed
// through the relay instead: window.planbridgeRelay.
'use strict';
(function () {
  const key = new URLSearchParams(location.hash.slice(1)).get('k') || '';
  const relay = window.planbridgeRelay || null;
  const room = location.pathname.split('/')[2] || '';
  const base = '/s/' + encodeURIComponent(room);
  const $ = (id) => document.getElementById(id);

  let state = null;     // last GET state
  let lastSeq = 0;      // last event seq seen; the stream resumes after it
  let ended = false;
  let assistant = null; // the transcript block text deltas append to
  let refetch = null;

  function api(path, opts) {
    opts = opts || {};
    opts.headers = Object.assign({ 'X-Planbridge-Key': key }, opts.headers || {});
    opts.cache = 'no-store';
    opts.credentials = 'omit';
    opts.referrerPolicy = 'no-referrer';
    return fetch(base + path, opts);
  }

  // call is one request: {status, ok, j}; body undefined is a GET.
  async function call(path, body) {
    if (relay) return relay.call(path, body);
    const r = await api(path, body === undefined ? {} : { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    let j = {};
    try { j = await r.json(); } catch (e) { /* empty body */ }
    return { status: r.status, ok: r.ok, j: j };
  }

  async function post(path, body) {
    const { status: st, ok, j } = await call(path, body);
    if (!ok) {
      if (j.open) showOpen(j.open);
      if (j.ended) end(j.ended);
      throw new Error(j.error || ('HTTP ' + st));
    }
    return j;
  }

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function clip(s, n) {
    s = String(s);
    return s.length > n ? s.slice(0, n) + '… [' + (s.length - n) + ' more characters]' : s;
  }

  function status(msg, ok) {
    const s = $('action-status');
    s.textContent = msg;
    s.className = ok ? 'ok' : 'error';
  }

  // ---- transcript ----

  function add(cls, text) {
    const t = $('transcript');
    const e = el('div', 'ev ' + cls, text);
    t.appendChild(e);
    e.scrollIntoView({ block: 'nearest' });
    return e;
  }

  function onEvent(ev) {
    const d = ev.data || {};
    switch (ev.kind) {
      case 'user':
        assistant = null;
        add('user', d.display || d.text || '');
        break;
      case 'turn_start':
        assistant = null;
        break;
      case 'text':
        if (!assistant) assistant = add('assistant', '');
        assistant.textContent += d.delta || '';
        break;
      case 'tool_call':
        assistant = null;
        add('tool', '→ ' + d.name + ' ' + clip(JSON.stringify(d.arguments || {}), 600));
        break;
      case 'tool_result': {
        const e = add('result' + (d.ok ? '' : ' fail'), (d.ok ? '✓ ' : '✗ ') + d.name + ': ' + clip(d.output || '', 800));
        e.title = d.id || '';
        break;
      }
      case 'blocked':
        assistant = null;
        add('blocked', '✕ blocked ' + d.name + ': ' + (d.reason || d.code || ''));
        break;
      case 'proposal':
        assistant = null;
        add('meta', 'Proposed plan: ' + (d.title || '(untitled)'));
        break;
      case 'notice':
      case 'queued':
        add('notice', d.message || (d.text ? 'Queued: ' + d.text : JSON.stringify(d)));
        break;
      case 'diagnostic':
        add('notice', (d.level || 'note') + ': ' + (d.message || ''));
        break;
      case 'error':
        add('error', d.message || JSON.stringify(d));
        break;
      case 'handoff':
        add('notice', 'Implementation handoff ' + (d.state || '') + (d.reason ? ': ' + d.reason : ''));
        break;
      case 'approval_closed':
        add('meta', 'Approval closed: ' + (d.reason || ''));
        break;
      case 'goal':
        renderGoal(d);
        break;
      case 'todo':
        renderTodos(d);
        break;
      case 'report':
        renderReport(d);
        break;
    }
    if (['approval', 'approval_closed', 'status', 'proposal', 'handoff'].includes(ev.kind)) scheduleState();
  }

  // The Goal as a person reads it: objective, status, budget use, turns
  // and time. Internal fields (plan reference, kickoff state, policy)
  // stay out of the page.
  function group(n) {
    return String(Math.trunc(Number(n) || 0)).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  }
  function duration(ns) {
    let s = Math.round((Number(ns) || 0) / 1e9);
    const h = Math.floor(s / 3600); s -= h * 3600;
    const m = Math.floor(s / 60); s -= m * 60;
    return (h ? h + ' h ' : '') + (h || m ? m + ' min ' : '') + s + ' s';
  }
  function renderGoal(d) {
    const dl = $('goal-body');
    dl.replaceChildren();
    const g = d && typeof d.goal === 'object' ? d.goal : null;
    if (!g) {
      $('goal').hidden = true;
      return;
    }
    const row = (label, value) => {
      dl.appendChild(el('dt', '', label));
      dl.appendChild(el('dd', '', value));
    };
    row('Objective', String(g.objective || ''));
    let status = String(g.status || '');
    if (g.reason) status += ': ' + g.reason;
    if (d.kickoff_pending === true) status += ' (not started yet)';
    row('Status', status);
    const used = Number(g.tokens_used) || 0, budget = Number(g.budget) || 0;
    row('Budget', budget > 0
      ? group(used) + ' of ' + group(budget) + ' tokens (' + Math.floor(used * 100 / budget) + '%)'
      : group(used) + ' tokens (no budget)');
    const turns = Number(g.turns) || 0;
    row('Turns', turns + (turns === 1 ? ' turn' : ' turns') + ', ' + duration(g.time_used));
    if (g.plan_ref) row('Plan', 'implements the accepted plan');
    $('goal').hidden = false;
  }

  // The implementation report, read-only: summary, steps with their files,
  // files (those outside the plan marked), Validation commands.
  function renderReport(d) {
    $('report-summary').textContent = (d.title ? d.title + ' — ' : '') + (d.summary || '');
    const box = $('report-body');
    box.replaceChildren();
    const section = (title) => {
      const det = el('details', 'report-section');
      det.open = true;
      det.appendChild(el('summary', '', title));
      box.appendChild(det);
      return det;
    };
    const steps = section('Steps');
    for (const st of d.steps || []) {
      const li = el('div', 'report-step step-' + (st.status || ''),
        '[' + (st.status || '') + '] ' + (st.text || st.id || '') + (st.no_change ? ' (done, no change)' : ''));
      for (const f of st.files || []) li.appendChild(el('div', 'report-file', f));
      steps.appendChild(li);
    }
    const files = section('Files');
    for (const f of d.files || []) {
      files.appendChild(el('div', 'report-file' + (f.outside_plan ? ' outside' : ''),
        (f.status || '') + ' ' + f.path + ' +' + (f.added || 0) + ' -' + (f.removed || 0) + (f.outside_plan ? ' — outside the plan' : '')));
    }
    const val = section('Validation');
    for (const v of d.validation || []) {
      val.appendChild(el('div', 'report-validation' + (v.ran ? ' ran' : ''),
        (v.ran ? (v.exit === undefined || v.exit === null ? 'ran (no exit status)' : 'ran (exit ' + v.exit + ')') : 'not run') + ': ' + v.command));
    }
    if ((d.scope_extensions || []).length) {
      section('Scope extended to').appendChild(el('div', '', d.scope_extensions.join(', ')));
    }
    if ((d.scope_unsettled || []).length) {
      const us = section('Not held to the scope (stopped before its effects were compared)');
      for (const c of d.scope_unsettled) us.appendChild(el('div', 'report-file outside', c));
    }
    if ((d.scope_restored || []).length) {
      const rs = section('Restored outside the scope');
      for (const r of d.scope_restored) {
        rs.appendChild(el('div', 'report-restored', 'after ' + (r.command || '') + ' (' + (r.by || '') + '): ' + (r.paths || []).join(', ') +
          (r.kept ? ' — what it left is kept in the host\'s state directory' : '')));
        for (const f of r.failed || []) rs.appendChild(el('div', 'report-file outside', 'not restored: ' + f));
      }
    }
    $('report').hidden = false;
  }

  function renderTodos(d) {
    const items = Array.isArray(d) ? d : (d.items || d.todos || d.list);
    const ul = $('todo-list');
    ul.replaceChildren();
    if (!Array.isArray(items)) {
      ul.appendChild(el('li', '', JSON.stringify(d)));
    } else {
      for (const it of items) {
        if (typeof it !== 'object' || it === null) { ul.appendChild(el('li', '', String(it))); continue; }
        const st = it.status || (it.done ? 'done' : '');
        const li = el('li', st === 'done' || st === 'completed' ? 'todo-done' : '',
          (st ? '[' + st + '] ' : '') + (it.text || it.content || it.title || JSON.stringify(it)));
        ul.appendChild(li);
      }
    }
    $('todos').hidden = false;
  }

  // ---- state / approval card ----

  function scheduleState() {
    clearTimeout(refetch);
    refetch = setTimeout(loadState, 80);
  }

  async function loadState() {
    if (ended) return;
    let r;
    try { r = await call('/state'); } catch (e) { return; }
    const j = r.j;
    if (!r.ok) {
      if (r.status === 401 || r.status === 404 || r.status === 410) {
        if (j.open) showOpen(j.open);
        end(j.ended || { message: j.error || 'This link is not valid.' });
      }
      return;
    }
    state = j;
    render();
  }

  // The diff from the previous plan version, one line per element, each
  // set as text (never markup) and styled by its first character.
  function renderDiff(d) {
    const box = $('plan-diff-body');
    box.replaceChildren();
    if (!d || typeof d.text !== 'string') {
      $('plan-diff').hidden = true;
      return;
    }
    $('plan-diff-title').textContent = 'Changes from version ' + d.from + ' to version ' + d.to + (d.clipped ? ' (cut; the full diff is in Emacs)' : '');
    const lines = d.text.split('\n');
    if (lines.length && lines[lines.length - 1] === '') lines.pop();
    for (const line of lines) {
      let cls = 'ctx';
      if (line.startsWith('+++') || line.startsWith('---')) cls = 'file';
      else if (line.startsWith('@@')) cls = 'hunk';
      else if (line.startsWith('+')) cls = 'add';
      else if (line.startsWith('-')) cls = 'del';
      box.appendChild(el('span', cls, line));
    }
    $('plan-diff').hidden = false;
  }

  function setting(dl, name, value, pre) {
    dl.appendChild(el('dt', '', name));
    const dd = el('dd');
    if (pre) dd.appendChild(el('pre', '', value)); else dd.textContent = value;
    dl.appendChild(dd);
  }

  function render() {
    const st = state, a = st.approval, s = st.session, act = st.actions;
    $('title').textContent = s.title || a.title || 'planbridge session';
    $('tier').textContent = st.tier + ' link';
    $('posture').textContent = (s.plan ? 'Plan' : 'no Plan') + ' · ' + s.mode + (s.busy ? ' · working' : '');
    if (a.title || a.html) {
      $('proposal').innerHTML = a.html; // rendered server-side by proposal.RenderHTML (raw HTML dropped, URLs sanitised)
      $('card-status').textContent = a.pending
        ? 'Awaiting a decision' + (a.hidden ? ' (card hidden in Emacs)' : '') + (a.edited ? ' · edited by the host' : '')
        : 'Proposal ' + s.proposal_status;
    } else {
      $('proposal').replaceChildren();
      $('card-status').textContent = 'No proposal yet.';
    }
    renderDiff(a.diff);
    const dl = $('settings');
    dl.replaceChildren();
    const sel = a.selection || {};
    $('settings-box').hidden = !a.pending;
    if (a.pending) {
      setting(dl, 'Location', sel.location === 'worktree' ? 'Worktree' : 'Here');
      setting(dl, 'Context', sel.context);
      setting(dl, 'Execution', sel.execution);
      setting(dl, 'Budget', sel.budget ? sel.budget + ' tokens' : 'unlimited');
      setting(dl, 'Mode', sel.mode);
      setting(dl, 'Model', sel.model || '(session default)');
      setting(dl, 'Effort', sel.effort || '(default)');
      setting(dl, 'Skills', (sel.skills && sel.skills.length) ? sel.skills.join('\n') : 'none', true);
      setting(dl, 'Instructions', sel.instructions || 'none', true);
    }
    const bl = $('blockers');
    bl.replaceChildren();
    for (const b of (a.blockers || [])) bl.appendChild(el('li', '', b));
    $('accept-reason').hidden = !act.reason;
    $('accept-reason').textContent = act.reason || '';
    $('accept-here').hidden = ended || !act.accept_here;
    $('accept-worktree').hidden = ended || !act.accept_worktree;
    $('park').hidden = ended || !act.park;
    $('feedback-box').hidden = ended || !act.feedback;
    $('prompt-box').hidden = ended || !act.prompt;
  }

  async function act(btn, path, body, done) {
    btn.disabled = true;
    try {
      const j = await post(path, body);
      status(done(j), true);
      scheduleState();
    } catch (e) {
      status(e.message, false);
    } finally {
      btn.disabled = false;
    }
  }

  function wire() {
    $('accept-here-btn').addEventListener('click', (e) => {
      const a = state.approval;
      act(e.target, '/accept', { attempt: a.attempt, location: 'here', settings: a.settings }, (j) => 'Accepted: ' + (j.message || ''));
    });
    $('accept-worktree-btn').addEventListener('click', (e) => {
      const a = state.approval;
      act(e.target, '/accept', { attempt: a.attempt, location: 'worktree', settings: a.settings, branch: $('branch').value.trim() },
        (j) => 'Accepted: ' + (j.message || ''));
    });
    $('park-btn').addEventListener('click', (e) => {
      const a = state.approval;
      act(e.target, '/park', { attempt: a.attempt, settings: a.settings }, (j) => j.message || 'Parked.');
    });
    $('feedback-btn').addEventListener('click', (e) => {
      const text = $('feedback').value;
      act(e.target, '/feedback', { attempt: state.approval.attempt, text: text }, () => { $('feedback').value = ''; return 'Feedback sent.'; });
    });
    $('prompt-btn').addEventListener('click', (e) => {
      const text = $('prompt').value;
      act(e.target, '/prompt', { text: text }, (j) => { $('prompt').value = ''; return j.queued ? 'Prompt queued.' : 'Prompt started.'; });
    });
  }

  // ---- live stream ----

  function end(e) {
    if (ended) return;
    ended = true;
    const b = $('banner');
    b.appendChild(el('p', 'ended', (e && e.message) || 'This share has ended.'));
    b.hidden = false;
    $('conn').textContent = 'ended';
    for (const id of ['accept-here', 'accept-worktree', 'park', 'feedback-box', 'prompt-box']) $(id).hidden = true;
  }

  function showOpen(l) {
    const b = $('banner');
    const p = el('p');
    const a = el('a', 'open-link', 'Open the Worktree session (' + l.tier + ' link)');
    a.href = l.url;
    a.rel = 'noreferrer';
    p.appendChild(a);
    b.appendChild(p);
    b.hidden = false;
  }

  function frame(text) {
    let name = 'message';
    const data = [];
    for (const line of text.split('\n')) {
      if (line === '' || line.startsWith(':')) continue;
      const c = line.indexOf(':');
      const f = c < 0 ? line : line.slice(0, c);
      let v = c < 0 ? '' : line.slice(c + 1);
      if (v.startsWith(' ')) v = v.slice(1);
      if (f === 'event') name = v; else if (f === 'data') data.push(v);
    }
    if (!data.length) return;
    const obj = JSON.parse(data.join('\n'));
    if (name === 'message') {
      if (obj.seq <= lastSeq) return;
      lastSeq = obj.seq;
      onEvent(obj);
    } else if (name === 'open') {
      showOpen(obj);
    } else if (name === 'ended') {
      end(obj);
    }
  }

  async function stream() {
    if (relay) {
      return relay.stream({
        message: (ev) => { if (ev.seq > lastSeq) { lastSeq = ev.seq; onEvent(ev); } },
        open: showOpen,
        ended: end,
        conn: (text) => { $('conn').textContent = text; },
        isEnded: () => ended,
        lastSeq: () => lastSeq,
      });
    }
    let delay = 500;
    while (!ended) {
      try {
        const r = await api('/events?since=' + lastSeq);
        if (r.status === 401 || r.status === 404 || r.status === 410) {
          let j = {};
          try { j = await r.json(); } catch (e) { /* ignore */ }
          if (j.open) showOpen(j.open);
          end(j.ended || { message: j.error || 'This link is not valid.' });
          return;
        }
        if (!r.ok || !r.body) throw new Error('HTTP ' + r.status);
        $('conn').textContent = 'live';
        delay = 500;
        const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
        let buf = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += value;
          let i;
          while ((i = buf.indexOf('\n\n')) >= 0) {
            frame(buf.slice(0, i));
            buf = buf.slice(i + 2);
          }
        }
      } catch (e) { /* reconnect below */ }
      if (ended) return;
      $('conn').textContent = 'reconnecting…';
      await new Promise((res) => setTimeout(res, delay));
      delay = Math.min(delay * 2, 10000);
    }
  }

  function loopback(host) {
    return host === 'localhost' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host);
  }

  wire();
  // Another link of the same room differs only in the fragment, which does
  // not reload the page: reload so the new key (and tier) takes effect.
  window.addEventListener('hashchange', () => location.reload());
  if (relay) {
    if (relay.error) {
      end({ message: relay.error });
      return;
    }
    // Answers arrive on the stream: open it first.
    stream();
    loadState();
    return;
  }
  if (!key) {
    end({ message: 'This link has no key: open the full link the host gave you.' });
    return;
  }
  // The secret travels in a header: never in the clear to another machine.
  if (location.protocol !== 'https:' && !loopback(location.hostname)) {
    end({ message: 'This link is served over plain HTTP from another machine: the page will not send its secret where anyone on the network could read it. Ask the host for an https:// or relay link.' });
    return;
  }
  loadState().then(stream);
})();
