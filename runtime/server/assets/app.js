// berth's page script: the page's content, approve, deny and stop buttons, the
// auto-mode switch, the prompt form, and live updates from the event stream. Plain
// JavaScript, no build step. The page routes answer a shell without data;
// the content is the server's own rendering (every value escaped there),
// fetched from /api/pages/… with the session's secret and parsed as a
// document, never run (the Content-Security-Policy allows this origin's
// script files only). Data from the JSON API is only ever set as text
// (textContent), never as HTML.
'use strict';

(function () {
  // The session's secret: handed out once, by the login answer, and kept in
  // this origin's storage. The session cookie reaches every port of this
  // host; the secret stays with this port's page, and the server refuses an
  // API request made with the cookie but without it.
  const SECRET_KEY = 'berth-session-secret';
  const handed = document.querySelector('meta[name="berth-session-secret"]');
  if (handed) {
    try { window.localStorage.setItem(SECRET_KEY, handed.content); } catch (e) { /* reported by the API's refusal */ }
    window.location.replace('/');
    return;
  }
  function secret() {
    try { return window.localStorage.getItem(SECRET_KEY) || ''; } catch (e) { return ''; }
  }
  // Headers for a read; every state-changing request also carries
  // X-Berth-Request: a cross-site form cannot set it, and a cross-origin
  // script would need a CORS preflight the server never grants.
  function readHeaders() { return { 'X-Berth-Session-Secret': secret() }; }
  function writeHeaders() {
    return { 'Content-Type': 'application/json', 'X-Berth-Request': '1', 'X-Berth-Session-Secret': secret() };
  }

  async function call(method, url, body) {
    const r = await fetch(url, {
      method: method,
      headers: writeHeaders(),
      credentials: 'same-origin',
      body: JSON.stringify(body || {}),
    });
    let data = null;
    try { data = await r.json(); } catch (e) { data = null; }
    if (!r.ok) {
      const msg = data && data.error ? data.error.message : 'HTTP ' + r.status;
      throw new Error(msg);
    }
    return data;
  }

  function setOutcome(card, state, text) {
    card.dataset.state = state;
    const out = card.querySelector('.outcome');
    if (out) { out.textContent = text; }
    card.querySelectorAll('button, input').forEach(function (b) { b.disabled = true; });
  }

  function describeApproved(a) {
    // Another worker holds the agent: the approval is recorded for it.
    if (a.status === 'approved') {
      return ['approved', a.message || 'approved; it runs on the worker holding the agent'];
    }
    const o = a.outcome || {};
    if (!o.succeeded) {
      return ['failed', 'approved; it failed: ' + (o.diagnostic || 'no diagnostic')];
    }
    const r = o.result || {};
    if (r.kind === 'terminal') {
      return ['executed', 'approved and executed (exit ' + r.exit_code + ')'];
    }
    return ['executed', 'approved and executed'];
  }

  // The pending count in the heading follows what is decided, here or
  // elsewhere (the event stream).
  function countDown() {
    const count = document.getElementById('pending-count');
    if (!count) { return; }
    const n = parseInt(count.textContent, 10);
    if (n > 0) { count.textContent = String(n - 1); }
  }

  // Control characters as the server shows them: their Unicode pictures
  // (NUL → ␀), DEL ␡, C1 controls �, bidirectional overrides named.
  function visible(s) {
    return String(s)
      .replace(/[\u0000-\u0008\u000b-\u001f]/g, function (c) { return String.fromCharCode(0x2400 + c.charCodeAt(0)); })
      .replace(/\u007f/g, '\u2421')
      .replace(/[\u0080-\u009f]/g, '\ufffd')
      .replace(/[\u202a-\u202e\u2066-\u2069]/g, function (c) { return '[U+' + c.charCodeAt(0).toString(16).toUpperCase() + ']'; });
  }

  // "Show all": the whole command (or path, message) from the JSON API, set
  // as text; a file write's whole diff from its fragment route.
  async function showAll(button) {
    const id = button.dataset.actionId;
    const field = button.dataset.show;
    button.disabled = true;
    try {
      if (field === 'diff') {
        const doc = await fetchFragment('/api/pages/actions/' + encodeURIComponent(id) + '/diff');
        const block = button.closest('.diff-block');
        const nodes = Array.from(doc.body.childNodes).map(function (n) { return document.importNode(n, true); });
        block.replaceWith.apply(block, nodes);
        return;
      }
      const r = await fetch('/api/actions/' + encodeURIComponent(id), { credentials: 'same-origin', headers: readHeaders() });
      if (!r.ok) { throw new Error('HTTP ' + r.status); }
      let v = await r.json();
      field.split('.').forEach(function (k) { v = v == null ? v : v[k]; });
      const pre = button.previousElementSibling;
      pre.textContent = visible(v == null ? '' : v);
      pre.classList.add('expanded');
      button.remove();
    } catch (e) {
      button.disabled = false;
      button.textContent = 'Show all (error: ' + e.message + ')';
    }
  }

  // A deny waits GRACE_MS in the page, with an Undo; once sent it is final
  // (the log is append-only).
  const GRACE_MS = 5000;

  function graceThenDeny(button) {
    const card = button.closest('article.action');
    const out = card.querySelector('.outcome');
    card.querySelectorAll('button.approve, input.reason').forEach(function (b) { b.disabled = true; });
    const undo = document.createElement('button');
    undo.type = 'button';
    undo.className = 'undo';
    undo.textContent = 'Undo';
    button.hidden = true;
    button.after(undo);
    let left = GRACE_MS / 1000;
    out.textContent = 'denying in ' + left + ' s';
    const tick = setInterval(function () {
      left -= 1;
      if (left > 0) { out.textContent = 'denying in ' + left + ' s'; }
    }, 1000);
    const timer = setTimeout(function () {
      clearInterval(tick);
      undo.remove();
      button.hidden = false;
      // Decided elsewhere meanwhile: nothing to send.
      if (card.dataset.state === 'pending') { decide(button); }
    }, GRACE_MS);
    undo.addEventListener('click', function () {
      clearTimeout(timer);
      clearInterval(tick);
      undo.remove();
      button.hidden = false;
      card.querySelectorAll('button, input').forEach(function (b) { b.disabled = false; });
      out.textContent = 'deny cancelled: nothing was sent';
      button.focus();
    });
    undo.focus();
  }

  // An action with an external effect (a push, a PR, a deploy) takes a
  // second click: the first asks to confirm.
  function confirmThenApprove(button) {
    if (button.dataset.privileged === 'true' && button.dataset.confirming !== 'true') {
      button.dataset.confirming = 'true';
      button.textContent = 'Confirm approve';
      const out = button.closest('article.action').querySelector('.outcome');
      out.textContent = 'this has an effect outside the sandbox: click again to approve';
      return;
    }
    decide(button);
  }

  async function decide(button) {
    const card = button.closest('article.action');
    const id = button.dataset.actionId;
    const verb = button.dataset.verb;
    const before = card.dataset.state;
    const wasPending = before === 'pending';
    // Deciding: the event stream's echo of this very decision is not
    // "decided elsewhere".
    if (wasPending) { card.dataset.state = 'deciding'; }
    card.querySelectorAll('button').forEach(function (b) { b.disabled = true; });
    const out = card.querySelector('.outcome');
    out.textContent = { approve: 'approving…', deny: 'denying…', cancel: 'stopping…' }[verb] || '…';
    try {
      if (verb === 'cancel') {
        const a = await call('POST', '/api/actions/' + encodeURIComponent(id) + '/cancel', {});
        setOutcome(card, a.status, a.status === 'cancelled'
          ? 'stopped: cancelled, its output so far kept'
          : 'stop requested; the command was ' + (a.killed ? 'killed' : 'not found') + ', its end not recorded yet');
      } else if (verb === 'approve') {
        const a = await call('POST', '/api/actions/' + encodeURIComponent(id) + '/approve',
          { always: button.dataset.always === 'true' });
        const d = describeApproved(a);
        setOutcome(card, d[0], d[1]);
      } else {
        const input = card.querySelector('input.reason');
        const reason = input && input.value ? input.value : null;
        await call('POST', '/api/actions/' + encodeURIComponent(id) + '/deny', { reason: reason });
        setOutcome(card, 'denied', 'denied');
      }
      if (wasPending) { countDown(); }
    } catch (e) {
      card.dataset.state = before;
      card.querySelectorAll('button').forEach(function (b) { b.disabled = false; });
      out.textContent = 'error: ' + e.message;
    }
  }

  // A task's or a project's execution mode (what each does is said beside
  // the switch before the click).
  async function setMode(button) {
    button.disabled = true;
    const url = button.dataset.verb === 'task-mode'
      ? '/api/tasks/' + encodeURIComponent(button.dataset.taskId) + '/mode'
      : '/api/projects/' + encodeURIComponent(button.dataset.project) + '/mode';
    try {
      await call('PUT', url, { mode: button.dataset.mode });
      window.location.reload();
    } catch (e) {
      button.disabled = false;
      button.textContent = 'error: ' + e.message;
    }
  }

  async function toggleAutoMode(button) {
    button.disabled = true;
    try {
      await call('PUT', '/api/agents/' + encodeURIComponent(button.dataset.agent) + '/auto-mode',
        { on: button.dataset.on === 'true' });
      window.location.reload();
    } catch (e) {
      button.disabled = false;
      button.textContent = 'error: ' + e.message;
    }
  }

  // A PR's automation switch (issue 19): what it does is said beside it;
  // the page reloads to show the evaluation it ran at once.
  async function setPrAutomation(button) {
    button.disabled = true;
    const body = {};
    body[button.dataset.switch] = button.dataset.on === 'true';
    const out = button.closest('.automation').querySelector('.outcome');
    try {
      await call('PUT', '/api/prs/' + encodeURIComponent(button.dataset.pr) + '/automation', body);
      window.location.reload();
    } catch (e) {
      button.disabled = false;
      out.textContent = 'error: ' + e.message;
    }
  }

  // A prompt for an agent (issue 18): sent like approve and deny, with the
  // session's secret and X-Berth-Request; the answer says whether it waits.
  async function sendPrompt(form) {
    const text = form.querySelector('textarea');
    const button = form.querySelector('button[type="submit"]');
    const out = form.querySelector('.outcome');
    if (!text.value.trim()) {
      out.textContent = 'error: the prompt is empty';
      text.focus();
      return;
    }
    button.disabled = true;
    out.textContent = 'sending…';
    try {
      const r = await call('POST', '/api/agents/' + encodeURIComponent(form.dataset.agent) + '/prompts',
        { text: text.value });
      const p = r.prompt || {};
      out.dataset.promptId = p.id || '';
      out.textContent = r.sent + (r.deliverable
        ? ': its session takes it next'
        : ': waiting' + (p.reason ? ' (' + p.reason + ')' : ''));
      text.value = '';
      addNewCards();
    } catch (e) {
      out.textContent = 'error: ' + e.message;
    }
    button.disabled = false;
  }

  // A project's network lists (the network section): add a host, remove
  // one; sent like approve and deny, then the section is shown anew (the
  // rest of the page, a prompt being typed included, stays).
  async function refreshNetwork(focusProject) {
    const doc = await fetchFragment('/api/pages/approvals');
    const fresh = doc.getElementById('network');
    const old = document.getElementById('network');
    if (fresh && old) { old.replaceWith(document.importNode(fresh, true)); }
    const form = Array.from(document.querySelectorAll('form.net-add'))
      .find(function (f) { return f.dataset.project === focusProject; });
    if (form) { form.querySelector('input.host').focus(); }
  }

  async function addHost(form) {
    const input = form.querySelector('input.host');
    const button = form.querySelector('button[type="submit"]');
    const out = form.querySelector('.outcome');
    if (!input.value.trim()) {
      out.textContent = 'error: the host is empty';
      input.focus();
      return;
    }
    button.disabled = true;
    out.textContent = 'adding…';
    try {
      await call('POST', '/api/projects/' + encodeURIComponent(form.dataset.project) + '/network/hosts',
        { list: form.querySelector('select.list').value, host: input.value.trim() });
      await refreshNetwork(form.dataset.project);
    } catch (e) {
      button.disabled = false;
      out.textContent = 'error: ' + e.message;
    }
  }

  async function removeHost(button) {
    button.disabled = true;
    try {
      await call('POST', '/api/projects/' + encodeURIComponent(button.dataset.project) + '/network/hosts/remove',
        { list: button.dataset.list, host: button.dataset.host });
      await refreshNetwork(button.dataset.project);
    } catch (e) {
      button.disabled = false;
      button.textContent = 'error: ' + e.message;
    }
  }

  document.addEventListener('submit', function (ev) {
    const hosts = ev.target.closest('form.net-add');
    if (hosts) {
      ev.preventDefault();
      addHost(hosts);
      return;
    }
    const form = ev.target.closest('form.send-prompt');
    if (!form) { return; }
    ev.preventDefault();
    sendPrompt(form);
  });

  document.addEventListener('click', function (ev) {
    const more = ev.target.closest('button[data-show]');
    if (more) { showAll(more); return; }
    const b = ev.target.closest('button[data-verb]');
    if (!b) { return; }
    if (b.dataset.verb === 'auto-mode') {
      toggleAutoMode(b);
    } else if (b.dataset.verb === 'net-remove') {
      removeHost(b);
    } else if (b.dataset.verb === 'task-mode' || b.dataset.verb === 'project-mode') {
      setMode(b);
    } else if (b.dataset.verb === 'pr-auto') {
      setPrAutomation(b);
    } else if (b.dataset.verb === 'deny') {
      graceThenDeny(b);
    } else if (b.dataset.verb === 'approve') {
      confirmThenApprove(b);
    } else {
      decide(b);
    }
  });

  // --- keyboard -------------------------------------------------------------

  // j/k move between the pending cards, a approves the current one (a
  // second a confirms), d denies it (with the grace's Undo).
  function pendingCards() {
    return Array.from(document.querySelectorAll('#pending-list article.action[data-state="pending"]'));
  }

  function moveTo(card) {
    document.querySelectorAll('article.action.current').forEach(function (c) { c.classList.remove('current'); });
    card.classList.add('current');
    card.focus();
    card.scrollIntoView({ block: 'nearest' });
  }

  document.addEventListener('keydown', function (ev) {
    if (ev.ctrlKey || ev.metaKey || ev.altKey || !document.getElementById('pending-list')) { return; }
    const t = ev.target;
    if (t && (t.tagName === 'INPUT' || t.tagName === 'TEXTAREA' || t.isContentEditable)) { return; }
    const cards = pendingCards();
    const current = document.querySelector('article.action.current');
    const at = cards.indexOf(current);
    if (ev.key === 'j' || ev.key === 'k') {
      if (cards.length === 0) { return; }
      const next = ev.key === 'j' ? Math.min(at + 1, cards.length - 1) : Math.max(at - 1, 0);
      moveTo(cards[at < 0 ? 0 : next]);
      ev.preventDefault();
    } else if ((ev.key === 'a' || ev.key === 'd') && current && current.dataset.state === 'pending') {
      const b = current.querySelector(ev.key === 'a' ? 'button.approve' : 'button.deny');
      if (!b || b.disabled) { return; }
      if (ev.key === 'd') { graceThenDeny(b); ev.preventDefault(); return; }
      if (b.dataset.keyConfirm === 'true') {
        delete b.dataset.keyConfirm;
        confirmThenApprove(b);
      } else {
        b.dataset.keyConfirm = 'true';
        b.focus();
        current.querySelector('.outcome').textContent = 'press a again (or Enter) to approve';
      }
      ev.preventDefault();
    }
  });

  // --- live updates ---------------------------------------------------------

  // The event stream, read with fetch (EventSource cannot send the session's
  // secret); it reconnects after the last event seen, as EventSource would.
  function follow(query, cursor, onEvent) {
    if (!window.fetch || !window.TextDecoder) { return; }
    const live = document.getElementById('live');
    let last = cursor;
    async function once() {
      const r = await fetch('/api/events/stream?' + query + 'after=' + encodeURIComponent(last),
        { credentials: 'same-origin', headers: readHeaders() });
      if (!r.ok || !r.body) { return r.status; }
      if (live) { live.hidden = false; }
      const reader = r.body.getReader();
      const dec = new TextDecoder();
      let buf = '';
      for (;;) {
        const chunk = await reader.read();
        if (chunk.done) { return 0; }
        buf += dec.decode(chunk.value, { stream: true }).replace(/\r\n?/g, '\n');
        let end;
        while ((end = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, end);
          buf = buf.slice(end + 2);
          let data = '';
          block.split('\n').forEach(function (line) {
            if (line.startsWith('data:')) { data += line.slice(5).replace(/^ /, ''); }
            if (line.startsWith('id:')) { last = line.slice(3).trim(); }
          });
          if (!data) { continue; }
          let e;
          try { e = JSON.parse(data); } catch (err) { continue; }
          onEvent(e);
        }
      }
    }
    async function loop() {
      for (;;) {
        let status = 0;
        try { status = await once(); } catch (err) { status = 0; }
        if (live) { live.hidden = true; }
        // A refusal (expired session, missing secret) is not retried.
        if (status === 401 || status === 403) { return; }
        await new Promise(function (res) { setTimeout(res, 3000); });
      }
    }
    loop();
  }

  // The content of this page: its path under /api/pages (`/` is the
  // approvals), with its query (the approvals' `after`).
  function fragmentUrl() {
    const path = window.location.pathname === '/' ? '/approvals' : window.location.pathname;
    return '/api/pages' + path + window.location.search;
  }

  // The server's rendering of `url` as a document, or an Error saying why
  // there is none (the API's own message: a missing secret says to log in).
  async function fetchFragment(url) {
    const r = await fetch(url, { credentials: 'same-origin', headers: readHeaders() });
    const type = r.headers.get('Content-Type') || '';
    if (type.startsWith('text/html')) {
      return new DOMParser().parseFromString(await r.text(), 'text/html');
    }
    let data = null;
    try { data = await r.json(); } catch (e) { data = null; }
    throw new Error(data && data.error ? data.error.message : 'HTTP ' + r.status);
  }

  // Fills the shell's main element with the page's content.
  async function load() {
    const main = document.getElementById('content');
    try {
      const doc = await fetchFragment(fragmentUrl());
      const nodes = Array.from(doc.body.childNodes).map(function (n) { return document.importNode(n, true); });
      main.replaceChildren.apply(main, nodes);
      return true;
    } catch (e) {
      const p = document.createElement('p');
      p.className = 'error';
      p.id = 'load-error';
      p.textContent = 'This page could not be loaded: ' + e.message;
      main.replaceChildren(p);
      return false;
    }
  }

  // Approvals: a new pending action appears without a reload; one decided
  // elsewhere (the CLI, another tab) says so.
  // On a task's page, the fragment is the task's: its timeline is replaced
  // as well. Answers may come back out of order: only the newest is used.
  let partsAsked = 0;
  async function addNewCards() {
    let doc;
    const url = document.body.dataset.page === 'task' ? fragmentUrl() : '/api/pages/approvals';
    const mine = ++partsAsked;
    try { doc = await fetchFragment(url); } catch (e) { return; }
    if (mine !== partsAsked) { return; }
    const timeline = document.getElementById('timeline');
    const fresh = doc.getElementById('timeline');
    if (timeline && fresh) { timeline.replaceWith(document.importNode(fresh, true)); }
    // An agent's sessions and queue; its prompt form keeps what is typed.
    doc.querySelectorAll('.agent-state').forEach(function (fresh) {
      const old = document.getElementById(fresh.id);
      if (old) { old.replaceWith(document.importNode(fresh, true)); }
    });
    const list = document.getElementById('pending-list');
    doc.querySelectorAll('#pending-list article.action').forEach(function (card) {
      if (!document.getElementById(card.id)) {
        list.appendChild(document.importNode(card, true));
      }
    });
    const none = document.getElementById('nothing-pending');
    if (none && list.children.length > 0) { none.hidden = true; }
    // The server's count of what waits, not this page's cards: a page
    // holds 25 of them.
    const count = document.getElementById('pending-count');
    const freshCount = doc.getElementById('pending-count');
    if (count && freshCount) { count.textContent = freshCount.textContent; }
  }

  function onApprovalsEvent(e) {
    if (e.type.startsWith('prompt.') || e.type.startsWith('session.')) {
      addNewCards();
      return;
    }
    if (e.type === 'proposed_action.created' && e.payload && e.payload.status === 'pending') {
      addNewCards();
      return;
    }
    if ((e.type === 'action.cancelled' || e.type === 'action.executed' || e.type === 'action.failed') && e.action) {
      const running = document.getElementById('running-' + e.action);
      if (running && running.dataset.state === 'executing') {
        const ended = e.type.slice('action.'.length);
        setOutcome(running, ended, ended + (e.type === 'action.cancelled' ? ' by ' + (e.payload && e.payload.cancelled_by) : ''));
      }
      return;
    }
    if ((e.type === 'proposed_action.approved' || e.type === 'proposed_action.denied') && e.action) {
      const card = document.getElementById('action-' + e.action);
      if (card && card.dataset.state === 'pending') {
        const verb = e.type === 'proposed_action.approved' ? 'approved' : 'denied';
        setOutcome(card, verb, verb + ' by ' + e.actor.kind + ':' + e.actor.id + ' elsewhere');
        countDown();
      }
    }
  }

  // A task: its log grows as the agent moves, and its status follows.
  function appendEvent(e) {
    const tbody = document.getElementById('events');
    if (!tbody || document.querySelector('tr[data-event-id="' + String(e.id) + '"]')) { return; }
    const tr = document.createElement('tr');
    tr.className = 'event';
    tr.id = 'event-' + String(e.id);
    tr.dataset.eventId = String(e.id);
    const cells = [
      String(e.id),
      new Date(e.at).toISOString(),
      e.type,
      e.actor.kind + ':' + e.actor.id,
      e.action ? e.action.slice(0, 8) : '',
      e.payload && typeof e.payload.status === 'string' ? e.payload.status : '',
    ];
    cells.forEach(function (c, i) {
      const td = document.createElement('td');
      if (i === 2) { td.className = 'type'; }
      // A link only to a step on the page (a pipeline shows each step's
      // last run; a new action's step comes with the next refresh).
      if (i === 4 && e.action && document.getElementById('step-' + e.action)) {
        const a = document.createElement('a');
        a.href = '#step-' + encodeURIComponent(e.action);
        a.textContent = c;
        td.appendChild(a);
      } else {
        td.textContent = c;
      }
      tr.appendChild(td);
    });
    tbody.appendChild(tr);
  }

  // Answers may come back out of order: only the newest request's is shown.
  let taskAsked = 0;

  async function refreshTask(id) {
    const mine = ++taskAsked;
    const r = await fetch('/api/tasks/' + encodeURIComponent(id), { credentials: 'same-origin', headers: readHeaders() });
    if (!r.ok) { return; }
    const t = await r.json();
    if (mine !== taskAsked) { return; }
    document.getElementById('task-status').textContent = t.status;
    document.getElementById('task-diagnosis').textContent = t.diagnosis || '';
  }

  // "5 min ago" stays true while the page is open (the exact time is the
  // element's title).
  function relative(at) {
    const s = Math.max(0, Math.floor((Date.now() - at) / 1000));
    if (s < 45) { return 'just now'; }
    if (s < 90) { return '1 min ago'; }
    if (s < 3600) { return Math.round(s / 60) + ' min ago'; }
    if (s < 86400) { return Math.floor(s / 3600) + ' h ago'; }
    const d = Math.floor(s / 86400);
    return d === 1 ? 'yesterday' : d + ' days ago';
  }
  setInterval(function () {
    document.querySelectorAll('time[data-at]').forEach(function (t) {
      t.textContent = relative(Number(t.dataset.at));
    });
  }, 30000);

  document.addEventListener('DOMContentLoaded', async function () {
    const page = document.body.dataset.page;
    if ((page === 'approvals' || page === 'task') && !(await load())) { return; }
    if (page === 'approvals') {
      const s = document.getElementById('pending');
      follow('', s.dataset.cursor, onApprovalsEvent);
    } else if (page === 'task') {
      const s = document.getElementById('task');
      if (!s) { return; }
      const id = s.dataset.taskId;
      follow('task=' + encodeURIComponent(id) + '&', s.dataset.cursor, function (e) {
        appendEvent(e);
        refreshTask(id);
        // Decided elsewhere, a command ended: the cards say so; the
        // timeline and new waiting cards come from the task's fragment.
        if (e.type !== 'proposed_action.created') { onApprovalsEvent(e); }
        if (e.action) { addNewCards(); }
      });
    }
  });
})();
