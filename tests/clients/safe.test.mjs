// "safe" and "finalized" on a fresh dev chain (run by devchain_test.go):
// the blocks --safe-lag/--finalized-lag (32/64) behind the head, floored at
// genesis, from the first second on, as anvil answers them from block 0.
// The Go test starts a fresh node for this file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createPublicClient, defineChain, http } from 'viem';
import { JsonRpcProvider, Network } from 'ethers';
import { chainId, latestNumber, url } from './lib.mjs';

const dev0 = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266';

test('viem: getBlock and getBalance at safe and finalized on a fresh chain', async () => {
  const chain = defineChain({ id: chainId, name: 'preconf dev', nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 }, rpcUrls: { default: { http: [url] } } });
  const client = createPublicClient({ chain, transport: http(url) });
  for (const blockTag of ['safe', 'finalized']) {
    const block = await client.getBlock({ blockTag });
    assert.ok(await latestNumber() < 32, 'the chain is no longer fresh');
    assert.equal(block.number, 0n, `${blockTag} is block ${block.number}`);
    assert.equal(await client.getBalance({ address: dev0, blockTag }), 10000n * 10n ** 18n);
  }
});

test('ethers v6: getBlock("safe"), getBlock("finalized") on a fresh chain', async () => {
  const network = Network.from(chainId);
  const provider = new JsonRpcProvider(url, network, { staticNetwork: network });
  for (const tag of ['safe', 'finalized']) {
    const block = await provider.getBlock(tag);
    assert.ok(block, `${tag}: null`);
    assert.equal(block.number, 0);
  }
  provider.destroy();
});
