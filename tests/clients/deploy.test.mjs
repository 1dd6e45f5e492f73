// Deploy a contract, then use it in the next transaction before the block
// holding the deployment is sealed: what a script does right after a
// deployment or a liquidity deposit. Each library chooses the nonce, the
// fees and the gas limit itself (eth_estimateGas without a block, which the
// node runs at "pending"); the script waits only for pre-confirmed
// receipts. clients_test.go runs this against a node that pre-confirms every
// 200 ms but seals only every 10 minutes (or on evm_mine), and each test
// starts a fresh block with evm_mine, so every step below happens before
// the seal, which each test checks at its end.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { createPublicClient, createWalletClient, defineChain, http } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { Contract, ContractFactory, JsonRpcProvider, Network, Wallet } from 'ethers';
import { Web3 } from 'web3';
import { chainId, counter, key, latestNumber, rpc, url } from './lib.mjs';

const require = createRequire(import.meta.url);
const uniswap = (name) => require(`@uniswap/v2-core/build/${name}.json`);

// unsealed fails when a block holding one of the receipts was sealed: the
// test would then not have shown what it claims.
async function unsealed(...receipts) {
  const latest = await latestNumber();
  for (const r of receipts) {
    assert.ok(latest < Number(r.blockNumber), `block ${r.blockNumber} was sealed during the test (latest ${latest})`);
  }
}

test('viem: deployContract, then writeContract on it before the seal', async () => {
  await rpc('evm_mine');
  const chain = defineChain({ id: chainId, name: 'preconf dev', nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 }, rpcUrls: { default: { http: [url] } } });
  const account = privateKeyToAccount(key('VIEM'));
  const wallet = createWalletClient({ account, chain, transport: http(url) });
  const client = createPublicClient({ chain, transport: http(url), pollingInterval: 50 });
  const wait = (hash) => client.waitForTransactionReceipt({ hash, pollingInterval: 50, timeout: 60_000 });

  const deployed = await wait(await wallet.deployContract({ abi: counter.abi, bytecode: counter.bytecode }));
  assert.equal(deployed.status, 'success');
  const address = deployed.contractAddress;
  const receipt = await wait(await wallet.writeContract({ address, abi: counter.abi, functionName: 'increment' }));
  assert.equal(receipt.status, 'success', `increment() failed with gasUsed ${receipt.gasUsed}: was its gas estimated where the contract does not exist?`);
  assert.equal(await client.readContract({ address, abi: counter.abi, functionName: 'number', blockTag: 'pending' }), 1n);
  await unsealed(deployed, receipt);
});

test('ethers v6: Uniswap v2 — deploy tokens and factory, createPair, add liquidity, swap, all before the seal', async () => {
  await rpc('evm_mine');
  const network = Network.from(chainId);
  // cacheTimeout -1: ethers shares identical requests made within 250 ms, so
  // a nonce read that soon after the previous one returns the old count;
  // with any fast node (anvil, hardhat, this one) it must be off (ethers
  // issue #4549).
  const provider = new JsonRpcProvider(url, network, { staticNetwork: network, pollingInterval: 50, cacheTimeout: -1 });
  const wallet = new Wallet(key('ETHERS'), provider);
  const me = wallet.address;
  const receipts = [];
  // A pre-confirmed receipt: tx.wait() would wait for the sealed block.
  const preconfirmed = async (tx) => {
    for (const deadline = Date.now() + 60_000; Date.now() < deadline;) {
      const r = await provider.getTransactionReceipt(tx.hash);
      if (r) {
        assert.equal(r.status, 1, `${tx.hash} failed (gas limit ${tx.gasLimit}, used ${r.gasUsed})`);
        receipts.push(r);
        return r;
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`no receipt for ${tx.hash} within 60 s`);
  };
  const deploy = async (name, ...args) => {
    const { abi, bytecode } = uniswap(name);
    const c = await new ContractFactory(abi, bytecode, wallet).deploy(...args);
    await preconfirmed(c.deploymentTransaction());
    return c;
  };
  const pending = { blockTag: 'pending' };

  const supply = 10n ** 24n;
  const tokenA = await deploy('ERC20', supply);
  const tokenB = await deploy('ERC20', supply);
  const factory = await deploy('UniswapV2Factory', me);
  await preconfirmed(await factory.createPair(tokenA.target, tokenB.target));
  const pairAddress = await factory.getPair(tokenA.target, tokenB.target, pending);
  assert.notEqual(pairAddress, '0x0000000000000000000000000000000000000000');
  const pair = new Contract(pairAddress, uniswap('UniswapV2Pair').abi, wallet);

  // Liquidity: 1000 A and 4000 B.
  await preconfirmed(await tokenA.transfer(pairAddress, 1000n * 10n ** 18n));
  await preconfirmed(await tokenB.transfer(pairAddress, 4000n * 10n ** 18n));
  await preconfirmed(await pair.mint(me));

  // Swap 1 A for B at the pool's price, as the router would compute it.
  const [r0, r1] = await pair.getReserves(pending);
  const aIsToken0 = (await pair.token0(pending)) === tokenA.target;
  const [reserveIn, reserveOut] = aIsToken0 ? [r0, r1] : [r1, r0];
  const amountIn = 10n ** 18n;
  const amountOut = (amountIn * 997n * reserveOut) / (reserveIn * 1000n + amountIn * 997n);
  const before = await tokenB.balanceOf(me, pending);
  await preconfirmed(await tokenA.transfer(pairAddress, amountIn));
  await preconfirmed(await pair.swap(aIsToken0 ? 0n : amountOut, aIsToken0 ? amountOut : 0n, me, '0x'));
  assert.equal(await tokenB.balanceOf(me, pending) - before, amountOut);
  await unsealed(...receipts);
  provider.destroy();
});

// web3.js v4 reads the nonce at web3.defaultBlock ("latest" unless set) and
// its transaction builder estimates gas at "latest" explicitly, so on a
// pre-confirming node a script sets defaultBlock to "pending" and, for a
// call into a contract deployed in the block being built, passes the gas
// from web3.eth.estimateGas (which follows defaultBlock).
test('web3.js v4 (defaultBlock "pending"): deploy, then send a method call before the seal', async () => {
  await rpc('evm_mine');
  const web3 = new Web3(url);
  web3.defaultBlock = 'pending';
  web3.transactionPollingInterval = 50;
  const from = web3.eth.accounts.wallet.add(key('WEB3')).get(0).address;
  const deployed = await new web3.eth.Contract(counter.abi).deploy({ data: counter.bytecode }).send({ from });
  const address = deployed.options.address;
  const increment = deployed.methods.increment();
  const gas = await web3.eth.estimateGas({ from, to: address, data: increment.encodeABI() });
  assert.ok(gas > 40_000n, `increment() estimated at ${gas} gas: as a call into an empty account`);
  const receipt = await increment.send({ from, gas });
  assert.equal(receipt.status, 1n, `increment() failed with gasUsed ${receipt.gasUsed}`);
  assert.equal(await deployed.methods.number().call(), 1n);
  const code = await web3.eth.getCode(address, 'latest');
  assert.equal(code, '0x', 'the contract was sealed during the test');
  await unsealed(receipt);
});
