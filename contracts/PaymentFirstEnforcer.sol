// SPDX-License-Identifier: UNLICENSED
pragma solidity 0.8.37;

/// @notice What the enforcer asks of a delegation's redeemer: the account whose payment it is sending now (Bruno's
/// Runner answers it, `paying()`: the account during its relay's payment phase, address(0) at any other time).
interface IPaymentPhase {
    function paying() external view returns (address);
}

/// @title PaymentFirstEnforcer
/// @notice A caveat enforcer for MetaMask's DelegationManager (v1.3.0's `ICaveatEnforcer` hooks): one caveat that lets a
/// delegation be redeemed exactly twice, in one transaction — first the batch whose hash is the terms' `paymentHash`,
/// then the batch whose hash is `callsHash` — and never after `deadline`. Terms: `abi.encode(bytes32 paymentHash,
/// bytes32 callsHash, uint256 deadline)`, each hash the keccak256 of a batch's ERC-7579 execution calldata
/// (`abi.encode(Execution[])`), redeemed in batch mode that reverts on failure.
/// @dev Why hashes: a caveat's terms are copied into every hook call, hashed into the delegation's EIP-712 hash and
/// logged whole by the manager on every redemption, so terms that hold the batches make both redemptions cost in
/// proportion to the batches' size; 96 bytes cost the same whatever the batch. The signature still commits to every
/// byte of both batches, through their hashes.
/// The payment runs only while its redeemer says it is paying for the delegating account (the Runner's payment phase of
/// that account's own relay), so no call the Runner relays for anyone else can spend it. The calls run only in the
/// transaction that made the payment (a transient mark the payment's redemption sets), so a delegation whose calls
/// failed, or were never sent, can never run them later: the payment paid for that one attempt.
/// Its counts are kept per manager (`msg.sender`), as every enforcer's: a caller other than the manager writes only
/// its own.
contract PaymentFirstEnforcer {
    /// @notice ERC-7579's mode of a batch that reverts whole when one of its calls fails.
    bytes32 public constant BATCH_MODE = 0x0100000000000000000000000000000000000000000000000000000000000000;

    /// @notice A delegation's redemptions so far, by manager and delegation hash: 0, 1 (paid) or 2 (paid, calls run).
    mapping(address => mapping(bytes32 => uint256)) public redemptions;

    /// @notice The delegation (`keccak256(abi.encode(manager, delegationHash))`) whose payment was redeemed last in this
    /// transaction: its calls may follow. A relay redeems one delegation's payment, then its calls.
    bytes32 private transient _paidNow;

    error TermsNotThreeWords();
    error NotBatchMode(bytes32 mode);
    error DelegationExpired(uint256 deadline);
    /// @notice The batch redeemed is not the one this redemption must run (`expected`): the payment first, then the calls.
    error WrongBatch(bytes32 expected, bytes32 redeemed);
    error RedeemedTwice();
    /// @notice The calls' redemption is not in the transaction that made the delegation's payment.
    error NotPaidInThisTransaction();
    /// @notice The payment's redeemer is not in the payment phase of the delegating account's relay: it pays for `paying`.
    error NotPaymentPhase(address paying);

    /// @notice Checks the redemption about to run and counts it: the payment first, in its account's payment phase, then
    /// the calls in the same transaction, nothing after.
    function beforeHook(
        bytes calldata terms,
        bytes calldata,
        bytes32 mode,
        bytes calldata executionCalldata,
        bytes32 delegationHash,
        address delegator,
        address redeemer
    ) external {
        if (terms.length != 96) revert TermsNotThreeWords();
        if (mode != BATCH_MODE) revert NotBatchMode(mode);
        (bytes32 paymentHash, bytes32 callsHash, uint256 deadline) = abi.decode(terms, (bytes32, bytes32, uint256));
        if (block.timestamp > deadline) revert DelegationExpired(deadline);
        bytes32 redeemed = keccak256(executionCalldata);
        uint256 count = redemptions[msg.sender][delegationHash];
        bytes32 delegation = keccak256(abi.encode(msg.sender, delegationHash));
        if (count == 0) {
            if (redeemed != paymentHash) revert WrongBatch(paymentHash, redeemed);
            address paying = IPaymentPhase(redeemer).paying();
            if (paying != delegator) revert NotPaymentPhase(paying);
            _paidNow = delegation;
        } else if (count == 1) {
            if (redeemed != callsHash) revert WrongBatch(callsHash, redeemed);
            if (_paidNow != delegation) revert NotPaidInThisTransaction();
        } else {
            revert RedeemedTwice();
        }
        redemptions[msg.sender][delegationHash] = count + 1;
    }

    /// @notice Nothing to check before all of a redemption's delegations run.
    function beforeAllHook(bytes calldata, bytes calldata, bytes32, bytes calldata, bytes32, address, address) external pure {}

    /// @notice Nothing to check after a redemption.
    function afterHook(bytes calldata, bytes calldata, bytes32, bytes calldata, bytes32, address, address) external pure {}

    /// @notice Nothing to check after all of a redemption's delegations ran.
    function afterAllHook(bytes calldata, bytes calldata, bytes32, bytes calldata, bytes32, address, address) external pure {}
}
