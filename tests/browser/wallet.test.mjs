// Browser tests of the node's page, in headless Debian chromium driven by
// playwright-core. The Go test web/browser_test.go starts a node with
// --wallet.approval=prompt on loopback and runs `node --test` here with
// PRECONF_URL set; run by hand:
//
//   PRECONF_URL=http://127.0.0.1:38545 node --test tests/browser
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';

const NODE = (process.env.PRECONF_URL || '').replace(/\/+$/, '');
const CHROMIUM = process.env.PRECONF_CHROMIUM || '/usr/bin/chromium';
const TIMEOUT = 60_000; // generous: a loaded 2-core machine

let browser;

before(async () => {
  assert.ok(NODE, 'PRECONF_URL must name the node under test (e.g. http://127.0.0.1:38545)');
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
});

after(async () => {
  if (browser) await browser.close();
});

async function rpc(method, params) {
  const resp = await fetch(NODE + '/', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  assert.equal(resp.status, 200);
  return resp.json();
}

async function chainJSON() {
  const resp = await fetch(NODE + '/chain.json');
  assert.equal(resp.status, 200);
  return resp.json();
}

// newPage opens the node's page and records every request it makes.
async function newPage(initScript) {
  const context = await browser.newContext();
  context.setDefaultTimeout(TIMEOUT);
  if (initScript) await context.addInitScript(initScript);
  const page = await context.newPage();
  const requests = [];
  const errors = [];
  page.on('request', (r) => requests.push(r.url()));
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(NODE + '/');
  return { page, context, requests, errors };
}

test('the page shows the node status and loads nothing from elsewhere', async () => {
  const { page, context, requests, errors } = await newPage();
  try {
    const id = (await rpc('eth_chainId', [])).result;
    await page.locator('#chain-id').filter({ hasText: BigInt(id).toString() }).waitFor();
    await page.locator('#latest-block').filter({ hasText: /^\d+$/ }).waitFor();
    await page.locator('#wallet-mode').filter({ hasText: 'prompt' }).waitFor();
    await page.locator('#registry tbody tr').first().waitFor();
    const host = new URL(NODE).host;
    for (const u of requests) {
      const url = new URL(u);
      assert.ok(url.host === host && ['http:', 'ws:'].includes(url.protocol) || url.protocol === 'data:',
        'the page requested ' + u);
    }
    assert.deepEqual(errors, []);
  } finally {
    await context.close();
  }
});

test('the flashblock index is shown live from the /flashblocks feed', async () => {
  const { page, context } = await newPage();
  try {
    await page.locator('#feed-status').filter({ hasText: 'live' }).waitFor();
    const first = await page.locator('#flashblock-index').textContent();
    assert.match(first, /^\d+ of block \d+$/);
    // It moves on as new flashblocks arrive.
    await page.waitForFunction((prev) => document.getElementById('flashblock-index').textContent !== prev, first,
      { timeout: TIMEOUT });
  } finally {
    await context.close();
  }
});

test('the add-network button calls window.ethereum with this node\'s chain data', async () => {
  const { page, context } = await newPage(() => {
    window.__calls = [];
    window.ethereum = {
      request: async (args) => { window.__calls.push(JSON.parse(JSON.stringify(args))); return null; },
    };
  });
  try {
    const want = await chainJSON();
    await page.locator('#add-network').click();
    await page.locator('#add-result').filter({ hasText: 'Added' }).waitFor();
    const calls = await page.evaluate(() => window.__calls);
    assert.equal(calls.length, 1);
    assert.equal(calls[0].method, 'wallet_addEthereumChain');
    assert.deepEqual(calls[0].params, [want]);
    const p = calls[0].params[0];
    assert.equal(p.chainId, (await rpc('eth_chainId', [])).result);
    assert.deepEqual(p.nativeCurrency, { name: 'Ether', symbol: 'ETH', decimals: 18 });
    assert.equal(p.rpcUrls[0], NODE);
    // The data is what a careful wallet accepts: the node's own wallet
    // already holds exactly this chain, so it answers null without a prompt.
    const again = await rpc('wallet_addEthereumChain', calls[0].params);
    assert.deepEqual(again, { jsonrpc: '2.0', id: 1, result: null });
  } finally {
    await context.close();
  }
});

test('without a wallet in the browser the button says so', async () => {
  const { page, context } = await newPage();
  try {
    await page.locator('#add-network').click();
    await page.locator('#add-result').filter({ hasText: 'No wallet found' }).waitFor();
  } finally {
    await context.close();
  }
});

// decideOnPage starts a wallet_addEthereumChain call that waits for a
// person, clicks the button on the page, and returns the call's answer.
async function decideOnPage(label, button) {
  const own = await chainJSON();
  const params = [{
    chainId: own.chainId,
    chainName: 'Browser test ' + label,
    nativeCurrency: own.nativeCurrency,
    rpcUrls: [NODE + '/?' + label], // a new RPC URL for a known chain: needs approval
  }];
  const { page, context, errors } = await newPage();
  try {
    const answer = rpc('wallet_addEthereumChain', params);
    const item = page.locator('li.approval', { hasText: 'Browser test ' + label });
    await item.waitFor();
    await item.locator('button.' + button).click();
    const result = await answer;
    await item.waitFor({ state: 'detached' });
    assert.deepEqual(errors, []);
    return { result, page, context };
  } catch (e) {
    await context.close();
    throw e;
  }
}

test('rejecting a pending request on the page answers the waiting call with 4001', async () => {
  const { result, context } = await decideOnPage('reject', 'reject');
  try {
    assert.deepEqual(result, { jsonrpc: '2.0', id: 1, error: { code: 4001, message: 'User rejected the request' } });
  } finally {
    await context.close();
  }
});

test('approving a pending request on the page answers the waiting call with null', async () => {
  const { result, page, context } = await decideOnPage('approve', 'approve');
  try {
    assert.deepEqual(result, { jsonrpc: '2.0', id: 1, result: null });
    // The registry on the page now lists the approved RPC URL.
    await page.locator('#registry').getByText(NODE + '/?approve', { exact: true }).waitFor();
    const state = await (await fetch(NODE + '/wallet/state')).json();
    const own = state.chains.find((c) => c.chainId === state.self.chainId);
    assert.equal(own.chainName, 'Browser test approve');
    assert.ok(own.rpcUrls.includes(NODE + '/?approve'));
    assert.ok(!own.rpcUrls.includes(NODE + '/?reject'));
  } finally {
    await context.close();
  }
});
