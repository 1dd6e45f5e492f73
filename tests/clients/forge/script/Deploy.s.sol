// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import {Counter} from "../src/Counter.sol";

// The cheatcodes used here, declared without forge-std (not on npm).
interface Vm {
    function startBroadcast() external;
    function stopBroadcast() external;
    function envUint(string calldata) external view returns (uint256);
}

// Deploys a Counter and uses it: three transactions, which forge sends
// at once and the node pre-confirms in nonce order.
contract Deploy {
    Vm constant vm = Vm(address(uint160(uint256(keccak256("hevm cheat code")))));

    function run() external returns (Counter c) {
        vm.startBroadcast();
        c = new Counter();
        c.set(vm.envUint("SET_TO"));
        c.inc();
        vm.stopBroadcast();
    }
}
