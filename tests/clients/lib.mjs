// Shared by the client test files: the node the Go test started (from the
// environment), a raw JSON-RPC helper, and a small compiled contract.
import assert from 'node:assert/strict';

export const url = process.env.PRECONF_HTTP_URL;
export const wsUrl = process.env.PRECONF_WS_URL;
export const chainId = Number(process.env.PRECONF_CHAIN_ID);

// key returns the private key the Go test handed to this client
// (PRECONF_KEY_<NAME>), so that no two scripts share a sender.
export function key(name) {
  const k = process.env[`PRECONF_KEY_${name}`];
  assert.ok(k, `PRECONF_KEY_${name} is not set`);
  return k;
}

// rpc makes one JSON-RPC call with fetch, outside any client library (for
// test steps such as evm_mine, and to check what the node says directly).
export async function rpc(method, params = []) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const body = await res.json();
  if (body.error) throw new Error(`${method}: ${body.error.code} ${body.error.message}`);
  return body.result;
}

export const latestNumber = async () => Number(await rpc('eth_blockNumber'));

export function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`${what}: nothing within ${ms} ms`)), ms); });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

// Counter, compiled with solc 0.8.30 (optimizer on, 200 runs, evmVersion
// cancun, no metadata hash or CBOR appendix) from:
//
//   // SPDX-License-Identifier: CC0-1.0
//   pragma solidity 0.8.30;
//
//   contract Counter {
//       uint256 public number;
//
//       event Incremented(address indexed by, uint256 number);
//
//       function increment() external {
//           number += 1;
//           emit Incremented(msg.sender, number);
//       }
//   }
//
// increment() costs about 43k gas from a fresh slot: far more than the
// ~21k a call into an account without code is estimated at, so a gas limit
// estimated where the contract does not exist yet runs out.
export const counter = {
  abi: [
    { anonymous: false, inputs: [{ indexed: true, internalType: 'address', name: 'by', type: 'address' }, { indexed: false, internalType: 'uint256', name: 'number', type: 'uint256' }], name: 'Incremented', type: 'event' },
    { inputs: [], name: 'increment', outputs: [], stateMutability: 'nonpayable', type: 'function' },
    { inputs: [], name: 'number', outputs: [{ internalType: 'uint256', name: '', type: 'uint256' }], stateMutability: 'view', type: 'function' },
  ],
  bytecode: '0x6080604052348015600e575f5ffd5b5060c680601a5f395ff3fe6080604052348015600e575f5ffd5b50600436106030575f3560e01c80638381f58a146034578063d09de08a14604d575b5f5ffd5b603b5f5481565b60405190815260200160405180910390f35b60536055565b005b60015f5f8282546064919060a2565b90915550505f5460405190815233907f38ac789ed44572701765277c4d0970f2db1c1a571ed39e84358095ae4eaa54209060200160405180910390a2565b8082018082111560c057634e487b7160e01b5f52601160045260245ffd5b9291505056',
};
