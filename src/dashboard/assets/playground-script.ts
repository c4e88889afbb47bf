/**
 * The playground page's one script, served by our own route (`GET /dashboard/assets/playground.js`): the
 * dashboard's CSP forbids inline scripts, and nothing is loaded from outside the machine. Kept as a string
 * in a module so the build carries it with the code (tsc copies no .js from src/). Plain ES2017, no
 * template literals (this is a template literal itself).
 *
 * What it does: keeps the conversation in the page; on Send, POSTs the turn as JSON to the page's
 * `data-turn-url` with the session's CSRF token (`X-CSRF-Token`, from `<meta name="csrf-token">`), reads the
 * SSE answer with fetch's stream reader (EventSource cannot POST), appends each delta as it arrives, and
 * fills the side panel from the `turn`, `decision` and `harness` events and the usage chunk. Text is only
 * ever set with textContent: nothing the model or anyone else wrote becomes markup.
 */
export const PLAYGROUND_JS = `(function () {
  'use strict';
  var form = document.getElementById('playground-form');
  if (!form) return;
  var meta = document.querySelector('meta[name="csrf-token"]');
  var csrf = meta ? meta.getAttribute('content') : '';
  var turnUrl = form.getAttribute('data-turn-url');
  var list = document.getElementById('conversation');
  var errorBox = document.getElementById('playground-error');
  var sendButton = document.getElementById('send');
  var augment = document.getElementById('augment');
  var conversation = [];
  var conversationId = newConversationId();

  function newConversationId() {
    var bytes = new Uint8Array(12);
    window.crypto.getRandomValues(bytes);
    return 'pg_' + Array.prototype.map.call(bytes, function (b) { return ('0' + b.toString(16)).slice(-2); }).join('');
  }

  function setText(id, value) {
    var el = document.getElementById(id);
    if (el) el.textContent = value === null || value === undefined || value === '' ? '\\u2014' : String(value);
  }

  function bubble(role, text) {
    var item = document.createElement('li');
    item.className = 'message ' + role;
    var who = document.createElement('span');
    who.className = 'role';
    who.textContent = role;
    var content = document.createElement('div');
    content.className = 'content';
    content.textContent = text;
    item.appendChild(who);
    item.appendChild(content);
    list.appendChild(item);
    return { item: item, content: content };
  }

  function showError(text) {
    errorBox.textContent = text;
    errorBox.hidden = false;
  }

  function harnessSwitches() {
    var features = {};
    Array.prototype.forEach.call(form.querySelectorAll('input[data-feature]'), function (box) {
      features[box.getAttribute('data-feature')] = box.checked;
    });
    return { augment: augment.checked, features: features };
  }

  // X-Service-Augment switches every feature with it; each box stays its own header (it wins either way).
  augment.addEventListener('change', function () {
    Array.prototype.forEach.call(form.querySelectorAll('input[data-feature]'), function (box) {
      var f = box.getAttribute('data-feature');
      if (f !== 'toolTopK' && f !== 'mediaUrlResolution') box.checked = augment.checked;
    });
  });

  document.getElementById('new-conversation').addEventListener('click', function () {
    conversation = [];
    conversationId = newConversationId();
    while (list.firstChild) list.removeChild(list.firstChild);
    errorBox.hidden = true;
  });

  function resetFacts() {
    ['turn-id', 'decision-endpoint', 'decision-model', 'decision-score', 'decision-rule', 'decision-reason',
     'usage-prompt', 'usage-completion', 'usage-total', 'harness-acted', 'harness-enabled'].forEach(function (id) { setText(id, null); });
  }

  function onEvent(name, data, answer) {
    if (data === '[DONE]') { answer.done = true; return; }
    var value;
    try { value = JSON.parse(data); } catch (e) { return; }
    if (name === 'turn') {
      setText('turn-id', value.request_id);
      setText('decision-endpoint', value.endpoint);
      setText('decision-model', value.model);
      if (value.target === 'endpoint') setText('decision-reason', 'direct endpoint (no routing)');
    } else if (name === 'decision') {
      setText('decision-endpoint', value.endpoint);
      setText('decision-score', value.score === null ? 'not scored' : Number(value.score).toFixed(4));
      setText('decision-rule', value.rule_id === null ? 'none' : value.rule_id);
      setText('decision-reason', value.reason + (value.was_fallback ? ' (fallback)' : '') + (value.was_sticky ? ' (sticky)' : ''));
    } else if (name === 'harness') {
      setText('harness-acted', value.acted.length ? value.acted.join(', ') : 'none');
      setText('harness-enabled', value.enabled.length ? value.enabled.join(', ') : 'none');
    } else if (name === 'error' || value.error) {
      var err = value.error || {};
      answer.failed = true;
      showError((err.code ? err.code + ': ' : '') + (err.message || 'the turn failed'));
    } else {
      var choice = value.choices && value.choices[0];
      if (choice && choice.delta && typeof choice.delta.content === 'string') answer.text += choice.delta.content;
      if (choice && choice.message && typeof choice.message.content === 'string') answer.text += choice.message.content;
      answer.view.content.textContent = answer.text;
      if (value.usage) {
        setText('usage-prompt', value.usage.prompt_tokens);
        setText('usage-completion', value.usage.completion_tokens);
        setText('usage-total', value.usage.total_tokens);
      }
    }
  }

  function readBlocks(buffer, answer) {
    var parts = buffer.split(/\\r?\\n\\r?\\n/);
    var rest = parts.pop();
    parts.forEach(function (block) {
      var name = null;
      var data = [];
      block.split(/\\r?\\n/).forEach(function (line) {
        if (line.indexOf('event:') === 0) name = line.slice(6).trim();
        else if (line.indexOf('data:') === 0) data.push(line.slice(5).replace(/^ /, ''));
      });
      if (data.length) onEvent(name, data.join('\\n'), answer);
    });
    return rest;
  }

  async function send() {
    var textarea = document.getElementById('message');
    var text = textarea.value;
    if (!text.trim()) return;
    errorBox.hidden = true;
    resetFacts();
    var target = document.getElementById('target').value;
    var maxTokens = document.getElementById('max-tokens').value;
    var turn = {
      target: target === 'router' ? { kind: 'router' } : { kind: 'endpoint', endpoint: target.slice('endpoint:'.length) },
      workspace: document.getElementById('workspace').value || null,
      messages: conversation.concat([{ role: 'user', content: text }]),
      conversation_id: conversationId,
      harness: harnessSwitches()
    };
    if (maxTokens) turn.max_tokens = Number(maxTokens);
    var mine = bubble('user', text);
    textarea.value = '';
    sendButton.disabled = true;
    var answer = { text: '', done: false, failed: false, view: null };
    try {
      var res = await fetch(turnUrl, {
        method: 'POST',
        credentials: 'same-origin',
        headers: { 'content-type': 'application/json', 'x-csrf-token': csrf, accept: 'text/event-stream' },
        body: JSON.stringify(turn)
      });
      var type = res.headers.get('content-type') || '';
      if (!res.ok || type.indexOf('text/event-stream') !== 0) {
        var body = await res.json().catch(function () { return {}; });
        var e = body.error || {};
        mine.item.classList.add('failed');
        textarea.value = text;
        showError(res.status + ' ' + (e.code ? e.code + ': ' : '') + (e.message || 'the turn was refused'));
        return;
      }
      answer.view = bubble('assistant', '');
      answer.view.item.classList.add('streaming');
      var reader = res.body.getReader();
      var decoder = new TextDecoder();
      var buffer = '';
      for (;;) {
        var step = await reader.read();
        if (step.done) break;
        buffer = readBlocks(buffer + decoder.decode(step.value, { stream: true }), answer);
      }
      readBlocks(buffer + '\\n\\n', answer);
      answer.view.item.classList.remove('streaming');
      if (answer.failed) {
        answer.view.item.classList.add('failed');
      } else {
        conversation.push({ role: 'user', content: text });
        conversation.push({ role: 'assistant', content: answer.text });
        answer.view.item.classList.add('done');
      }
    } catch (err) {
      showError('The turn could not be sent: ' + err);
    } finally {
      sendButton.disabled = false;
    }
  }

  form.addEventListener('submit', function (ev) {
    ev.preventDefault();
    send();
  });
})();
`;

export const PLAYGROUND_CSS = `
.playground { display: grid; grid-template-columns: minmax(0, 1fr) 300px; gap: 16px; align-items: start; }
.playground .card { margin: 0; }
ol.conversation { list-style: none; margin: 0 0 12px; padding: 0; display: flex; flex-direction: column; gap: 8px; min-height: 120px; }
ol.conversation li.message { border: 1px solid var(--line); border-radius: 8px; padding: 8px 12px; max-width: 90%; }
ol.conversation li.user { align-self: flex-end; background: #eef4ff; }
ol.conversation li.assistant { align-self: flex-start; background: #fff; }
ol.conversation li.streaming { border-style: dashed; }
ol.conversation li.failed { border-color: var(--danger); }
ol.conversation .role { display: block; font-size: 11px; color: var(--muted); text-transform: uppercase; letter-spacing: 0.04em; }
ol.conversation .content { white-space: pre-wrap; word-break: break-word; }
aside.turn-facts dl { display: grid; grid-template-columns: auto 1fr; gap: 4px 10px; margin: 0 0 14px; }
aside.turn-facts dt { color: var(--muted); font-size: 12px; }
aside.turn-facts dd { margin: 0; word-break: break-all; }
fieldset.harness .grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(230px, 1fr)); gap: 0 12px; }
@media (max-width: 900px) { .playground { grid-template-columns: 1fr; } }
`;
