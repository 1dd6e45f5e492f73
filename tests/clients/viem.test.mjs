// viem against a running preconf node: send, wait for the (pre-confirmed)
// receipt, read the balance at "pending"; and the websocket transport's
// subscriptions. clients_test.go starts the node and sets the environment.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createPublicClient, createWalletClient, defineChain, http, webSocket } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';

const url = process.env.PRECONF_HTTP_URL;
const wsUrl = process.env.PRECONF_WS_URL;
const account = privateKeyToAccount(process.env.PRECONF_KEY_VIEM);
const chain = defineChain({
  id: Number(process.env.PRECONF_CHAIN_ID),
  name: 'preconf dev',
  nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
  rpcUrls: { default: { http: [url], webSocket: [wsUrl] } },
});
const to = '0x00000000000000000000000000000000000000c1';

function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`${what}: nothing within ${ms} ms`)), ms); });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

test('viem: sendTransaction, waitForTransactionReceipt, getBalance({blockTag: "pending"})', async () => {
  const wallet = createWalletClient({ account, chain, transport: http(url) });
  const client = createPublicClient({ chain, transport: http(url), pollingInterval: 100 });
  const before = await client.getBalance({ address: to, blockTag: 'pending' });
  const hash = await wallet.sendTransaction({ to, value: 4242n });
  const receipt = await client.waitForTransactionReceipt({ hash, timeout: 60_000, pollingInterval: 100 });
  assert.equal(receipt.status, 'success');
  assert.equal(receipt.transactionHash, hash);
  const after = await client.getBalance({ address: to, blockTag: 'pending' });
  assert.equal(after - before, 4242n);
});

test('viem over websocket: newFlashblockTransactions and newHeads subscriptions', async () => {
  const wsClient = createPublicClient({ chain, transport: webSocket(wsUrl) });
  const wallet = createWalletClient({ account, chain, transport: webSocket(wsUrl) });
  const seen = new Set();
  let wanted = null;
  let resolveSeen;
  const gotTx = new Promise((resolve) => { resolveSeen = resolve; });
  const { unsubscribe } = await wsClient.transport.subscribe({
    params: ['newFlashblockTransactions'],
    onData: (data) => {
      seen.add(data.result);
      if (wanted && seen.has(wanted)) resolveSeen();
    },
    onError: (err) => { throw err; },
  });
  let unwatch;
  const gotBlock = new Promise((resolve, reject) => {
    unwatch = wsClient.watchBlocks({ onBlock: resolve, onError: reject });
  });
  wanted = await wallet.sendTransaction({ to, value: 1n });
  if (seen.has(wanted)) resolveSeen();
  await withTimeout(gotTx, 60_000, 'newFlashblockTransactions notification');
  const block = await withTimeout(gotBlock, 60_000, 'newHeads notification');
  assert.ok(block.number > 0n);
  assert.match(block.hash, /^0x[0-9a-f]{64}$/);
  unwatch();
  await unsubscribe();
  await (await wsClient.transport.getRpcClient()).close();
  await (await wallet.transport.getRpcClient()).close();
});
