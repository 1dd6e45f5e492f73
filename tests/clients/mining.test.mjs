// Manual mining (run by devchain_test.go): with --block-time 0 the node
// pools transactions and seals a block only when asked (evm_mine,
// anvil_mine), as anvil --no-mining and geth's dev mode do.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createPublicClient, createTestClient, createWalletClient, defineChain, http } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { JsonRpcProvider, Network, Wallet } from 'ethers';
import { chainId, key, latestNumber, url } from './lib.mjs';

const to = '0x00000000000000000000000000000000000000ca';
const chain = defineChain({ id: chainId, name: 'preconf dev', nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 }, rpcUrls: { default: { http: [url] } } });

test('viem: sendTransaction, then testClient.mine (anvil_mine) seals it', async () => {
  const account = privateKeyToAccount(key('VIEM'));
  const wallet = createWalletClient({ account, chain, transport: http(url) });
  const client = createPublicClient({ chain, transport: http(url) });
  const testClient = createTestClient({ chain, mode: 'anvil', transport: http(url) });
  const before = await latestNumber();
  const hash = await wallet.sendTransaction({ to, value: 1n });
  assert.equal(await latestNumber(), before, 'a block was sealed without being asked for');
  await testClient.mine({ blocks: 1 });
  assert.equal(await latestNumber(), before + 1);
  const receipt = await client.getTransactionReceipt({ hash });
  assert.equal(receipt.status, 'success');
  assert.equal(Number(receipt.blockNumber), before + 1);
  const block = await client.getBlock({ blockNumber: receipt.blockNumber });
  assert.equal(block.hash, receipt.blockHash);
});

test('ethers v6: sendTransaction, then evm_mine seals it', async () => {
  const network = Network.from(chainId);
  const provider = new JsonRpcProvider(url, network, { staticNetwork: network, cacheTimeout: -1 });
  const wallet = new Wallet(key('ETHERS'), provider);
  const before = await latestNumber();
  const tx = await wallet.sendTransaction({ to, value: 1n });
  await provider.send('evm_mine', []);
  const receipt = await tx.wait(1, 30_000);
  assert.equal(receipt.status, 1);
  assert.equal(receipt.blockNumber, before + 1);
  provider.destroy();
});
