// A test suite's inner loop through viem, as a Foundry/Hardhat-style suite
// drives a dev node under automine (go run ./bench suite):
//   deploy a counter; WRITES state-changing calls, each awaited to its
//   receipt; READS reads; CYCLES evm_snapshot → transaction → evm_revert.
// Prints one JSON line: each phase's wall time, every write's, read's and
// cycle's latency, the JSON-RPC requests of each phase by method, and the end
// state (counter value, sender nonce, block number), which must be the same
// on every node.
//
// The clients poll every BENCH_POLL_MS (50 ms) with no cache, as Hardhat's
// viem integration (hardhat-viem) configures its clients for a development
// network: with viem's default interval (4 s) a receipt missed at the first
// check costs a whole interval, and the loop measures viem's timer, not the
// node.
//
// Environment: BENCH_URL (the node), BENCH_KEY (a funded private key),
// BENCH_VIEM (the path of viem's package, resolved by the Go side),
// BENCH_WRITES, BENCH_READS, BENCH_CYCLES, BENCH_POLL_MS.
import { pathToFileURL } from 'node:url';

const viem = await import(pathToFileURL(process.env.BENCH_VIEM).href);
const { privateKeyToAccount } = await import(pathToFileURL(process.env.BENCH_VIEM_ACCOUNTS).href);
const { createTestClient, http, publicActions, walletActions, defineChain } = viem;

const url = process.env.BENCH_URL;
const writes = Number(process.env.BENCH_WRITES ?? 200);
const reads = Number(process.env.BENCH_READS ?? 200);
const cycles = Number(process.env.BENCH_CYCLES ?? 20);
const pollingInterval = Number(process.env.BENCH_POLL_MS ?? 50);

// Counter (the client tests' contract, tests/clients/lib.mjs): number(),
// increment() emitting Incremented(by, number).
const abi = [
  { anonymous: false, inputs: [{ indexed: true, name: 'by', type: 'address' }, { indexed: false, name: 'number', type: 'uint256' }], name: 'Incremented', type: 'event' },
  { inputs: [], name: 'increment', outputs: [], stateMutability: 'nonpayable', type: 'function' },
  { inputs: [], name: 'number', outputs: [{ name: '', type: 'uint256' }], stateMutability: 'view', type: 'function' },
];
const bytecode = process.env.BENCH_BYTECODE;

// Every request the clients send, by method, counted into the phase running.
let counts = {};
const count = (body) => {
  for (const r of [].concat(JSON.parse(body))) counts[r.method] = (counts[r.method] ?? 0) + 1;
};
const transport = http(url, { retryCount: 0, onFetchRequest: (req, init) => count(init.body) });
const probe = createTestClient({ mode: 'anvil', transport });
const id = await probe.request({ method: 'eth_chainId' });
const chain = defineChain({ id: Number(id), name: 'dev', nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 }, rpcUrls: { default: { http: [url] } } });
const key = process.env.BENCH_KEY;
const account = privateKeyToAccount(key.startsWith('0x') ? key : `0x${key}`);
// A test client with the public and wallet actions, as suites set it up.
const client = createTestClient({ mode: 'anvil', chain, transport, account, pollingInterval, cacheTime: 0 })
  .extend(publicActions).extend(walletActions);

const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;
const out = { writes_ms: [], reads_ms: [], cycles_ms: [], requests: {}, client_cpu_ms: {}, client_thread_cpu_ms: {} };
// The client's own CPU time (user + system) in each phase, of the whole
// process (its JIT and GC threads too) and of its main thread alone: the
// JavaScript that runs between a node's answers, the part of the loop's time
// no node can remove. process.threadCpuUsage needs Node.js 23.9 or later.
const cpuMs = (u) => (u.user + u.system) / 1e3;
const threadCpu = () => (process.threadCpuUsage ? cpuMs(process.threadCpuUsage()) : NaN);
let cpu = cpuMs(process.cpuUsage());
let tcpu = threadCpu();
const phase = (name) => {
  out.requests[name] = counts; counts = {};
  const c = cpuMs(process.cpuUsage()); out.client_cpu_ms[name] = c - cpu; cpu = c;
  const tc = threadCpu(); out.client_thread_cpu_ms[name] = tc - tcpu; tcpu = tc;
};
counts = {};

let t = process.hrtime.bigint();
const deployHash = await client.deployContract({ abi, bytecode });
const { contractAddress: address } = await client.waitForTransactionReceipt({ hash: deployHash });
out.deploy_ms = ms(t);
phase('deploy');

t = process.hrtime.bigint();
for (let i = 0; i < writes; i++) {
  const t1 = process.hrtime.bigint();
  const hash = await client.writeContract({ address, abi, functionName: 'increment' });
  const r = await client.waitForTransactionReceipt({ hash });
  if (r.status !== 'success') throw new Error(`write ${i}: ${r.status}`);
  out.writes_ms.push(ms(t1));
}
out.write_phase_ms = ms(t);
phase('writes');

t = process.hrtime.bigint();
for (let i = 0; i < reads; i++) {
  const t1 = process.hrtime.bigint();
  const n = await client.readContract({ address, abi, functionName: 'number' });
  if (n !== BigInt(writes)) throw new Error(`read ${i}: ${n}, want ${writes}`);
  out.reads_ms.push(ms(t1));
}
out.read_phase_ms = ms(t);
phase('reads');

t = process.hrtime.bigint();
for (let i = 0; i < cycles; i++) {
  const t1 = process.hrtime.bigint();
  const snap = await client.snapshot();
  const hash = await client.writeContract({ address, abi, functionName: 'increment' });
  const r = await client.waitForTransactionReceipt({ hash });
  if (r.status !== 'success') throw new Error(`cycle ${i}: ${r.status}`);
  if (!(await client.revert({ id: snap }) ?? true)) throw new Error(`cycle ${i}: revert refused`);
  out.cycles_ms.push(ms(t1));
}
out.cycle_phase_ms = ms(t);
phase('cycles');

out.end = {
  number: String(await client.readContract({ address, abi, functionName: 'number' })),
  nonce: await client.getTransactionCount({ address: account.address }),
  block: String(await client.getBlockNumber({ cacheTime: 0 })),
  contract: address,
};
console.log(JSON.stringify(out));
