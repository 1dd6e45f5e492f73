// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import {Counter} from "../src/Counter.sol";

interface Vm {
    function deal(address, uint256) external;
    function prank(address) external;
    function warp(uint256) external;
    function roll(uint256) external;
    function snapshotState() external returns (uint256);
    function revertToState(uint256) external returns (bool);
    function envAddress(string calldata) external view returns (address);
    function envUint(string calldata) external view returns (uint256);
}

// Run with `forge test --fork-url <node>`: reads the node's state (a
// Counter the script deployed, a dev account) and changes it only in
// forge's own EVM, with cheatcodes.
contract ForkTest {
    Vm constant vm = Vm(address(uint160(uint256(keccak256("hevm cheat code")))));
    Counter c;

    function setUp() public {
        c = Counter(vm.envAddress("COUNTER"));
    }

    function testReadsTheNode() public view {
        require(block.chainid == vm.envUint("CHAIN_ID"), "chain id");
        require(address(c).code.length > 0, "no code at COUNTER");
        require(c.number() == vm.envUint("WANT_NUMBER"), "number");
        require(vm.envAddress("DEV_ACCOUNT").balance >= 9_000 ether, "dev account balance");
    }

    function testCheatsOnTheFork() public {
        address who = address(0xBEEF);
        vm.deal(who, 5 ether);
        require(who.balance == 5 ether, "deal");
        vm.prank(who);
        c.set(7);
        require(c.number() == 7, "set");
        uint256 snap = vm.snapshotState();
        c.inc();
        require(c.number() == 8, "inc");
        require(vm.revertToState(snap), "revertToState");
        require(c.number() == 7, "reverted");
        uint256 t = block.timestamp;
        vm.warp(t + 1 days);
        require(block.timestamp == t + 1 days, "warp");
        vm.roll(block.number + 100);
    }
}
