// preconf node page. Everything shown comes from this node: JSON-RPC on "/",
// the wallet endpoints under /wallet/, and the /flashblocks websocket feed
// when the node has one. Untrusted text (chain names, URLs from wallet
// requests) is only ever set with textContent, never as HTML.
'use strict';

(function () {
  const $ = (id) => document.getElementById(id);
  let rpcId = 0;

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = v;
      else e.setAttribute(k, v);
    }
    for (const c of children) {
      if (c == null) continue;
      e.append(typeof c === 'string' ? document.createTextNode(c) : c);
    }
    return e;
  }

  function hexToDec(h) {
    try { return BigInt(h).toString(10); } catch (_) { return null; }
  }

  // ---- status over JSON-RPC ----
  async function rpcBatch(calls) {
    const body = calls.map(([method, params]) => ({ jsonrpc: '2.0', id: ++rpcId, method, params }));
    const resp = await fetch('/', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    const out = await resp.json();
    const byId = new Map((Array.isArray(out) ? out : [out]).map((r) => [r.id, r]));
    return body.map((b) => byId.get(b.id) || { error: { message: 'no answer' } });
  }

  function showNumber(id, hex) {
    const d = hex == null ? null : hexToDec(hex);
    $(id).textContent = d == null ? '—' : d;
    if (d != null) $(id).title = hex;
  }

  async function refreshStatus() {
    try {
      const [cid, num, pend] = await rpcBatch([
        ['eth_chainId', []],
        ['eth_blockNumber', []],
        ['eth_getBlockByNumber', ['pending', false]],
      ]);
      if (cid.result) {
        $('chain-id').textContent = hexToDec(cid.result) + ' (' + cid.result + ')';
      }
      showNumber('latest-block', num.result);
      showNumber('pending-block', pend.result && pend.result.number);
      $('conn').textContent = 'node online';
      $('conn').className = 'pill ok';
    } catch (e) {
      $('conn').textContent = 'node unreachable';
      $('conn').className = 'pill bad';
    }
  }

  // ---- flashblocks feed (optional) ----
  let feedDelay = 1000;
  let feedSeen = false;
  function showFlashblock(msg) {
    if (!msg || typeof msg.index !== 'number') return;
    const block = msg.metadata && msg.metadata.block_number;
    $('flashblock-index').textContent = String(msg.index) + (block != null ? ' of block ' + block : '');
    feedSeen = true;
    $('feed-status').textContent = 'live';
  }
  async function decodeFrame(data) {
    if (typeof data === 'string') return JSON.parse(data);
    const buf = new Uint8Array(await data.arrayBuffer());
    if (buf.length && buf[0] === 0x7b) return JSON.parse(new TextDecoder().decode(buf));
    // Brotli frames: decode when this browser can, skip otherwise.
    try {
      const ds = new DecompressionStream('brotli');
      const text = await new Response(new Blob([buf]).stream().pipeThrough(ds)).text();
      return JSON.parse(text);
    } catch (_) { return null; }
  }
  function connectFeed() {
    let ws;
    try {
      ws = new WebSocket((location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/flashblocks');
    } catch (_) {
      $('feed-status').textContent = 'not available';
      return;
    }
    ws.onopen = () => { feedDelay = 1000; $('feed-status').textContent = 'connected, waiting for a flashblock'; };
    ws.onmessage = async (ev) => {
      try { showFlashblock(await decodeFrame(ev.data)); } catch (_) { /* ignore a bad frame */ }
    };
    ws.onclose = () => {
      $('feed-status').textContent = feedSeen ? 'reconnecting…' : 'not available on this node';
      setTimeout(connectFeed, feedDelay);
      feedDelay = Math.min(feedDelay * 2, 10000);
    };
  }

  // ---- add network ----
  let chainData = null;
  async function loadChainData() {
    const resp = await fetch('/chain.json', { cache: 'no-store' });
    chainData = await resp.json();
    $('chain-data').textContent = JSON.stringify(chainData, null, 2);
    return chainData;
  }
  async function addNetwork() {
    const out = $('add-result');
    out.className = 'note';
    if (!window.ethereum || typeof window.ethereum.request !== 'function') {
      out.textContent = 'No wallet found in this browser (window.ethereum is missing).';
      out.className = 'error';
      return;
    }
    try {
      const data = chainData || await loadChainData();
      out.textContent = 'Asking your wallet…';
      const res = await window.ethereum.request({ method: 'wallet_addEthereumChain', params: [data] });
      out.textContent = res === null || res === undefined ? 'Added: your wallet now knows ' + data.chainName + '.' : 'Wallet answered: ' + JSON.stringify(res);
      out.className = 'ok-text';
    } catch (e) {
      out.textContent = 'Your wallet refused: ' + ((e && (e.code != null ? e.code + ' ' : '') + (e.message || e)) || 'unknown error');
      out.className = 'error';
    }
  }

  // ---- wallet state and approvals ----
  function urlList(urls) {
    const ul = el('ul', { class: 'urls' });
    for (const u of urls || []) ul.append(el('li', { text: u }));
    if (!urls || urls.length === 0) ul.append(el('li', { class: 'muted', text: 'none' }));
    return ul;
  }
  function currency(c) {
    return c ? c.symbol + ' (' + c.name + ', ' + c.decimals + ' decimals)' : '';
  }

  async function decide(id, action, btns) {
    btns.forEach((b) => { b.disabled = true; });
    const err = $('approvals-error');
    err.hidden = true;
    try {
      const resp = await fetch('/wallet/approvals/' + encodeURIComponent(id) + '/' + action, {
        method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}',
      });
      const out = await resp.json().catch(() => ({}));
      if (!resp.ok) throw new Error(out.error || resp.statusText);
    } catch (e) {
      err.textContent = 'Could not ' + action + ' ' + id + ': ' + e.message;
      err.hidden = false;
      btns.forEach((b) => { b.disabled = false; });
    }
    pollState(false);
  }

  function renderApprovals(st) {
    const list = $('approvals');
    const ids = new Set(st.pending.map((a) => a.id));
    for (const li of Array.from(list.children)) if (!ids.has(li.dataset.id)) li.remove();
    const now = Date.parse(st.now) || Date.now();
    for (const a of st.pending) {
      const exp = Math.max(0, Math.round((Date.parse(a.expires) - now) / 1000));
      let li = list.querySelector('li[data-id="' + CSS.escape(a.id) + '"]');
      if (li) {
        li.querySelector('.expires').textContent = 'answers "rejected" in ' + exp + ' s';
        continue;
      }
      const approve = el('button', { type: 'button', class: 'approve primary', 'data-id': a.id, text: 'Approve' });
      const reject = el('button', { type: 'button', class: 'reject danger', 'data-id': a.id, text: 'Reject' });
      approve.onclick = () => decide(a.id, 'approve', [approve, reject]);
      reject.onclick = () => decide(a.id, 'reject', [approve, reject]);
      const c = a.chain;
      const what = a.previous ? 'Change network' : 'Add network';
      const dl = el('dl', { class: 'kv' },
        el('dt', { text: 'Chain ID' }), el('dd', { text: (hexToDec(c.chainId) || '?') + ' (' + c.chainId + ')' }),
        el('dt', { text: 'Name' }), el('dd', { text: c.chainName }),
        el('dt', { text: 'Currency' }), el('dd', { text: currency(c.nativeCurrency) }),
        el('dt', { text: 'RPC URLs' }), el('dd', {}, urlList(c.rpcUrls)),
        el('dt', { text: 'Explorers' }), el('dd', {}, urlList(c.blockExplorerUrls)));
      const prev = a.previous ? el('p', { class: 'warn' },
        'This replaces the entry you have for chain ' + a.previous.chainId + ' ("' + a.previous.chainName + '", RPC ' +
        (a.previous.rpcUrls || []).join(', ') + '). A wrong RPC URL can lie about balances or censor transactions.') : null;
      li = el('li', { class: 'approval', 'data-id': a.id },
        el('div', { class: 'approval-head' },
          el('strong', { text: what + ' "' + c.chainName + '"' }),
          el('span', { class: 'muted mono', text: ' request ' + a.id }),
          el('span', { class: 'expires muted', text: 'answers "rejected" in ' + exp + ' s' })),
        dl, prev, el('div', { class: 'actions' }, approve, reject));
      list.append(li);
    }
    $('approvals-count').textContent = String(st.pending.length);
    $('approvals-empty').hidden = st.pending.length > 0;
  }

  function renderRegistry(st) {
    const tbody = $('registry').querySelector('tbody');
    tbody.replaceChildren();
    for (const c of st.chains) {
      const sel = c.chainId === st.selected;
      const own = st.self && c.chainId === st.self.chainId;
      const tags = el('td', {});
      if (sel) tags.append(el('span', { class: 'pill ok', text: 'selected' }));
      if (own) tags.append(el('span', { class: 'pill', text: 'this node' }));
      tbody.append(el('tr', { 'data-chain-id': c.chainId },
        el('td', { class: 'mono', text: (hexToDec(c.chainId) || '?') + ' (' + c.chainId + ')' }),
        el('td', { text: c.chainName }),
        el('td', { text: currency(c.nativeCurrency) }),
        el('td', {}, urlList(c.rpcUrls)),
        el('td', {}, urlList(c.blockExplorerUrls)),
        tags));
    }
  }

  let polling = false;
  let version = null; // the state version last shown
  async function pollState(wait) {
    try {
      const q = wait && version !== null ? '?since=' + version : '';
      const resp = await fetch('/wallet/state' + q, { cache: 'no-store' });
      const st = await resp.json();
      if (!resp.ok) throw new Error(st.error || resp.statusText);
      version = st.version;
      $('wallet-mode').textContent = st.mode;
      $('approvals-error').hidden = true;
      renderApprovals(st);
      renderRegistry(st);
      return true;
    } catch (e) {
      const err = $('approvals-error');
      err.textContent = 'Wallet state unavailable: ' + e.message;
      err.hidden = false;
      return false;
    }
  }
  async function stateLoop() {
    if (polling) return;
    polling = true;
    let first = true;
    for (;;) {
      const ok = await pollState(!first);
      first = false;
      if (!ok) await new Promise((r) => setTimeout(r, 3000));
    }
  }

  document.addEventListener('DOMContentLoaded', () => {
    $('add-network').addEventListener('click', addNetwork);
    loadChainData().catch(() => {});
    refreshStatus();
    setInterval(refreshStatus, 2000);
    // Expiry countdowns tick between long polls.
    setInterval(() => pollState(false), 5000);
    stateLoop();
    connectFeed();
  });
})();
