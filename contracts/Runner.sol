// SPDX-License-Identifier: UNLICENSED
pragma solidity 0.8.37;

/// @notice The token functions the Runner calls: ERC-20's balance and transfer (`sweep`), EIP-3009's transfer in its
/// (v, r, s) form (every EIP-3009 token) and its `bytes` form (FiatToken v2.2: a wallet's ERC-1271 signature).
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

    function transferWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes memory signature
    ) external;
}

/// @notice A payee that can send part of a payment back: `PayeeVault`. It answers its own selector when it did.
interface IRefunder {
    function refund(address token, address to, uint256 amount) external returns (bytes4);
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
/// (`sweep`, `bruno sweep`). Only an operator (the runner's EOAs: `operator` and those the owner allowed) may relay,
/// and the Runner is never one, so a target reentering a relay fails `NotOperator`. A call's return data is never copied beyond `REASON_BYTES`, so a call cannot make
/// the settlement run out of gas by returning megabytes.
contract Runner {
    /// @notice A signed EIP-3009 `transferWithAuthorization` whose `to` is the payee.
    struct Authorization {
        address from;
        uint256 value;
        uint256 validAfter;
        uint256 validBefore;
        bytes32 nonce;
        /// @dev 65 bytes (r ‖ s ‖ v) from an account's key; a wallet's ERC-1271 signature otherwise; either wrapped by
        /// ERC-6492 (`abi.encode(factory, factoryCalldata, signature) ‖ 0x6492…6492`) for a wallet not deployed yet.
        bytes signature;
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

    /// @notice What the operator charges for a relay, signed into its transaction: the gas the transaction costs the
    /// runner, at the price it actually pays per gas, converted at the operator's rate for this send, plus a markup.
    /// The rest of the payment goes back to its payer in the same transaction, when the payee can refund (`IRefunder`).
    struct Charge {
        /// @dev gas the transaction is charged outside the Runner's code: 21,000, its calldata, its authorizations (net of
        /// their refund when the account exists); counted at most, never less
        uint256 baseGas;
        /// @dev EIP-7623: the least gas the transaction is charged (21,000 + 10 per calldata token)
        uint256 floorGas;
        /// @dev the L1 data fee, as the runner priced it (OP-stack), else 0
        uint256 l1FeeWei;
        /// @dev the payment token's base units per 10^18 wei, the operator's price for this send
        uint256 unitsPerEther;
        /// @dev added to the cost, in basis points (500 = 5 %)
        uint256 markupBps;
        /// @dev the most the refund may spend; 0 makes none (the payee keeps the whole payment)
        uint256 refundGas;
    }

    // A paid relay as the settlement logs it: `logged` is the event's first topic (the target, or the batch's account).
    struct Settled {
        address logged;
        address token;
        address payee;
        address payer;
        uint256 received;
        bool callSucceeded;
    }

    /// @notice The runner's first EOA (its first lane): a caller of the relay entry points, checked at no storage cost.
    address public immutable operator;

    /// @notice Who may change the further operators (`setOperator`): the deployment's owner, an EOA, never the Runner.
    address public immutable owner;

    /// @notice The runner's further EOAs (its other lanes), allowed to relay as `operator` is; set by the owner. A
    /// relay from one of them costs a storage read (2,100 gas cold), counted in its charge like all its gas.
    mapping(address => bool) public isOperator;

    /// @notice Payer code the owner allows, by its hash (EXTCODEHASH): a signed transfer's payer with code is taken
    /// only when its code is one of these. FiatToken checks such a payer's signature by ERC-1271, running the payer's
    /// own code inside the payment phase with all the gas left; only wallets whose answer nothing but their owner can
    /// change belong here (an EIP-7702 delegation to a known delegate, `0xef0100 ‖ delegate`; a known wallet). A payer
    /// that changes its own code after simulation is refused here, before its code runs.
    mapping(bytes32 => bool) public payerCodeAllowed;

    /// @notice Wallet factories the owner allows: an ERC-6492 signature from a wallet not deployed yet names one, and
    /// the Runner makes its call (which deploys the wallet) before the payment. Only factories whose call deploys the
    /// same listed code at the same address whoever calls it, and first or again, belong here (Coinbase Smart Wallet's).
    mapping(address => bool) public walletFactoryAllowed;

    /// @dev ERC-6492's suffix of a wrapped signature.
    bytes32 private constant ERC6492_SUFFIX = 0x6492649264926492649264926492649264926492649264926492649264926492;

    /// @notice Revert data kept of a failed call (its head: the error's selector and first words).
    uint256 public constant REASON_BYTES = 256;

    /// @notice Gas the Runner needs after the call returns (return data, balance read, settlement, event), on top of
    /// the stipend and the 1/64 a CALL keeps back, and of a refund's own gas and its 1/64. A transaction that cannot
    /// give the call its whole stipend and the refund its whole gas reverts with `GasShort` before the call: neither
    /// is ever silently less.
    uint256 public constant SETTLE_GAS = 25_000;

    /// @notice Gas the Runner spends after it measures what the relay used: the event, the return, the refund call's own
    /// cost (besides the gas the refund itself may use), and `REASON_WORD_GAS` per word of the call's revert data it logs
    /// and returns. Measured to count at most ≈120 gas more than the transaction is charged (test/runner-refund.test.ts).
    uint256 public constant SETTLE_TAIL_GAS = 9_700;

    /// @notice Gas `relayWithAuthorization` spends before its first statement beyond what `relayBatch` does, which its
    /// count cannot see: reading its arguments, a struct whose signature is `bytes` (≈130 measured, test/runner-refund).
    uint256 public constant SIGNED_TRANSFER_ENTRY_GAS = 200;
    uint256 public constant REASON_WORD_GAS = 272;

    /// @notice True only while the Runner makes a refund: a `PayeeVault` refunds nothing else, so no relayed call (run
    /// as the Runner) can take what the vault holds.
    bool private transient _settling;

    /// @notice The account whose payment batch the Runner is sending now; address(0) at any other time (the account's
    /// calls, the settlement). A payment batch that any sender could run can be run by a stranger first, or by a
    /// relayed call (run as the Runner): a payment can make its running depend on `paying()` being its own account
    /// (an ERC-4337 paymaster that validates only then, say) to run only in the Runner's own payment phase.
    address private transient _paying;

    /// @notice A relay paid. `received` is the payee's balance rise from the payment phase; `charged` what the relay
    /// cost, priced by its `Charge` (at most `received`); `refunded` what went back to the payer (`received` −
    /// `charged`, or 0 when the payee could not refund: then `charged` is `received`). `callSucceeded` says whether the
    /// call phase ran to its end; `reason` is the head of its revert data when it did not.
    event Relayed(
        address indexed target, address indexed payee, uint256 received, uint256 charged, uint256 refunded, bool callSucceeded, bytes reason
    );

    error NotOperator();
    error NotOwner();
    /// @notice The Runner itself may never relay: a relayed call runs as the Runner.
    error RunnerCannotOperate();
    /// @notice The signed transfer's payer has code the owner has not allowed (`payerCodeAllowed`): the token would run
    /// it (ERC-1271) inside the payment phase.
    error PayerHasCode(address payer);
    /// @notice An ERC-6492 signature's factory is not one the owner allowed (`walletFactoryAllowed`).
    error WalletFactoryNotAllowed(address factory);
    /// @notice An ERC-6492 signature's factory call reverted, or did not deploy the payer.
    error PayerNotDeployed(address payer);
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

    /// @notice The owner allowed (`allowed`) or stopped a further operator.
    event OperatorSet(address indexed operator, bool allowed);

    /// @notice The owner allowed (`allowed`) or stopped payers whose code hashes to `codehash`.
    event PayerCodeSet(bytes32 indexed codehash, bool allowed);

    /// @notice The owner allowed (`allowed`) or stopped a wallet factory.
    event WalletFactorySet(address indexed factory, bool allowed);

    constructor(address operator_, address owner_) {
        operator = operator_;
        owner = owner_;
    }

    /// @notice Allows `who` to relay as an operator, or stops it (`allowed` false). Owner only.
    function setOperator(address who, bool allowed) external {
        if (msg.sender != owner) revert NotOwner();
        if (who == address(this)) revert RunnerCannotOperate();
        isOperator[who] = allowed;
        emit OperatorSet(who, allowed);
    }

    /// @notice Allows signed-transfer payers whose code hashes to `codehash`, or stops them (`allowed` false). Owner only.
    function setPayerCode(bytes32 codehash, bool allowed) external {
        if (msg.sender != owner) revert NotOwner();
        payerCodeAllowed[codehash] = allowed;
        emit PayerCodeSet(codehash, allowed);
    }

    /// @notice Allows ERC-6492 signatures that deploy their wallet with `factory`, or stops them (`allowed` false). Owner only.
    function setWalletFactory(address factory, bool allowed) external {
        if (msg.sender != owner) revert NotOwner();
        walletFactoryAllowed[factory] = allowed;
        emit WalletFactorySet(factory, allowed);
    }

    /// @notice Payment phase: the signed EIP-3009 transfer of `token` from `authorization.from` to `payee`,
    /// which must raise the payee's balance by at least `amount`, else the transaction reverts (a refused
    /// authorization reverts with the token's own reason). Call phase: `target.call(data)` with exactly `callGas`.
    /// @dev The payer has no code, or code the owner allowed (`payerCodeAllowed`): FiatToken checks a payer with code
    /// by ERC-1271, which runs the payer's own code, with all the gas left, inside the payment phase (unknown code
    /// could burn it, or answer differently when simulated). An ERC-6492 signature of a payer with no code has its
    /// factory (one the owner allowed) deploy the payer first, whose code must then be allowed; the token checks the
    /// signature inside the wrapper (`_readyPayer`).
    /// Settlement: `charge` prices what the transaction cost; the rest goes back to the payer (`_settle`).
    /// @param target the contract to call; address(0) makes no call (the transfer alone is the relay).
    /// @return callSucceeded whether the call returned without reverting (true when there is no call).
    /// @return callGasUsed the gas the call phase spent.
    /// @return reason the head of the call's revert data when it failed.
    /// @return refundGasUsed the gas the refund took, 0 when none was made: a simulation reads it to set the refund's cap.
    function relayWithAuthorization(
        address target,
        bytes calldata data,
        uint256 callGas,
        address token,
        address payee,
        uint256 amount,
        Authorization calldata authorization,
        Charge calldata charge
    ) external returns (bool callSucceeded, uint256 callGasUsed, bytes memory reason, uint256 refundGasUsed) {
        uint256 startGas = gasleft() + SIGNED_TRANSFER_ENTRY_GAS;
        if (msg.sender != operator && !isOperator[msg.sender]) revert NotOperator();
        // Kept in memory, field by field: the stack holds no more.
        Settled memory relay;
        relay.logged = target;
        relay.token = token;
        relay.payee = payee;
        relay.payer = authorization.from;
        relay.received = _payByAuthorization(token, payee, amount, authorization);
        callSucceeded = true;
        if (target != address(0)) (callSucceeded, callGasUsed, reason) = _callWithStipend(target, data, callGas, charge.refundGas);
        else _requireGas(0, charge.refundGas);
        relay.callSucceeded = callSucceeded;
        refundGasUsed = _settle(relay, reason, charge, startGas);
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
    /// Settlement as `relayWithAuthorization`'s; the payer is the account.
    /// @param delegate the delegate both batches were signed for, e.g. Calibur.
    /// @return callSucceeded whether the account's batch of its own calls returned without reverting.
    /// @return callGasUsed the gas the call phase spent.
    /// @return reason the head of the call phase's revert data, when it reverted.
    /// @return refundGasUsed as `relayWithAuthorization`'s.
    function relayBatch(
        address account,
        address delegate,
        Batches calldata batches,
        uint256 callGas,
        address token,
        address payee,
        uint256 amount,
        Charge calldata charge
    ) external returns (bool callSucceeded, uint256 callGasUsed, bytes memory reason, uint256 refundGasUsed) {
        uint256 startGas = gasleft();
        if (msg.sender != operator && !isOperator[msg.sender]) revert NotOperator();
        if (account.codehash != keccak256(abi.encodePacked(hex"ef0100", delegate))) revert NotDelegated(account, delegate);
        Settled memory relay;
        relay.logged = account;
        relay.token = token;
        relay.payee = payee;
        relay.payer = account;
        _paying = account;
        relay.received = _payByBatch(batches.target, batches.payment, batches.paymentGas, token, payee, amount);
        _paying = address(0);
        (callSucceeded, callGasUsed, reason) = _callWithStipend(batches.target, batches.data, callGas, charge.refundGas);
        relay.callSucceeded = callSucceeded;
        refundGasUsed = _settle(relay, reason, charge, startGas);
    }

    /// @notice Whether the Runner is making a refund now (a `PayeeVault` refunds only then).
    function settling() external view returns (bool) {
        return _settling;
    }

    /// @notice The account whose payment batch the Runner is sending now, address(0) outside a payment phase.
    function paying() external view returns (address) {
        return _paying;
    }

    /// @notice Sends the Runner's whole balance of `token` to `to`: tokens sent here by mistake, which a relayed
    /// call to that token could otherwise move. Operators only.
    /// @dev A token that answers nothing (no bool) is taken at its word that it transferred, as ERC-20s before the
    /// standard's return value do; one that answers false, or reverts, is `SweepFailed`.
    /// @return amount what was sent (0 when the Runner held none: nothing is called).
    function sweep(address token, address to) external returns (uint256 amount) {
        if (msg.sender != operator && !isOperator[msg.sender]) revert NotOperator();
        amount = IPaymentToken(token).balanceOf(address(this));
        if (amount == 0) return 0;
        (bool ok, bytes memory answer) = token.call(abi.encodeCall(IPaymentToken.transfer, (to, amount)));
        if (!ok || (answer.length != 0 && (answer.length != 32 || abi.decode(answer, (uint256)) != 1))) revert SweepFailed(token);
        emit Swept(token, to, amount);
    }

    // What the relay cost the runner, in `token`, and the rest of what the payee received sent back to the payer by the
    // payee; then the `Relayed` event. Gas is counted from the entry point's first instruction (`startGas`) plus
    // `charge.baseGas`, plus what remains after this measure (the refund at its most, the event, the return); never
    // below the calldata floor; at the price the transaction pays per gas (`tx.gasprice`), plus the L1 fee; at
    // `charge.unitsPerEther`; plus the markup. Every division rounds up: the charge errs by at most a base unit, in the
    // runner's favour. The refund is the payee's `refund` with at most `charge.refundGas`: when it fails (the token
    // refuses, the payee is no refunder, the gas runs out) nothing is refunded and the payee keeps the payment — it
    // never reverts the payment or the transaction.
    function _settle(Settled memory relay, bytes memory reason, Charge calldata charge, uint256 startGas)
        private
        returns (uint256 refundGasUsed)
    {
        uint256 charged = relay.received;
        uint256 refunded;
        if (charge.refundGas != 0) {
            uint256 used = charge.baseGas + startGas - gasleft() + SETTLE_TAIL_GAS + charge.refundGas + REASON_WORD_GAS * ((reason.length + 31) / 32);
            if (used < charge.floorGas) used = charge.floorGas;
            uint256 cost = _ceilDiv((used * tx.gasprice + charge.l1FeeWei) * charge.unitsPerEther, 1 ether);
            uint256 priced = _ceilDiv(cost * (10_000 + charge.markupBps), 10_000);
            if (priced < relay.received) {
                bool ok;
                (ok, refundGasUsed) = _refund(relay.token, relay.payee, relay.payer, relay.received - priced, charge.refundGas);
                if (ok) {
                    charged = priced;
                    refunded = relay.received - priced;
                } else {
                    refundGasUsed = 0;
                }
            }
        }
        emit Relayed(relay.logged, relay.payee, relay.received, charged, refunded, relay.callSucceeded, reason);
    }

    // Has `payee` send `amount` of `token` to `payer` with at most `gasLimit`, the `settling` flag up; true only when the
    // payee answered its `refund` selector. `gasUsed` is what the call took, its own cost included: a cap that large
    // lets the same refund succeed (a simulation reads it to set the cap it signs).
    function _refund(address token, address payee, address payer, uint256 amount, uint256 gasLimit) private returns (bool, uint256 gasUsed) {
        bytes memory request = abi.encodeCall(IRefunder.refund, (token, payer, amount));
        bool ok;
        bytes4 answer;
        _settling = true;
        assembly ("memory-safe") {
            // Warms the payee's account first, so that the gas measured is the refund's and a warm call's (the cold
            // access, paid here instead, is no part of the cap the refund needs).
            mstore(0, balance(payee))
            gasUsed := gas()
            ok := call(gasLimit, payee, 0, add(request, 0x20), mload(request), 0, 0)
            gasUsed := sub(gasUsed, gas())
            if and(ok, eq(returndatasize(), 0x20)) {
                returndatacopy(0, 0, 0x20)
                answer := mload(0)
            }
        }
        _settling = false;
        return (ok && answer == IRefunder.refund.selector, gasUsed);
    }

    function _ceilDiv(uint256 a, uint256 b) private pure returns (uint256) {
        return a == 0 ? 0 : (a - 1) / b + 1;
    }

    // The payer as the token will check it, and the signature the token checks: a payer with code must have code the
    // owner allowed; an ERC-6492-wrapped signature of a payer with no code deploys it first, by a factory the owner allowed.
    function _readyPayer(address payer, bytes calldata signature) private returns (bytes memory) {
        uint256 length = signature.length;
        if (length < 32 || bytes32(signature[length - 32:]) != ERC6492_SUFFIX) {
            if (payer.code.length != 0 && !payerCodeAllowed[payer.codehash]) revert PayerHasCode(payer);
            return signature;
        }
        (address factory, bytes memory factoryCalldata, bytes memory wrapped) = abi.decode(signature[:length - 32], (address, bytes, bytes));
        if (payer.code.length == 0) {
            if (!walletFactoryAllowed[factory]) revert WalletFactoryNotAllowed(factory);
            (bool deployed,) = factory.call(factoryCalldata);
            if (!deployed || payer.code.length == 0) revert PayerNotDeployed(payer);
        }
        if (!payerCodeAllowed[payer.codehash]) revert PayerHasCode(payer);
        return wrapped;
    }

    // The signed transfer to `payee`, its payer made ready first (`_readyPayer`); reverts unless it paid `payee` `amount`
    // (a refused one with the token's reason). A 65-byte signature takes the (v, r, s) form every EIP-3009 token has; any other, a wallet's, the `bytes` form.
    function _payByAuthorization(address token, address payee, uint256 amount, Authorization calldata authorization)
        private
        returns (uint256 received)
    {
        bytes memory signature = _readyPayer(authorization.from, authorization.signature);
        uint256 balanceBefore = IPaymentToken(token).balanceOf(payee);
        if (signature.length == 65) {
            bytes32 r;
            bytes32 s;
            uint8 v;
            assembly ("memory-safe") {
                r := mload(add(signature, 0x20))
                s := mload(add(signature, 0x40))
                v := byte(0, mload(add(signature, 0x60)))
            }
            IPaymentToken(token).transferWithAuthorization(
                authorization.from, payee, authorization.value, authorization.validAfter, authorization.validBefore, authorization.nonce, v, r, s
            );
        } else {
            IPaymentToken(token).transferWithAuthorization(
                authorization.from, payee, authorization.value, authorization.validAfter, authorization.validBefore, authorization.nonce, signature
            );
        }
        received = _received(token, payee, balanceBefore, amount);
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

    // Calls `target` with exactly `callGas` (value 0): a transaction that cannot give the whole stipend, and then the
    // refund its whole gas, reverts.
    function _callWithStipend(address target, bytes calldata data, uint256 callGas, uint256 refundGas)
        private
        returns (bool success, uint256 gasUsed, bytes memory reason)
    {
        _requireGas(callGas, refundGas);
        return _call(target, data, callGas);
    }

    // Reverts `GasShort` unless what is left gives a call `callGas` whole, then the settlement, then a refund `refundGas`
    // whole: a CALL forwards at most 63/64 of what is left.
    function _requireGas(uint256 callGas, uint256 refundGas) private view {
        uint256 required = callGas + callGas / 63 + SETTLE_GAS + refundGas + refundGas / 63;
        if (gasleft() < required) revert GasShort(gasleft(), required);
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
