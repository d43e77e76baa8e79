// SPDX-License-Identifier: UNLICENSED
pragma solidity 0.8.37;

// Test-only targets for the adversarial relay tests (test/adversarial/). Each is placed with
// anvil_setCode and steered with anvil_setStorageAt, so no transaction (and no block) is needed to
// change what a relayed call does: the chain changes between two of the runner's reads, as it does
// on a live network.

/// @notice A call that fails while `closed` (slot 0) is set: a submission held until a flag flips.
contract Gate {
    bool public closed;
    uint256 public passed;

    function pass() external {
        require(!closed, "Gate: closed");
        passed += 1;
    }
}

/// @notice A call whose gas grows with `rounds` (slot 0), which anyone can raise.
contract Grower {
    uint256 public rounds;
    uint256 public last;

    function bump(uint256 more) external {
        rounds += more;
    }

    function work() external {
        uint256 a = last | 1;
        uint256 n = rounds;
        for (uint256 i; i < n; ++i) a = uint256(keccak256(abi.encode(a, i)));
        last = a;
    }
}

/// @notice A call that does `rounds` (slot 2) of hashing until `armed` (slot 0) is set, then burns every
/// unit of gas it is given.
contract Burner {
    bool public armed;
    uint256 public runs;
    uint256 public rounds;
    uint256 public last;

    function run() external {
        runs += 1;
        if (armed) {
            assembly ("memory-safe") {
                for {} 1 {} {}
            }
        }
        uint256 a = last | 1;
        uint256 n = rounds;
        for (uint256 i; i < n; ++i) a = uint256(keccak256(abi.encode(a, i)));
        last = a;
    }
}

/// @notice OP-stack's GasPriceOracle, reduced to `getL1Fee`: `perByte` (slot 0) for each byte of the
/// unsigned transaction, plus 68 bytes for the signature it will carry (as the real oracle allows).
contract GasPriceOracleStandIn {
    uint256 public perByte;

    function getL1Fee(bytes calldata _data) external view returns (uint256) {
        return (_data.length + 68) * perByte;
    }
}

/// @notice Takes any calldata: a relay whose cost is its data.
contract Sink {
    uint256 public received;

    function take(bytes calldata data) external {
        received += data.length;
    }
}
