// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// @notice ERC-4337 v0.8's user operation, as the EntryPoint hands it to a paymaster.
struct PackedUserOperation {
    address sender;
    uint256 nonce;
    bytes initCode;
    bytes callData;
    bytes32 accountGasLimits;
    uint256 preVerificationGas;
    bytes32 gasFees;
    bytes paymasterAndData;
    bytes signature;
}

/// @notice Bruno's Runner: whose payment batch it is sending now (address(0) outside a payment phase).
interface IRunnerPaying {
    function paying() external view returns (address);
}

/// @title RunnerGate
/// @notice A paymaster that pays nothing and validates an operation only while Bruno's Runner is sending that
/// account's payment (`paying()`). A payment operation that names it runs only in the Runner's own payment phase:
/// another bundler's `handleOps`, or one reached by a call Bruno relays, reverts whole (the EntryPoint's AA33),
/// so the operation's nonce stays unspent and the payment unpaid. Bruno's operations carry no gas fee: there is
/// nothing to pay, and no deposit.
contract RunnerGate {
    address public immutable entryPoint;
    address public immutable runner;

    error NotFromEntryPoint(address caller);
    error NotRunnersPayment(address sender, address paying);

    constructor(address entryPoint_, address runner_) {
        entryPoint = entryPoint_;
        runner = runner_;
    }

    /// @notice Validates `userOp` only when the Runner is sending its sender's payment; asks no postOp.
    function validatePaymasterUserOp(PackedUserOperation calldata userOp, bytes32, uint256)
        external
        view
        returns (bytes memory context, uint256 validationData)
    {
        if (msg.sender != entryPoint) revert NotFromEntryPoint(msg.sender);
        address paying = IRunnerPaying(runner).paying();
        if (paying != userOp.sender) revert NotRunnersPayment(userOp.sender, paying);
        return ("", 0);
    }

    /// @notice Never called: validation returns no context.
    function postOp(uint8, bytes calldata, uint256, uint256) external pure {}
}
