// web3.js v4 against a running preconf node: sendTransaction (which waits
// for the receipt: the pre-confirmed one) five times in a row, then the
// balance at "pending". web3.js reads nonces at web3.defaultBlock, "latest"
// unless set, which lags pre-confirmations by up to a block (as cast's
// does): a script for a pre-confirming node sets it to "pending".
// clients_test.go starts the node and sets the environment.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Web3 } from 'web3';
import { key, url } from './lib.mjs';

const to = '0x00000000000000000000000000000000000000c5';

test('web3.js v4 (defaultBlock "pending"): five sendTransaction in a row, getBalance at pending', async () => {
  const web3 = new Web3(url);
  web3.defaultBlock = 'pending';
  web3.transactionPollingInterval = 50;
  const from = web3.eth.accounts.wallet.add(key('WEB3')).get(0).address;
  const before = await web3.eth.getBalance(to);
  const first = await web3.eth.getTransactionCount(from);
  for (let i = 1n; i <= 5n; i++) {
    const receipt = await web3.eth.sendTransaction({ from, to, value: i });
    assert.equal(receipt.status, 1n);
    const tx = await web3.eth.getTransaction(receipt.transactionHash);
    assert.equal(tx.nonce, first + i - 1n);
  }
  assert.equal(await web3.eth.getBalance(to) - before, 15n);
  assert.equal(await web3.eth.getTransactionCount(from), first + 5n);
});
