// viem's OP-stack actions against the dev chain (an OP-stack L2 shaped like
// Base): estimateTotalFee / estimateL1Fee / estimateOperatorFee through the
// GasPriceOracle predeploy, receipts with the L1 fee fields, the fee a
// transaction actually costs, and a deposit read back with viem's OP-stack
// formatters. opstack_test.go runs it against the shared node.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createPublicClient, createWalletClient, defineChain, http } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { chainConfig, publicActionsL2 } from 'viem/op-stack';
import { url, chainId, key } from './lib.mjs';

const account = privateKeyToAccount(key('OPSTACK'));
const base = {
  ...chainConfig,
  id: chainId,
  name: 'preconf dev L2',
  nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
  rpcUrls: { default: { http: [url] } },
};
// As viem defines Base: flashblocks make its clients read at "pending".
const preconfChain = defineChain({ ...base, experimental_preconfirmationTime: 200 });
const latestChain = defineChain(base);
const to = '0x00000000000000000000000000000000000000d7';
const data = '0x' + '00ff7e12'.repeat(48); // calldata makes the L1 fee visible

function within(actual, expected, permille, what) {
  const diff = actual > expected ? actual - expected : expected - actual;
  assert.ok(diff * 1000n <= expected * BigInt(permille), `${what}: ${actual} vs ${expected} (more than ${permille}‰ apart)`);
}

test('viem/op-stack: estimateTotalFee at latest and at pending (flashblocks chain)', async () => {
  // L1Block gets its L1 values from each block's L1-attributes deposit: the
  // genesis block has none, so "latest" needs a sealed block (pending has
  // the open block's at once).
  const probe = createPublicClient({ chain: latestChain, transport: http(url) });
  for (let i = 0; (await probe.getBlockNumber()) < 1n; i++) {
    assert.ok(i < 600, 'no block sealed within a minute');
    await new Promise((r) => setTimeout(r, 100));
  }
  for (const chain of [latestChain, preconfChain]) {
    const client = createPublicClient({ chain, transport: http(url) }).extend(publicActionsL2());
    const args = { account, to, value: 1n, data };
    const [total, l1Fee, operatorFee, gas, gasPrice] = await Promise.all([
      client.estimateTotalFee(args),
      client.estimateL1Fee(args),
      client.estimateOperatorFee(args),
      client.estimateGas(args),
      client.getGasPrice(),
    ]);
    assert.ok(l1Fee > 0n, `L1 fee estimate ${l1Fee}: the GasPriceOracle sees no L1 fee inputs`);
    assert.ok(operatorFee >= 0n);
    assert.ok(gas > 21000n);
    within(total, l1Fee + operatorFee + gas * gasPrice, 5, 'total fee vs its parts'); // gas price may move between calls
  }
});

test('viem/op-stack: a sent transaction costs what estimateTotalFee said, its receipt carries l1Fee', async () => {
  const client = createPublicClient({ chain: preconfChain, transport: http(url), pollingInterval: 100 }).extend(publicActionsL2());
  const wallet = createWalletClient({ account, chain: preconfChain, transport: http(url) });
  const estimate = await client.estimateTotalFee({ account, to, value: 7n, data });
  const before = await client.getBalance({ address: account.address, blockTag: 'pending' });
  const hash = await wallet.sendTransaction({ to, value: 7n, data });
  const receipt = await client.waitForTransactionReceipt({ hash, timeout: 60_000, pollingInterval: 100 });
  assert.equal(receipt.status, 'success');
  assert.ok(typeof receipt.l1Fee === 'bigint' && receipt.l1Fee > 0n, `receipt l1Fee ${receipt.l1Fee}`);
  assert.ok(receipt.l1GasUsed > 0n && receipt.l1GasPrice > 0n, 'receipt l1GasUsed, l1GasPrice');
  const after = await client.getBalance({ address: account.address, blockTag: 'pending' });
  const operatorFee = receipt.operatorFeeScalar !== undefined && receipt.operatorFeeScalar !== null
    ? (receipt.gasUsed * BigInt(receipt.operatorFeeScalar)) / 1_000_000n + BigInt(receipt.operatorFeeConstant ?? 0)
    : 0n;
  const paid = before - after - 7n;
  assert.equal(paid, receipt.gasUsed * receipt.effectiveGasPrice + receipt.l1Fee + operatorFee,
    'balance fell by gas × price + value + l1Fee (+ operator fee)');
  // The estimate prices the unsigned transaction (68 bytes of signature
  // stand-in) and the gas at the suggested price: close to the real cost.
  within(estimate, paid, 50, 'estimateTotalFee vs the fee paid');
});

test('viem/op-stack: an injected deposit reads back as a deposit transaction', async () => {
  const client = createPublicClient({ chain: preconfChain, transport: http(url), pollingInterval: 100 });
  const from = '0x00000000000000000000000000000000000de9a1';
  const hash = await client.request({
    method: 'eth_sendTransaction',
    params: [{ from, to, value: '0x5', mint: '0x3e8', gas: '0x5208' }],
  });
  const receipt = await client.waitForTransactionReceipt({ hash, timeout: 60_000, pollingInterval: 100 });
  assert.equal(receipt.status, 'success');
  const tx = await client.getTransaction({ hash });
  assert.equal(tx.type, 'deposit');
  assert.equal(tx.mint, 1000n);
  assert.ok(!tx.isSystemTx);
  assert.match(tx.sourceHash, /^0x[0-9a-f]{64}$/);
  assert.equal(await client.getBalance({ address: from, blockTag: 'pending' }), 995n);
});
