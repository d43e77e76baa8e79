// SPDX-License-Identifier: UNLICENSED
pragma solidity 0.8.37;

/// @notice The token functions the Runner calls: ERC-20's balance and transfer (`sweep`), EIP-3009's (v, r, s) transfer.
interface IPaymentToken {
    function balanceOf(address account) external view returns (uint256);

    function transfer(address to, uint256 amount) external returns (bool);

    function transferWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external;
}

/// @title Runner
/// @notice Bruno's runner sends every relayed call through this contract, in two phases in one transaction.
/// The payment phase comes first and must pay the payee at least the agreed amount, or the whole transaction
/// reverts. The call phase follows with a fixed gas stipend; its failure is recorded (`Relayed.callSucceeded`,
/// `reason`) and the payment stays, as gas does for any Ethereum transaction. So once a submission is paid,
/// whatever the call does, the runner is paid for every unit of gas it spends.
/// @dev Why arbitrary calls are safe here: the contract is nonpayable and holds nothing (no ETH, no tokens, no
/// allowances, no roles anywhere), so a call made as `msg.sender == Runner` can take nothing. Tokens sent here
/// by mistake are not guarded: a relayed call to the token could move them, until the operator sweeps them
/// (`sweep`, `bruno sweep`). Only the operator may relay, so a target reentering
/// a relay fails `NotOperator`. A call's return data is never copied beyond `REASON_BYTES`, so a call cannot make
/// the settlement run out of gas by returning megabytes.
contract Runner {
    /// @notice A signed EIP-3009 `transferWithAuthorization` whose `to` is the payee.
    struct Authorization {
        address from;
        uint256 value;
        uint256 validAfter;
        uint256 validBefore;
        bytes32 nonce;
        uint8 v;
        bytes32 r;
        bytes32 s;
    }

    /// @notice An account's two signed batches, both sent to `target`: the account itself (Calibur), or a contract
    /// that makes the account run them (MetaMask's DelegationManager, an ERC-4337 EntryPoint).
    struct Batches {
        address target;
        /// @dev the signed payment-only batch, e.g. Calibur's signed `execute` of one `token.transfer(payee, amount)`
        bytes payment;
        /// @dev the most the payment phase may spend: a bound on what a payment that fails can cost
        uint256 paymentGas;
        /// @dev the signed batch of the account's own calls, e.g. Calibur's `execute(SignedBatchedCall, bytes)`
        bytes data;
    }

    /// @notice The runner EOA, the only caller of the relay entry points.
    address public immutable operator;

    /// @notice Revert data kept of a failed call (its head: the error's selector and first words).
    uint256 public constant REASON_BYTES = 256;

    /// @notice Gas the Runner needs after the call returns (return data, balance read, event), on top of the
    /// stipend and the 1/64 a CALL keeps back. A transaction that cannot give the call its whole stipend
    /// reverts with `GasShort` before the call: the stipend is exact, never silently less.
    uint256 public constant SETTLE_GAS = 25_000;

    /// @notice A relay paid. `received` is the payee's balance rise from the payment phase; `callSucceeded` says
    /// whether the call phase ran to its end; `reason` is the head of its revert data when it did not.
    event Relayed(address indexed target, address indexed payee, uint256 received, bool callSucceeded, bytes reason);

    error NotOperator();
    /// @notice The signed transfer's payer has code: the token would run it (ERC-1271) inside the payment phase.
    error PayerHasCode(address payer);
    /// @notice The batch's account is not delegated to `delegate` (EIP-7702 code `0xef0100 ‖ delegate`).
    error NotDelegated(address account, address delegate);
    error PaymentShort(uint256 received, uint256 required);
    error GasShort(uint256 available, uint256 required);
    /// @notice The payment-only batch reverted; `reason` is the head of its revert data.
    error PaymentFailed(bytes reason);
    /// @notice The token refused to transfer what the Runner holds (it reverted or answered false).
    error SweepFailed(address token);

    /// @notice Tokens sent to the Runner by mistake, sent on by the operator.
    event Swept(address indexed token, address indexed to, uint256 amount);

    constructor(address operator_) {
        operator = operator_;
    }

    /// @notice Payment phase: the signed EIP-3009 transfer of `token` from `authorization.from` to `payee`,
    /// which must raise the payee's balance by at least `amount`, else the transaction reverts (a refused
    /// authorization reverts with the token's own reason). Call phase: `target.call(data)` with exactly `callGas`.
    /// @dev The payer must have no code: FiatToken checks a payer with code by ERC-1271, which would run the
    /// payer's own code, with all the gas left, inside the payment phase (it could burn it, or answer
    /// differently when simulated).
    /// @param target the contract to call; address(0) makes no call (the transfer alone is the relay).
    /// @return callSucceeded whether the call returned without reverting (true when there is no call).
    /// @return callGasUsed the gas the call phase spent.
    /// @return reason the head of the call's revert data when it failed.
    function relayWithAuthorization(
        address target,
        bytes calldata data,
        uint256 callGas,
        address token,
        address payee,
        uint256 amount,
        Authorization calldata authorization
    ) external returns (bool callSucceeded, uint256 callGasUsed, bytes memory reason) {
        if (msg.sender != operator) revert NotOperator();
        if (authorization.from.code.length != 0) revert PayerHasCode(authorization.from);
        uint256 balanceBefore = IPaymentToken(token).balanceOf(payee);
        IPaymentToken(token).transferWithAuthorization(
            authorization.from,
            payee,
            authorization.value,
            authorization.validAfter,
            authorization.validBefore,
            authorization.nonce,
            authorization.v,
            authorization.r,
            authorization.s
        );
        uint256 received = _received(token, payee, balanceBefore, amount);
        callSucceeded = true;
        if (target != address(0)) (callSucceeded, callGasUsed, reason) = _callWithStipend(target, data, callGas);
        emit Relayed(target, payee, received, callSucceeded, reason);
    }

    /// @notice Payment phase: the account's signed payment-only batch (`batches.payment`), sent to `batches.target` in a
    /// call of the Runner's own with at most `batches.paymentGas`; it must raise the payee's balance by at least `amount`,
    /// else the transaction reverts (`PaymentFailed` with the head of the batch's revert data, or `PaymentShort`). Call
    /// phase: the account's signed batch of its own calls (`batches.data`), sent to `batches.target` with exactly `callGas`.
    /// @dev Two calls, never one: the payment is final before any of the account's own code runs, in a frame those
    /// calls cannot undo. A batch that paid and then ran the calls in the same call would share a frame with them,
    /// and a call reverting with revert data sized to its gas would make that frame run out of gas copying it back,
    /// undoing the payment (Solidity copies all return data). Here the Runner copies at most `REASON_BYTES` of
    /// either call's return data, and nothing after the payment check can revert the transaction.
    /// The account must be delegated to `delegate` when the relay starts (its 7702 code checked): the code that
    /// runs the payment phase is the delegate's, which the operator simulated, not whatever the account delegated
    /// to since — whichever contract `target` is.
    /// @param delegate the delegate both batches were signed for, e.g. Calibur.
    /// @return callSucceeded whether the account's batch of its own calls returned without reverting.
    /// @return callGasUsed the gas the call phase spent.
    /// @return reason the head of the call phase's revert data, when it reverted.
    function relayBatch(
        address account,
        address delegate,
        Batches calldata batches,
        uint256 callGas,
        address token,
        address payee,
        uint256 amount
    ) external returns (bool callSucceeded, uint256 callGasUsed, bytes memory reason) {
        if (msg.sender != operator) revert NotOperator();
        if (account.codehash != keccak256(abi.encodePacked(hex"ef0100", delegate))) revert NotDelegated(account, delegate);
        uint256 received = _payByBatch(batches.target, batches.payment, batches.paymentGas, token, payee, amount);
        (callSucceeded, callGasUsed, reason) = _callWithStipend(batches.target, batches.data, callGas);
        emit Relayed(account, payee, received, callSucceeded, reason);
    }

    /// @notice Sends the Runner's whole balance of `token` to `to`: tokens sent here by mistake, which a relayed
    /// call to that token could otherwise move. Operator only.
    /// @dev A token that answers nothing (no bool) is taken at its word that it transferred, as ERC-20s before the
    /// standard's return value do; one that answers false, or reverts, is `SweepFailed`.
    /// @return amount what was sent (0 when the Runner held none: nothing is called).
    function sweep(address token, address to) external returns (uint256 amount) {
        if (msg.sender != operator) revert NotOperator();
        amount = IPaymentToken(token).balanceOf(address(this));
        if (amount == 0) return 0;
        (bool ok, bytes memory answer) = token.call(abi.encodeCall(IPaymentToken.transfer, (to, amount)));
        if (!ok || (answer.length != 0 && (answer.length != 32 || abi.decode(answer, (uint256)) != 1))) revert SweepFailed(token);
        emit Swept(token, to, amount);
    }

    // Sends the payment-only batch to `target` with at most `paymentGas`; reverts unless it paid `payee` `amount`.
    function _payByBatch(address target, bytes calldata payment, uint256 paymentGas, address token, address payee, uint256 amount)
        private
        returns (uint256 received)
    {
        uint256 balanceBefore = IPaymentToken(token).balanceOf(payee);
        (bool paid,, bytes memory paymentReason) = _call(target, payment, paymentGas);
        if (!paid) revert PaymentFailed(paymentReason);
        received = _received(token, payee, balanceBefore, amount);
    }

    // The payee's balance rise since `balanceBefore`, required to be at least `amount`. A fall is no payment.
    function _received(address token, address payee, uint256 balanceBefore, uint256 amount) private view returns (uint256 received) {
        uint256 balanceAfter = IPaymentToken(token).balanceOf(payee);
        received = balanceAfter > balanceBefore ? balanceAfter - balanceBefore : 0;
        if (received < amount) revert PaymentShort(received, amount);
    }

    // Calls `target` with exactly `callGas` (value 0): a transaction that cannot give the whole stipend reverts.
    function _callWithStipend(address target, bytes calldata data, uint256 callGas)
        private
        returns (bool success, uint256 gasUsed, bytes memory reason)
    {
        // A CALL forwards at most 63/64 of what is left: require enough that the stipend is whole.
        uint256 required = callGas + callGas / 63 + SETTLE_GAS;
        if (gasleft() < required) revert GasShort(gasleft(), required);
        return _call(target, data, callGas);
    }

    // Calls `target` with at most `gasLimit` (value 0) and keeps at most REASON_BYTES of its revert data.
    function _call(address target, bytes calldata data, uint256 gasLimit)
        private
        returns (bool success, uint256 gasUsed, bytes memory reason)
    {
        bytes memory payload = data;
        uint256 gasBefore = gasleft();
        assembly ("memory-safe") {
            success := call(gasLimit, target, 0, add(payload, 0x20), mload(payload), 0, 0)
        }
        gasUsed = gasBefore - gasleft();
        if (!success) {
            uint256 size;
            assembly ("memory-safe") {
                size := returndatasize()
            }
            if (size > REASON_BYTES) size = REASON_BYTES;
            reason = new bytes(size);
            assembly ("memory-safe") {
                returndatacopy(add(reason, 0x20), 0, size)
            }
        }
    }
}
