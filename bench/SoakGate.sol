// SPDX-License-Identifier: UNLICENSED
pragma solidity 0.8.37;

/// @title SoakGate
/// @notice Bench-only (bench/soak.ts): calls that succeed until their key is closed. Each submission's call
/// names a key of its own, a storage slot the bench sets to 1 (anvil_setStorageAt) once the relay has
/// checked the call at submit; from then on the call fails at every re-check.
contract SoakGate {
    /// @notice Succeeds while slot `key` is 0; then reverts with a reason ("held by its own failing call").
    function pass(bytes32 key) external view {
        uint256 closed;
        assembly {
            closed := sload(key)
        }
        require(closed == 0, "SoakGate: closed");
    }

    /// @notice Succeeds while slot `key` is 0; then reverts with `size` bytes (the callee pays for their
    /// memory: ~14.7M gas for 2.75 MB).
    function bomb(bytes32 key, uint256 size) external view {
        uint256 closed;
        assembly {
            closed := sload(key)
        }
        if (closed != 0) {
            assembly {
                revert(0, size)
            }
        }
    }
}
