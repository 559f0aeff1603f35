// berth's page script: approve and deny buttons, the auto-mode switch, and
// live updates from the event stream. Plain JavaScript, no build step. Data
// from the server is only ever set as text (textContent), never as HTML.
'use strict';

(function () {
  // Every state-changing request carries X-Berth-Request: a cross-site form
  // cannot set it, and a cross-origin script would need a CORS preflight the
  // server never grants (the server refuses cookie requests without it).
  const HEADERS = { 'Content-Type': 'application/json', 'X-Berth-Request': '1' };

  async function call(method, url, body) {
    const r = await fetch(url, {
      method: method,
      headers: HEADERS,
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

  async function decide(button) {
    const card = button.closest('article.action');
    const id = button.dataset.actionId;
    const verb = button.dataset.verb;
    card.querySelectorAll('button').forEach(function (b) { b.disabled = true; });
    const out = card.querySelector('.outcome');
    out.textContent = verb === 'approve' ? 'approving…' : 'denying…';
    try {
      if (verb === 'approve') {
        const a = await call('POST', '/api/actions/' + encodeURIComponent(id) + '/approve', {});
        const d = describeApproved(a);
        setOutcome(card, d[0], d[1]);
      } else {
        const input = card.querySelector('input.reason');
        const reason = input && input.value ? input.value : null;
        await call('POST', '/api/actions/' + encodeURIComponent(id) + '/deny', { reason: reason });
        setOutcome(card, 'denied', 'denied');
      }
    } catch (e) {
      card.querySelectorAll('button').forEach(function (b) { b.disabled = false; });
      out.textContent = 'error: ' + e.message;
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

  document.addEventListener('click', function (ev) {
    const b = ev.target.closest('button[data-verb]');
    if (!b) { return; }
    if (b.dataset.verb === 'auto-mode') { toggleAutoMode(b); } else { decide(b); }
  });

  // --- live updates ---------------------------------------------------------

  function follow(query, cursor, onEvent) {
    if (!window.EventSource) { return; }
    const src = new EventSource('/api/events/stream?' + query + 'after=' + encodeURIComponent(cursor));
    const live = document.getElementById('live');
    src.onopen = function () { if (live) { live.hidden = false; } };
    src.onerror = function () { if (live) { live.hidden = true; } };
    src.onmessage = function (m) {
      let e;
      try { e = JSON.parse(m.data); } catch (err) { return; }
      onEvent(e);
    };
  }

  // Approvals: a new pending action appears without a reload; one decided
  // elsewhere (the CLI, another tab) says so.
  async function addNewCards() {
    const r = await fetch('/', { credentials: 'same-origin' });
    if (!r.ok) { return; }
    const doc = new DOMParser().parseFromString(await r.text(), 'text/html');
    const list = document.getElementById('pending-list');
    doc.querySelectorAll('#pending-list article.action').forEach(function (card) {
      if (!document.getElementById(card.id)) {
        list.appendChild(document.importNode(card, true));
      }
    });
    const none = document.getElementById('nothing-pending');
    if (none && list.children.length > 0) { none.hidden = true; }
    const count = document.getElementById('pending-count');
    if (count) { count.textContent = String(list.querySelectorAll('article.action[data-state="pending"]').length); }
  }

  function onApprovalsEvent(e) {
    if (e.type === 'proposed_action.created' && e.payload && e.payload.status === 'pending') {
      addNewCards();
      return;
    }
    if ((e.type === 'proposed_action.approved' || e.type === 'proposed_action.denied') && e.action) {
      const card = document.getElementById('action-' + e.action);
      if (card && card.dataset.state === 'pending') {
        const verb = e.type === 'proposed_action.approved' ? 'approved' : 'denied';
        setOutcome(card, verb, verb + ' by ' + e.actor.kind + ':' + e.actor.id + ' elsewhere');
      }
    }
  }

  // A task: its log grows as the agent moves, and its status follows.
  function appendEvent(e) {
    const tbody = document.getElementById('events');
    if (!tbody || document.querySelector('tr[data-event-id="' + String(e.id) + '"]')) { return; }
    const tr = document.createElement('tr');
    tr.className = 'event';
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
      td.textContent = c;
      tr.appendChild(td);
    });
    tbody.appendChild(tr);
  }

  // Answers may come back out of order: only the newest request's is shown.
  let taskAsked = 0;
  let actionsAsked = 0;

  async function refreshTask(id) {
    const mine = ++taskAsked;
    const r = await fetch('/api/tasks/' + encodeURIComponent(id), { credentials: 'same-origin' });
    if (!r.ok) { return; }
    const t = await r.json();
    if (mine !== taskAsked) { return; }
    document.getElementById('task-status').textContent = t.status;
    document.getElementById('task-diagnosis').textContent = t.diagnosis || '';
  }

  // The task's actions: their statuses follow the log.
  async function refreshActions(id) {
    const mine = ++actionsAsked;
    const r = await fetch('/api/actions?limit=200&task=' + encodeURIComponent(id), { credentials: 'same-origin' });
    const tbody = document.getElementById('task-action-rows');
    if (!r.ok || !tbody) { return; }
    const actions = await r.json();
    if (mine !== actionsAsked) { return; }
    tbody.textContent = '';
    actions.forEach(function (a) {
      const tr = document.createElement('tr');
      tr.className = 'task-action';
      tr.dataset.actionId = a.id;
      const act = a.action || {};
      const what = act.command || act.path || act.branch || act.target || a.params.message || a.params.title || '';
      [a.id.slice(0, 8), act.type || act.kind || '', a.status, what].forEach(function (c, i) {
        const td = document.createElement('td');
        if (i === 2) { td.className = 'status'; }
        td.textContent = c;
        tr.appendChild(td);
      });
      tbody.appendChild(tr);
    });
  }

  document.addEventListener('DOMContentLoaded', function () {
    const page = document.body.dataset.page;
    if (page === 'approvals') {
      const s = document.getElementById('pending');
      follow('', s.dataset.cursor, onApprovalsEvent);
    } else if (page === 'task') {
      const s = document.getElementById('task');
      const id = s.dataset.taskId;
      follow('task=' + encodeURIComponent(id) + '&', s.dataset.cursor, function (e) {
        appendEvent(e);
        refreshTask(id);
        if (e.action) { refreshActions(id); }
      });
    }
  });
})();
