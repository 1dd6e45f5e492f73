// The built-in wallet as a developer meets it first: viem's addChain for the
// node's own chain and for an anvil beside it, both on loopback, against a
// node on loopback with --wallet.approval=auto (TestWalletAddLocalChains).
// The node probes each RPC URL's eth_chainId before it stores the chain.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createWalletClient, defineChain, http } from 'viem';
import { url, chainId } from './lib.mjs';

const anvilUrl = process.env.PRECONF_ANVIL_URL;
const anvilChainId = Number(process.env.PRECONF_ANVIL_CHAIN_ID);
const client = createWalletClient({ transport: http(url) });

// The registry as the node's page and `preconf wallet chains` see it.
async function registry() {
  const res = await fetch(`${url}/wallet/state`);
  assert.equal(res.status, 200);
  return res.json();
}

const hex = (n) => `0x${n.toString(16)}`;

function local(id, name, rpc) {
  return defineChain({ id, name, nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 }, rpcUrls: { default: { http: [rpc] } } });
}

test('viem addChain: the node itself, by another loopback URL', async () => {
  // localhost is not the URL the registry holds for the node (127.0.0.1),
  // so the request is new and the node must probe it.
  const self = url.replace('127.0.0.1', 'localhost');
  assert.equal(await client.addChain({ chain: local(chainId, 'preconf via localhost', self) }), undefined);
  const entry = (await registry()).chains.find((c) => c.chainId === hex(chainId));
  assert.ok(entry, 'own chain missing from the registry');
  assert.equal(entry.chainName, 'preconf via localhost');
  assert.equal(entry.rpcUrls[0], self, 'the added URL comes first');
});

test('viem addChain and switchChain: an anvil on loopback', async () => {
  assert.ok(anvilUrl, 'PRECONF_ANVIL_URL is not set');
  assert.equal(await client.addChain({ chain: local(anvilChainId, 'anvil', anvilUrl) }), undefined);
  await client.switchChain({ id: anvilChainId });
  const st = await registry();
  assert.equal(st.selected, hex(anvilChainId));
  const entry = st.chains.find((c) => c.chainId === hex(anvilChainId));
  assert.deepEqual(entry && entry.rpcUrls, [anvilUrl]);
});

test('raw wallet_addEthereumChain: a loopback URL of another chain is probed and refused', async () => {
  // anvil's URL submitted under a chain id it does not serve: the probe
  // reached it and compared.
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({
      jsonrpc: '2.0', id: 1, method: 'wallet_addEthereumChain',
      params: [{ chainId: '0x2a', chainName: 'not anvil', nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 }, rpcUrls: [anvilUrl] }],
    }),
  });
  const body = await res.json();
  assert.equal(body.error?.code, -32602, JSON.stringify(body));
  assert.equal(body.error.message, `Chain ID returned by RPC URL ${anvilUrl} does not match 0x2a`);
});
