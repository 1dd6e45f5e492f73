// ethers v6 against a running preconf node: send, wait for the receipt,
// read the balance at "pending"; and WebSocketProvider's subscriptions.
// clients_test.go starts the node and sets the environment.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { JsonRpcProvider, Network, WebSocketProvider, Wallet } from 'ethers';

const url = process.env.PRECONF_HTTP_URL;
const wsUrl = process.env.PRECONF_WS_URL;
const network = Network.from(Number(process.env.PRECONF_CHAIN_ID));
const to = '0x00000000000000000000000000000000000000c2';

function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`${what}: nothing within ${ms} ms`)), ms); });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

test('ethers v6: sendTransaction, wait, getBalance(addr, "pending")', async () => {
  // cacheTimeout -1: ethers shares identical requests made within 250 ms,
  // so the second getBalance at "pending" would return the first one's
  // answer when the pre-confirmation comes sooner (ethers issue #4549).
  const provider = new JsonRpcProvider(url, network, { staticNetwork: network, pollingInterval: 100, cacheTimeout: -1 });
  const wallet = new Wallet(process.env.PRECONF_KEY_ETHERS, provider);
  const before = await provider.getBalance(to, 'pending');
  const tx = await wallet.sendTransaction({ to, value: 777n });
  const receipt = await tx.wait(1, 60_000);
  assert.equal(receipt.status, 1);
  assert.equal(receipt.hash, tx.hash);
  const after = await provider.getBalance(to, 'pending');
  assert.equal(after - before, 777n);
  provider.destroy();
});

test('ethers v6 WebSocketProvider: pending transactions and blocks', async () => {
  const ws = new WebSocketProvider(wsUrl, network, { staticNetwork: network, cacheTimeout: -1 });
  const wallet = new Wallet(process.env.PRECONF_KEY_ETHERS, ws);
  const seen = new Set();
  let wanted = null;
  let resolvePending;
  const gotPending = new Promise((resolve) => { resolvePending = resolve; });
  await ws.on('pending', (hash) => {
    seen.add(hash);
    if (wanted && seen.has(wanted)) resolvePending();
  });
  const gotBlock = new Promise((resolve) => { ws.once('block', resolve); });
  const tx = await wallet.sendTransaction({ to, value: 1n });
  wanted = tx.hash;
  if (seen.has(wanted)) resolvePending();
  await withTimeout(gotPending, 60_000, 'pending transaction notification');
  const number = await withTimeout(gotBlock, 60_000, 'block notification');
  assert.ok(number > 0);
  // ethers sends eth_unsubscribe in the background when listeners go; let
  // those answers arrive before the socket closes, or ethers rejects them.
  await ws.removeAllListeners();
  await ws.send('eth_chainId', []);
  await new Promise((resolve) => setTimeout(resolve, 500));
  await ws.destroy();
});
