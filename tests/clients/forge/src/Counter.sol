// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

contract Counter {
    uint256 public number;

    event Set(address indexed by, uint256 number);

    function set(uint256 n) external {
        number = n;
        emit Set(msg.sender, n);
    }

    function inc() external {
        number++;
    }
}
