// SPDX-License-Identifier: UNLICENSED
pragma solidity 0.8.37;

/// @notice The two token functions the Runner calls: ERC-20's balance and EIP-3009's (v, r, s) transfer.
interface IPaymentToken {
    function balanceOf(address account) external view returns (uint256);

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
/// allowances, no roles anywhere), so a call made as `msg.sender == Runner` can take nothing; tokens sent here
/// by mistake are not guarded and should be treated as lost. Only the operator may relay, so a target reentering
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

    /// @notice The runner EOA, the only caller of the relay entry points.
    address public immutable operator;

    /// @notice Revert data kept of a failed call (its head: the error's selector and first words).
    uint256 public constant REASON_BYTES = 256;

    /// @notice Gas the Runner needs after the call returns (return data, balance read, event), on top of the
    /// stipend and the 1/64 a CALL keeps back. A transaction that cannot give the call its whole stipend
    /// reverts with `GasShort` before the call: the stipend is exact, never silently less.
    uint256 public constant SETTLE_GAS = 25_000;

    // The batch relay under way, for `paymentGuard` (EIP-1153 transient storage: gone after the transaction).
    address private transient _batchAccount;
    address private transient _batchToken;
    address private transient _batchPayee;
    uint256 private transient _batchRequiredBalance;
    bool private transient _batchGuardPassed;

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
    error NotInBatchRelay();

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

    /// @notice Runs a delegate's signed batch on `account` with exactly `callGas`. The batch pays first (its
    /// payment leg) and calls `paymentGuard` before its own calls, so those run only once the payee is paid; when
    /// the payment leg failed the guard reverts the calls, and the transaction reverts here with `PaymentShort`
    /// at the cost of the payment phase alone.
    /// The account must be delegated to `delegate` when the relay starts (its 7702 code checked): the code
    /// that runs the payment phase is the delegate's, which the operator simulated, not whatever the account
    /// delegated to since.
    /// @param delegate the delegate the batch was signed for, e.g. Calibur.
    /// @param data the account's signed `execute`, e.g. Calibur's `execute(SignedBatchedCall, bytes)`.
    /// @return callSucceeded whether the batch's calls ran: the guard passed and the calls after it committed.
    /// @return callGasUsed the gas the account's execution spent.
    /// @return reason the head of the account call's own revert data, when it reverted.
    function relayBatch(
        address account,
        address delegate,
        bytes calldata data,
        uint256 callGas,
        address token,
        address payee,
        uint256 amount
    ) external returns (bool callSucceeded, uint256 callGasUsed, bytes memory reason) {
        if (msg.sender != operator) revert NotOperator();
        if (account.codehash != keccak256(abi.encodePacked(hex"ef0100", delegate))) revert NotDelegated(account, delegate);
        uint256 balanceBefore = IPaymentToken(token).balanceOf(payee);
        _batchAccount = account;
        _batchToken = token;
        _batchPayee = payee;
        _batchRequiredBalance = balanceBefore + amount;
        bool accountCallSucceeded;
        (accountCallSucceeded, callGasUsed, reason) = _callWithStipend(account, data, callGas);
        callSucceeded = accountCallSucceeded && _batchGuardPassed;
        _batchAccount = address(0);
        _batchGuardPassed = false;
        uint256 received = _received(token, payee, balanceBefore, amount);
        emit Relayed(account, payee, received, callSucceeded, reason);
    }

    /// @notice The first call of a relayed batch's own calls, made by the paying account: passes only when the
    /// payee's balance already holds the payment, and records that the calls after it may run.
    function paymentGuard() external {
        if (msg.sender != _batchAccount) revert NotInBatchRelay();
        uint256 balance = IPaymentToken(_batchToken).balanceOf(_batchPayee);
        uint256 required = _batchRequiredBalance;
        if (balance < required) revert PaymentShort(balance, required);
        _batchGuardPassed = true;
    }

    // The payee's balance rise since `balanceBefore`, required to be at least `amount`. A fall is no payment.
    function _received(address token, address payee, uint256 balanceBefore, uint256 amount) private view returns (uint256 received) {
        uint256 balanceAfter = IPaymentToken(token).balanceOf(payee);
        received = balanceAfter > balanceBefore ? balanceAfter - balanceBefore : 0;
        if (received < amount) revert PaymentShort(received, amount);
    }

    // Calls `target` with exactly `callGas` (value 0) and keeps at most REASON_BYTES of its revert data.
    function _callWithStipend(address target, bytes calldata data, uint256 callGas)
        private
        returns (bool success, uint256 gasUsed, bytes memory reason)
    {
        bytes memory payload = data;
        // A CALL forwards at most 63/64 of what is left: require enough that the stipend is whole.
        uint256 required = callGas + callGas / 63 + SETTLE_GAS;
        if (gasleft() < required) revert GasShort(gasleft(), required);
        uint256 gasBefore = gasleft();
        assembly ("memory-safe") {
            success := call(callGas, target, 0, add(payload, 0x20), mload(payload), 0, 0)
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
