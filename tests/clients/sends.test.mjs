// Transactions sent back to back, without waiting for receipts, with
// nonces, fees and gas chosen by the library (run by devchain_test.go).
// Libraries read the next nonce with eth_getTransactionCount(addr,
// "pending"); the node counts the sender's transactions admitted to its
// pool, not only the pre-confirmed ones (as go-ethereum's pool nonce does).
// anvil passes all of these (automine and --block-time 2), ethers with its
// request cache off.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createPublicClient, createWalletClient, defineChain, http } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { ContractFactory, JsonRpcProvider, Network, Wallet } from 'ethers';
import { chainId, counter, key, url } from './lib.mjs';

const to = '0x00000000000000000000000000000000000000c9';

// receipts waits for the pre-confirmed receipt of every hash and checks
// that the nonces are consecutive and every transaction succeeded.
async function receipts(hashes, first) {
  for (const [i, hash] of hashes.entries()) {
    let receipt = null;
    for (const deadline = Date.now() + 60_000; !receipt && Date.now() < deadline;) {
      const res = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_getTransactionReceipt', params: [hash] }) });
      receipt = (await res.json()).result;
      if (!receipt) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.ok(receipt, `no receipt for send ${i} (${hash})`);
    assert.equal(receipt.status, '0x1', `send ${i} failed`);
    const res = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_getTransactionByHash', params: [hash] }) });
    assert.equal(Number((await res.json()).result.nonce), first + i, `send ${i}'s nonce`);
  }
}

test('viem: five sendTransaction back to back', async () => {
  const chain = defineChain({ id: chainId, name: 'preconf dev', nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 }, rpcUrls: { default: { http: [url] } } });
  const account = privateKeyToAccount(key('VIEM'));
  const wallet = createWalletClient({ account, chain, transport: http(url) });
  const client = createPublicClient({ chain, transport: http(url) });
  const first = await client.getTransactionCount({ address: account.address, blockTag: 'pending' });
  const hashes = [];
  for (let i = 0; i < 5; i++) hashes.push(await wallet.sendTransaction({ to, value: BigInt(i + 1) }));
  await receipts(hashes, first);
});

// cacheTimeout -1: see deploy.test.mjs.
const ethersWallet = (name) => {
  const network = Network.from(chainId);
  const provider = new JsonRpcProvider(url, network, { staticNetwork: network, cacheTimeout: -1 });
  return [new Wallet(key(name), provider), provider];
};

test('ethers v6: five sendTransaction back to back', async () => {
  const [wallet, provider] = ethersWallet('ETHERS');
  const first = await provider.getTransactionCount(wallet.address, 'pending');
  const hashes = [];
  for (let i = 0; i < 5; i++) hashes.push((await wallet.sendTransaction({ to, value: BigInt(i + 1) })).hash);
  await receipts(hashes, first);
  provider.destroy();
});

test('ethers v6: five ContractFactory.deploy back to back', async () => {
  const [wallet, provider] = ethersWallet('ETHERS_DEPLOY');
  const first = await provider.getTransactionCount(wallet.address, 'pending');
  const hashes = [];
  for (let i = 0; i < 5; i++) {
    const c = await new ContractFactory(counter.abi, counter.bytecode, wallet).deploy();
    hashes.push(c.deploymentTransaction().hash);
  }
  await receipts(hashes, first);
  provider.destroy();
});
